/**
 * No-JavaScript posts: `application/x-www-form-urlencoded` bodies with the same fields and rules
 * as JSON (a repeated name, a checkbox group, as the list of its values), plus the redirect
 * targets a form may name.
 *
 * @module
 */
import { type PageOrigin, type RedirectTargets, redirectTargets } from "./redirect.ts";
import { type Invalid, parseSubmission, type SubmissionResult } from "./submission.ts";
import { CONTACT_SOURCES, HONEYPOTS, PROOF_FIELDS } from "./fields.ts";

/** The fields that carry a challenge's proof (lib/challenge/altcha.ts); never part of the record. */

/** Fields read once, the first value of a repeated name counting; every other name may repeat. */
const SINGLE_FIELDS: ReadonlySet<string> = new Set([
  "name",
  "message",
  ...CONTACT_SOURCES,
  ...HONEYPOTS,
]);

/** A decoded form post: its submission outcome and where to send the visitor afterwards. */
export interface FormPost {
  readonly result: SubmissionResult;
  readonly targets: RedirectTargets;
  /** The proof fields the post carried, by name. */
  readonly proofs: Readonly<Partial<Record<typeof PROOF_FIELDS[number], string>>>;
}

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Decodes `name=value&…` strictly, every pair in order: invalid UTF-8 or a malformed `%` escape
 * is `invalid_encoding`, never silently replaced.
 */
export function decodeFormPairs(bytes: Uint8Array): [string, string][] | Invalid {
  const pairs: [string, string][] = [];
  try {
    for (const pair of decoder.decode(bytes).split("&")) {
      if (pair === "") continue;
      const equals = pair.indexOf("=");
      const [name, value] = equals < 0
        ? [pair, ""]
        : [pair.slice(0, equals), pair.slice(equals + 1)];
      pairs.push([
        decodeURIComponent(name.replaceAll("+", " ")),
        decodeURIComponent(value.replaceAll("+", " ")),
      ]);
    }
  } catch {
    // TypeError from the decoder (bad UTF-8), URIError from a bad or non-UTF-8 escape.
    return { kind: "invalid", code: "invalid_encoding" };
  }
  return pairs;
}

/** {@linkcode decodeFormPairs} as a map: the first value of a repeated name wins. */
export function decodeForm(bytes: Uint8Array): Map<string, string> | Invalid {
  const pairs = decodeFormPairs(bytes);
  if (!Array.isArray(pairs)) return pairs;
  const fields = new Map<string, string>();
  for (const [name, value] of pairs) if (!fields.has(name)) fields.set(name, value);
  return fields;
}

/**
 * A form's pairs as the object the JSON rules read: the first value of `name`, `message`, the
 * contact's sources and the honeypots; every other repeated name (a checkbox group) as the list
 * of its values, in order.
 */
export function formValue(pairs: readonly (readonly [string, string])[]): Record<string, unknown> {
  const values = new Map<string, string | string[]>();
  for (const [name, value] of pairs) {
    const seen = values.get(name);
    if (seen === undefined) values.set(name, value);
    else if (SINGLE_FIELDS.has(name)) continue;
    else if (Array.isArray(seen)) seen.push(value);
    else values.set(name, [seen, value]);
  }
  // fromEntries defines own properties, so a field named "__proto__" is only a key.
  return Object.fromEntries(values);
}

/**
 * Applies the JSON rules (lib/form/submission.ts) to a form body, and reads `_redirect` (or
 * Formspree's `_next`) for after success, `_redirect_error` for after a refusal, and the
 * {@linkcode PROOF_FIELDS}.
 */
export function parseFormPost(
  bytes: Uint8Array,
  allowedOrigins: readonly string[],
  page?: PageOrigin,
): FormPost {
  const pairs = decodeFormPairs(bytes);
  if (!Array.isArray(pairs)) return { result: pairs, targets: {}, proofs: {} };
  return formPost(pairs, allowedOrigins, page);
}

/**
 * {@linkcode parseFormPost} on pairs already decoded (a urlencoded or multipart body); `page`
 * (lib/form/redirect.ts `pageOrigin`) resolves relative targets.
 */
export function formPost(
  pairs: readonly (readonly [string, string])[],
  allowedOrigins: readonly string[],
  page?: PageOrigin,
): FormPost {
  const value = formValue(pairs);
  const first = (name: string): string | undefined => {
    const field = Object.hasOwn(value, name) ? value[name] : undefined;
    return Array.isArray(field) ? field[0] : field as string | undefined;
  };
  const proofs: Partial<Record<typeof PROOF_FIELDS[number], string>> = {};
  for (const name of PROOF_FIELDS) {
    const field = first(name);
    if (field !== undefined) proofs[name] = field;
  }
  const named = {
    _redirect: first("_redirect"),
    _next: first("_next"),
    _redirect_error: first("_redirect_error"),
  };
  return {
    result: parseSubmission(value),
    targets: redirectTargets(named, allowedOrigins, page),
    proofs,
  };
}
