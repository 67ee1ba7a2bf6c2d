/**
 * Building answers: JSON (each distinct one built once, then cloned), error answers from the
 * vocabulary in lib/http/errors.ts, and plain text for form posts.
 *
 * @module
 */
import { CONTACT_SOURCES } from "../form/fields.ts";
import { type ErrorCode, ERRORS } from "./errors.ts";

/** Options of {@linkcode errorResponse}. */
export interface ErrorResponseOptions {
  /** Overrides the default sentence (e.g. names the field's limit). */
  readonly message?: string;
  /** The offending field of a validation error. */
  readonly field?: string;
  /** Extra headers such as `Retry-After` or `Allow`. */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * Also in Formspree's shape (`POST /api/f/<id>`): `errors: [{message, code, field}]` beside
   * contactd's own fields, the code Formspree's name where `ERRORS` gives one.
   */
  readonly formspree?: boolean;
  /**
   * The sender's case page (`case_url`) of a submission stored for later delivery (a `stored`
   * code): its answer names it as a success would. Never kept in the answer cache.
   */
  readonly caseUrl?: string | undefined;
}

// JSON answers carry one header of their own: Deno sends a response whose only header is
// `Content-Type` through its fastest path, and every further header costs about a microsecond
// per answer, a sixth of a refusal's budget. Answers to POST are never stored by caches (RFC
// 9111 §9.3.3), so `Cache-Control` is for GET answers only; `X-Content-Type-Options` is the
// reverse proxy's (examples/nginx.conf adds it to every answer, nginx's own included).
const JSON_HEADERS = { "content-type": "application/json" } as const;

/** `Cache-Control: no-store`, for answers to GET (health), which a cache could keep. */
export const NO_STORE: Readonly<Record<string, string>> = Object.freeze({
  "cache-control": "no-store",
});

/** No extra headers; answers built with it are shared rather than rebuilt. */
export const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

// Answers repeat (the same few bodies and headers), and building a Response's headers costs
// far more than cloning one: each distinct answer is built once and cloned. Clones copy the
// header list, so a caller may still change its copy's headers.
const templates = new Map<string, Response>();
const MAX_TEMPLATES = 1024;

/** A JSON answer: `Content-Type: application/json` plus `headers`. */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = NO_HEADERS,
): Response {
  return jsonTextResponse(status, JSON.stringify(body), headers);
}

/** {@linkcode jsonResponse} for a body serialised once, ahead of time (no stringify per answer). */
export function jsonTextResponse(
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = NO_HEADERS,
): Response {
  // A 200 with only Content-Type is Deno's static fast path: cheaper built than cloned.
  if (status === 200 && headers === NO_HEADERS) {
    return new Response(text, { headers: JSON_HEADERS });
  }
  // No raw newline can occur in JSON text, so the key is unambiguous.
  return cached(`${status} ${text}`, status, () => text, headers);
}

/** How many distinct answers are kept to be cloned (at most 1024): for the tests. */
export function cachedAnswerCount(): number {
  return templates.size;
}

/**
 * The fields whose name an error may carry that are contactd's own: an error naming any other
 * field names one the sender chose (an extra field), and is not kept (a sender could fill the
 * cache with names and push the common answers out).
 */
const OWN_FIELDS: ReadonlySet<string> = new Set(["name", "message", ...CONTACT_SOURCES]);

/** The answer under `key` (plus `headers`), built from `text()` the first time. */
function cached(
  key: string,
  status: number,
  text: () => string,
  headers: Readonly<Record<string, string>>,
): Response {
  // No raw newline can occur in a header either.
  for (const name in headers) key += `\n${name}: ${headers[name]}`;
  let template = templates.get(key);
  if (template === undefined) {
    template = new Response(text(), {
      status,
      headers: headers === NO_HEADERS ? JSON_HEADERS : { ...JSON_HEADERS, ...headers },
    });
    if (templates.size >= MAX_TEMPLATES) return template;
    templates.set(key, template);
  }
  return template.clone();
}

/**
 * A plain-text answer (`text/plain; charset=utf-8`): a page that a browser without JavaScript
 * shows after a form post, so it is not kept (no-store) and never sniffed as HTML (nosniff).
 */
export function textResponse(
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): Response {
  return new Response(text, {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      ...headers,
    },
  });
}

/**
 * `{"ok":false,"error":code,"message":…}` plus `field` when given, and `"stored":true` for the
 * codes that mean the message was saved; with the code's status. With `formspree`, also
 * `"errors":[{"message","code","field"}]`, the list `@formspree/core` reads.
 */
export function errorResponse(code: ErrorCode, options: ErrorResponseOptions = {}): Response {
  const { status, stored } = ERRORS[code];
  const { field, message = ERRORS[code].message, headers = NO_HEADERS } = options;
  const formspree = options.formspree === true;
  // Refusals repeat: the key names what the body holds, so it is serialised only once. Codes,
  // field names and sentences are this file's and lib/form/submission.ts's: none holds a newline.
  const key = `error${formspree ? "+formspree" : ""} ${code}\n${
    field === undefined ? "-" : `=${field}`
  }\n${message}`;
  const named = field === undefined ? {} : { field };
  const body = () =>
    JSON.stringify({
      ok: false,
      error: code,
      ...named,
      message,
      ...(stored ? { stored } : {}),
      ...(stored && options.caseUrl !== undefined ? { case_url: options.caseUrl } : {}),
      ...(formspree
        ? { errors: [{ message, code: ERRORS[code].formspree ?? code, ...named }] }
        : {}),
    });
  // A name the sender chose (and its sentence), or a case's path, is built each time, never kept.
  if ((field !== undefined && !OWN_FIELDS.has(field)) || options.caseUrl !== undefined) {
    return new Response(body(), {
      status,
      headers: headers === NO_HEADERS ? JSON_HEADERS : { ...JSON_HEADERS, ...headers },
    });
  }
  return cached(key, status, body, headers);
}
