/**
 * How `POST /api/contact` answers: JSON for scripts, and for no-JavaScript form posts a
 * `303 See Other` to the form's page or a plain-text sentence.
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

/** The two kinds of answer the contact pipeline gives. */
export interface Answers {
  /** Accepted (also the honeypot's answer, which must look the same). */
  success(): Response;
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
    success: () => jsonTextResponse(200, OK, headers),
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
 * Answers to a form post: `303` to the matching target when the form named one, else plain
 * text with the real status. `headers` are added to each.
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
  return {
    success: () =>
      targets.success === undefined
        ? textResponse(200, `${SUCCESS_TEXT}\n`, headers)
        : seeOther(targets.success),
    error: (code, options = {}) =>
      targets.error === undefined
        ? textResponse(
          ERRORS[code].status,
          `${options.message ?? ERRORS[code].message}\n`,
          { ...headers, ...options.headers },
        )
        : seeOther(withErrorCode(targets.error, code)),
  };
}
