/**
 * The one error vocabulary of the API: each code has one status and one default sentence.
 *
 * @module
 */

/** Every error code an answer can carry. */
export type ErrorCode =
  | "rate_limited"
  | "payload_too_large"
  | "unsupported_media_type"
  | "invalid_json"
  | "invalid_encoding"
  | "invalid_body"
  | "field_type"
  | "field_too_long"
  | "field_required"
  | "not_found"
  | "method_not_allowed"
  | "origin_not_allowed"
  | "request_timeout"
  | "delivery_failed"
  | "not_configured"
  | "internal";

/** Status and default human sentence of each code, in one table. */
export const ERRORS: Readonly<Record<ErrorCode, { status: number; message: string }>> = {
  rate_limited: { status: 429, message: "Too many messages from your address; try again later." },
  payload_too_large: { status: 413, message: "The request body is larger than 16384 bytes." },
  unsupported_media_type: {
    status: 415,
    message: "Send JSON (application/json) or a form (application/x-www-form-urlencoded).",
  },
  invalid_json: { status: 400, message: "The request body is not valid JSON." },
  invalid_encoding: { status: 400, message: "The request body is not valid UTF-8." },
  invalid_body: { status: 400, message: "The request body must be a JSON object." },
  field_type: { status: 400, message: "A field has the wrong type." },
  field_too_long: { status: 400, message: "A field is too long." },
  field_required: { status: 400, message: "A required field is empty." },
  not_found: { status: 404, message: "There is nothing at this address." },
  method_not_allowed: { status: 405, message: "This method is not allowed here." },
  origin_not_allowed: { status: 403, message: "This site may not send messages here." },
  request_timeout: { status: 408, message: "The request body took too long to arrive." },
  delivery_failed: {
    status: 502,
    message: "Your message was saved but could not be delivered right now.",
  },
  not_configured: {
    status: 503,
    message: "Your message was saved but the messenger is not configured.",
  },
  internal: { status: 500, message: "Something went wrong; your message was not accepted." },
};

/** Options of {@linkcode errorResponse}. */
export interface ErrorResponseOptions {
  /** Overrides the default sentence (e.g. names the field's limit). */
  readonly message?: string;
  /** The offending field of a validation error. */
  readonly field?: string;
  /** Extra headers such as `Retry-After` or `Allow`. */
  readonly headers?: Readonly<Record<string, string>>;
}

const COMMON_HEADERS = {
  "content-type": "application/json",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
} as const;

const NONE: Readonly<Record<string, string>> = Object.freeze({});

// Answers repeat (the same few bodies and headers), and building a Response's headers costs
// about twenty times more than cloning one: each distinct answer is built once and cloned.
// Clones copy the header list, so a caller may still change its copy's headers.
const templates = new Map<string, Response>();
const MAX_TEMPLATES = 1024;

/** A JSON answer with the headers every answer carries. */
export function jsonResponse(
  status: number,
  body: unknown,
  headers: Readonly<Record<string, string>> = NONE,
): Response {
  const text = JSON.stringify(body);
  // No raw newline can occur in JSON text or in a header, so the key is unambiguous.
  let key = `${status} ${text}`;
  for (const name in headers) key += `\n${name}: ${headers[name]}`;
  let template = templates.get(key);
  if (template === undefined) {
    template = new Response(text, {
      status,
      headers: headers === NONE ? COMMON_HEADERS : { ...COMMON_HEADERS, ...headers },
    });
    if (templates.size >= MAX_TEMPLATES) return template;
    templates.set(key, template);
  }
  return template.clone();
}

/** A plain-text answer (`text/plain; charset=utf-8`) with the headers every answer carries. */
export function textResponse(
  status: number,
  text: string,
  headers: Readonly<Record<string, string>> = {},
): Response {
  return new Response(text, {
    status,
    headers: { ...COMMON_HEADERS, "content-type": "text/plain; charset=utf-8", ...headers },
  });
}

/** `{"ok":false,"error":code,"message":…}` plus `field` when given, with the code's status. */
export function errorResponse(code: ErrorCode, options: ErrorResponseOptions = {}): Response {
  const { status, message } = ERRORS[code];
  const body = options.field === undefined
    ? { ok: false, error: code, message: options.message ?? message }
    : { ok: false, error: code, field: options.field, message: options.message ?? message };
  return jsonResponse(status, body, options.headers);
}
