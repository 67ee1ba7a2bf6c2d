/**
 * How `POST /api/contact` answers: JSON for scripts (and for a form body that asks for JSON with
 * `Accept`), JSON in Formspree's shape too on `POST /api/f/<id>`, and for no-JavaScript form
 * posts a `303 See Other` to the form's page or a plain-text sentence.
 *
 * @module
 */
import { type ErrorCode, ERRORS } from "./errors.ts";
import {
  errorResponse,
  type ErrorResponseOptions,
  jsonTextResponse,
  NO_HEADERS,
  textResponse,
} from "./responses.ts";
import { type RedirectTargets, withErrorCode } from "../form/redirect.ts";

/**
 * The three styles of answer: `json` (contactd's JSON), `formspree` (the same plus the shape
 * `@formspree/core` reads, on `POST /api/f/<id>`), `page` (a `303` or plain text, for a browser
 * that posted a form itself).
 */
export type AnswerStyle = "json" | "formspree" | "page";

/**
 * The one rule choosing the style, by the body's kind and the `Accept` header:
 *
 * | body | `Accept` names `application/json` | `/api/contact…` | `/api/f/<id>` |
 * | --- | --- | --- | --- |
 * | JSON | either | `json` | `formspree` |
 * | form (urlencoded, multipart) | no | `page` | `page` |
 * | form (urlencoded, multipart) | yes | `json` | `formspree` |
 *
 * A form body asking for JSON is a script posting `FormData` (Formspree's, Basin's, Getform's
 * documented fetch): it reads `response.json()` and must never meet a redirect or plain text.
 */
export function answerStyle(
  form: boolean,
  accept: string | null,
  formspree: boolean | undefined,
): AnswerStyle {
  if (form && !wantsJson(accept)) return "page";
  return formspree === true ? "formspree" : "json";
}

/**
 * True when an `Accept` header lists `application/json` (any case, parameters allowed) with a
 * weight other than `q=0`. A wildcard alone is not asking for JSON: browsers send it (with
 * `text/html`) when they post a form themselves.
 */
export function wantsJson(accept: string | null): boolean {
  if (accept === null) return false;
  for (const range of accept.split(",")) {
    const [type = "", ...parameters] = range.split(";");
    if (type.trim().toLowerCase() !== "application/json") continue;
    const weight = parameters.find((parameter) => /^\s*q\s*=/i.test(parameter));
    if (weight === undefined || Number(weight.split("=")[1]) !== 0) return true;
  }
  return false;
}

/** The answers of `style`, with `headers` (CORS) on each; `targets` are a form's redirects. */
export function answersOf(
  style: AnswerStyle,
  headers: Readonly<Record<string, string>> = NO_HEADERS,
  targets: RedirectTargets = {},
): Answers {
  if (style === "page") return formAnswers(headers, targets);
  if (style === "formspree") return formspreeAnswers(headers, targets.success ?? "");
  return jsonAnswers(headers);
}

/** The two kinds of answer the contact pipeline gives. */
export interface Answers {
  /**
   * Accepted (also the honeypot's answer, which must look the same); `caseUrl` is the path of
   * the sender's case page (lib/http/case_route.ts), when one was opened.
   */
  success(caseUrl?: string): Response;
  /** Refused or failed, with the code's status. */
  error(code: ErrorCode, options?: ErrorResponseOptions): Response;
}

/** The sentence of a plain-text success. */
const SUCCESS_TEXT = "Thank you. Your message was sent.";

/** JSON answers; `headers` (e.g. CORS) are added to each. */
export function jsonAnswers(headers: Readonly<Record<string, string>> = NO_HEADERS): Answers {
  return headers === NO_HEADERS ? PLAIN_JSON : jsonAnswersWith(headers);
}

const OK = JSON.stringify({ ok: true });

function jsonAnswersWith(headers: Readonly<Record<string, string>>): Answers {
  return {
    // A case's path is unique to its answer: built each time, never kept in the answer cache.
    success: (caseUrl) =>
      caseUrl === undefined
        ? jsonTextResponse(200, OK, headers)
        : new Response(JSON.stringify({ ok: true, case_url: caseUrl }), {
          headers: { "content-type": "application/json", ...headers },
        }),
    error: (code, options = {}) =>
      errorResponse(
        code,
        // Without headers of its own, an answer keeps the shared (cheapest) header set.
        headers === NO_HEADERS ? options : {
          ...options,
          headers: { ...headers, ...options.headers },
        },
      ),
  };
}

// Without CORS, every request shares one set of JSON answers.
const PLAIN_JSON = jsonAnswersWith(NO_HEADERS);

/**
 * Formspree's shapes beside contactd's: success `{"ok":true,"next":…}` (`next`: the form's
 * `_next`/`_redirect` target, else empty; `@formspree/core` takes a string `next` as success),
 * a refusal with `errors: [{message, code, field}]` as well (lib/http/responses.ts).
 */
function formspreeAnswers(headers: Readonly<Record<string, string>>, next: string): Answers {
  return {
    // Not from the answer cache: `next` is whatever target the form named.
    success: (caseUrl) =>
      new Response(JSON.stringify({ ok: true, next, ...caseField(caseUrl) }), {
        headers: { "content-type": "application/json", ...headers },
      }),
    error: (code, options = {}) =>
      errorResponse(code, {
        ...options,
        formspree: true,
        ...(headers === NO_HEADERS ? {} : { headers: { ...headers, ...options.headers } }),
      }),
  };
}

/** The plain-text success's line naming the case page, when a case was opened. */
function caseLine(caseUrl: string | undefined): string {
  return caseUrl === undefined
    ? ""
    : `Keep this address to read the reply and write back: ${caseUrl}\n`;
}

/** `case_url` in a JSON success, when a case was opened. */
function caseField(caseUrl: string | undefined): { case_url?: string } {
  return caseUrl === undefined ? {} : { case_url: caseUrl };
}

/**
 * Where a browser goes after a form post that opened a case: the form's success target with
 * the case's path in its fragment (`#case=/api/case/<token>`: a fragment is never sent to a
 * server nor in a `Referer`; `&case=…` after a fragment of its own), or, without a target,
 * the case page itself, which says the message was sent (`?sent=1`).
 */
export function caseTarget(success: string | undefined, caseUrl: string): string {
  if (success === undefined) return `${caseUrl}?sent=1`;
  return `${success}${success.includes("#") ? "&" : "#"}case=${caseUrl}`;
}

/**
 * Answers to a form post: `303` to the matching target when the form named one, else plain
 * text with the real status. `headers` are added to each. A success that opened a case goes
 * where {@linkcode caseTarget} says.
 */
export function formAnswers(
  headers: Readonly<Record<string, string>> = {},
  targets: RedirectTargets = {},
): Answers {
  const seeOther = (location: string) =>
    new Response(null, {
      status: 303,
      headers: { "cache-control": "no-store", ...headers, location },
    });
  // A target the form named that could not be used is told on the page, for the site's owner.
  const note = targets.unresolved === undefined ? "" : `\n${targets.unresolved}\n`;
  return {
    // A target that could not be used keeps the plain text, so its note reaches the site's owner.
    success: (caseUrl) =>
      caseUrl !== undefined && targets.unresolved === undefined
        ? seeOther(caseTarget(targets.success, caseUrl))
        : targets.success === undefined
        ? textResponse(200, `${SUCCESS_TEXT}\n${note}${caseLine(caseUrl)}`, headers)
        : seeOther(targets.success),
    error: (code, options = {}) =>
      targets.error === undefined
        ? textResponse(
          ERRORS[code].status,
          `${options.message ?? ERRORS[code].message}\n${note}${caseLine(options.caseUrl)}`,
          { ...headers, ...options.headers },
        )
        : seeOther(
          options.caseUrl === undefined
            ? withErrorCode(targets.error, code)
            : caseTarget(withErrorCode(targets.error, code), options.caseUrl),
        ),
  };
}
