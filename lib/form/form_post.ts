/**
 * No-JavaScript posts: `application/x-www-form-urlencoded` bodies with the same fields and rules
 * as JSON, plus the redirect targets a form may name.
 *
 * @module
 */
import { parseRedirectTarget, type RedirectTargets } from "./redirect.ts";
import { type Invalid, parseSubmission, type SubmissionResult } from "./submission.ts";

/** The fields that carry a challenge's proof (lib/challenge/altcha.ts); never part of the record. */
export const PROOF_FIELDS = ["altcha", "cf-turnstile-response"] as const;

/** A decoded form post: its submission outcome and where to send the visitor afterwards. */
export interface FormPost {
  readonly result: SubmissionResult;
  readonly targets: RedirectTargets;
  /** The proof fields the post carried, by name. */
  readonly proofs: Readonly<Partial<Record<typeof PROOF_FIELDS[number], string>>>;
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Decodes `name=value&…` strictly: invalid UTF-8 or a malformed `%` escape is
 * `invalid_encoding`, never silently replaced. The first value of a repeated name wins.
 */
export function decodeForm(bytes: Uint8Array): Map<string, string> | Invalid {
  const fields = new Map<string, string>();
  try {
    for (const pair of decoder.decode(bytes).split("&")) {
      if (pair === "") continue;
      const equals = pair.indexOf("=");
      const [name, value] = equals < 0
        ? [pair, ""]
        : [pair.slice(0, equals), pair.slice(equals + 1)];
      const key = decodeURIComponent(name.replaceAll("+", " "));
      if (!fields.has(key)) fields.set(key, decodeURIComponent(value.replaceAll("+", " ")));
    }
  } catch {
    // TypeError from the decoder (bad UTF-8), URIError from a bad or non-UTF-8 escape.
    return { kind: "invalid", code: "invalid_encoding" };
  }
  return fields;
}

/**
 * Applies the JSON rules (honeypot `website`, then `name`, `contact`, `message`) to a form
 * body, and reads `_redirect` (after success), `_redirect_error` (after a refusal) and the
 * {@linkcode PROOF_FIELDS}.
 */
export function parseFormPost(bytes: Uint8Array, allowedOrigins: readonly string[]): FormPost {
  const fields = decodeForm(bytes);
  if (!(fields instanceof Map)) return { result: fields, targets: {}, proofs: {} };
  const value: Record<string, string> = {};
  for (const name of ["name", "contact", "message", "website"]) {
    const field = fields.get(name);
    if (field !== undefined) value[name] = field;
  }
  const proofs: Partial<Record<typeof PROOF_FIELDS[number], string>> = {};
  for (const name of PROOF_FIELDS) {
    const field = fields.get(name);
    if (field !== undefined) proofs[name] = field;
  }
  const success = parseRedirectTarget(fields.get("_redirect"), allowedOrigins);
  const error = parseRedirectTarget(fields.get("_redirect_error"), allowedOrigins);
  return {
    result: parseSubmission(value),
    targets: {
      ...(success === undefined ? {} : { success }),
      ...(error === undefined ? {} : { error }),
    },
    proofs,
  };
}
