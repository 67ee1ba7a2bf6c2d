/**
 * The fields a form sends beyond `name`, `contact` and `message`: where the contact comes from,
 * which fields are contactd's own, and the bounds and cleaning of every other field kept.
 *
 * @module
 */
import { cleanSingleLine, codePointLength } from "./clean.ts";

/** Where the contact is taken from, first non-empty wins (Formspree-style forms send `email`). */
export const CONTACT_SOURCES = ["contact", "email", "_replyto"] as const;

/** The field the contact came from. */
export type ContactSource = typeof CONTACT_SOURCES[number];

/**
 * The honeypots: any non-blank value is a bot, answered a silent `200`. `website` is contactd's,
 * `_gotcha` Formspree's (and Getform's), `bot-field` the name Netlify's docs give with
 * `netlify-honeypot` (whose attribute, in the page, the server never sees).
 */
export const HONEYPOTS = ["website", "_gotcha", "bot-field"] as const;

/**
 * Control fields of other services whose names do not start with `_`: never shown or stored.
 * Netlify's hidden `form-name` names the Netlify form; it does not choose a contactd form (the
 * path does, with that form's origins and chat).
 */
export const SERVICE_FIELDS = ["form-name"] as const;

/** The fields that carry a challenge's proof (lib/challenge/altcha.ts); never part of the record. */
export const PROOF_FIELDS = ["altcha", "cf-turnstile-response"] as const;

/** Bounds of the extra fields. */
export const FIELD_LIMITS = {
  /** At most this many extra fields (non-empty ones) per submission. */
  count: 20,
  /** A field name's length, in characters. */
  name: 40,
  /** A field value's length in Unicode code points, a repeated field's values joined. */
  value: 1000,
} as const;

/**
 * The safe set of field names: an ASCII letter, then ASCII letters, digits, space, `-`, `_`, `.`,
 * `[` and `]` (checkbox groups such as `topics[]`). A name starting with `_` is a control field.
 */
export const FIELD_NAME = /^[A-Za-z][A-Za-z0-9 ._\-\[\]]*$/;

/** What joins the values of a repeated field (a checkbox group). */
export const JOINER = ", ";

/** Why an extra field was refused. */
export interface FieldProblem {
  readonly code: "field_name" | "field_type" | "field_too_long" | "too_many_fields";
  /** The field, as it can be shown: cleaned, at most {@linkcode FIELD_LIMITS}`.name` characters. */
  readonly field: string;
  readonly message: string;
}

/** The extra fields kept, in the order sent, or why one was refused. */
export type ExtraFields =
  | { readonly kind: "fields"; readonly fields: Readonly<Record<string, string>> }
  | { readonly kind: "problem"; readonly problem: FieldProblem };

/**
 * The extra fields of a submission, in the order sent, from its own `[name, value]` entries.
 *
 * Skipped: the names in `taken` (lower-case: the spec fields, the honeypots, the challenge's
 * proof, the contact's source), compared case-insensitively, every name starting with `_` (control fields of form services: `_next`,
 * `_subject`, `_cc`…), absent or null values and values that are empty once cleaned. A value is a
 * string, a number or a boolean, or a list of them and nulls (a checkbox group, joined with
 * {@linkcode JOINER}); values are cleaned as `name` is (single line, no control or bidi
 * characters); a name is taken as sent, and one that cleaning would change or outside
 * {@linkcode FIELD_NAME} is refused. Over a bound is a problem naming the field, never a silent cut.
 */
export function extraFields(
  entries: Iterable<readonly [string, unknown]>,
  taken: ReadonlySet<string>,
): ExtraFields {
  const kept = new Map<string, string[]>();
  for (const [name, value] of entries) {
    if (taken.has(name.toLowerCase()) || name.startsWith("_")) continue;
    if (value === null || value === undefined) continue;
    // The name as sent must already be safe: one cleaning would change (a space, a tab, NUL, a
    // bidi control) could pass for a spec field or a honeypot ("name ", "website\t") once shown.
    if (
      name.length > FIELD_LIMITS.name || !FIELD_NAME.test(name) || cleanSingleLine(name) !== name
    ) {
      return _problem(
        "field_name",
        cleanSingleLine(name, true),
        `A field name must be 1 to ${FIELD_LIMITS.name} characters: an ASCII letter, then ` +
          "letters, digits, space, - _ . [ ], not ending in a space.",
      );
    }
    const values = Array.isArray(value) ? value : [value];
    const texts: string[] = [];
    for (const item of values) {
      if (item === null) continue;
      if (typeof item === "number" || typeof item === "boolean") texts.push(String(item));
      else if (typeof item === "string") texts.push(cleanSingleLine(item));
      else {
        return _problem(
          "field_type",
          name,
          `${name} must be a string, number or boolean, or a list of them.`,
        );
      }
    }
    const list = kept.get(name) ?? [];
    list.push(...texts.filter((text) => text !== ""));
    kept.set(name, list);
  }
  const fields: [string, string][] = [];
  for (const [name, values] of kept) {
    if (values.length === 0) continue;
    const text = values.join(JOINER);
    if (text.length > FIELD_LIMITS.value && codePointLength(text) > FIELD_LIMITS.value) {
      return _problem(
        "field_too_long",
        name,
        `${name} must be at most ${FIELD_LIMITS.value} characters.`,
      );
    }
    if (fields.length === FIELD_LIMITS.count) {
      return _problem(
        "too_many_fields",
        name,
        `A form may send at most ${FIELD_LIMITS.count} fields besides name, contact and message.`,
      );
    }
    fields.push([name, text]);
  }
  // fromEntries defines own properties: a name such as "constructor" stays a plain key.
  return { kind: "fields", fields: Object.fromEntries(fields) };
}

function _problem(code: FieldProblem["code"], name: string, message: string): ExtraFields {
  const field = name.length > FIELD_LIMITS.name ? `${name.slice(0, FIELD_LIMITS.name)}…` : name;
  return { kind: "problem", problem: { code, field, message } };
}
