/**
 * The contact form's payload: the honeypots, the spec's three fields, then the others.
 *
 * @module
 */
import { isRecord } from "../common/json.ts";
import { cleanMultiLine, cleanSingleLine, codePointLength } from "./clean.ts";
import {
  CONTACT_SOURCES,
  type ContactSource,
  extraFields,
  HONEYPOTS,
  PROOF_FIELDS,
  SERVICE_FIELDS,
} from "./fields.ts";

export { cleanMultiLine, cleanSingleLine, codePointLength } from "./clean.ts";

/** Limits in Unicode code points, as the reference deployment counts characters. */
export const LIMITS = { name: 200, contact: 200, message: 4000 } as const;

/** A validated submission: trimmed, cleaned, within the limits. */
export interface Submission {
  /** Sender's name; may be empty (the form is anonymous). */
  readonly name: string;
  /** How to reach the sender; may be empty. */
  readonly contact: string;
  /** Message body; never empty. */
  readonly message: string;
  /** The field the contact came from when it was not `contact` (`email`, `_replyto`). */
  readonly contactFrom?: Exclude<ContactSource, "contact">;
  /** Every other field kept, in the order sent (lib/form/fields.ts); absent when none. */
  readonly fields?: Readonly<Record<string, string>>;
}

/**
 * The error codes of a payload that is refused (lib/http/errors.ts gives each its status and
 * sentence).
 */
export type InvalidCode =
  | "invalid_json"
  | "invalid_encoding"
  | "invalid_body"
  | "field_type"
  | "field_too_long"
  | "field_required"
  | "field_name"
  | "too_many_fields"
  | "invalid_multipart"
  | "file_not_accepted";

/** Why a payload was refused. */
export interface Invalid {
  readonly kind: "invalid";
  readonly code: InvalidCode;
  readonly field?: string;
  readonly message?: string;
}

/** Outcome of reading a payload. */
export type SubmissionResult =
  | { readonly kind: "valid"; readonly submission: Submission }
  | {
    readonly kind: "honeypot";
    /**
     * Its `message`, cleaned and cut to its limit, shown on its decoy case page
     * (lib/cases/decoy.ts) as a real page would; absent when it sent none (or not a string).
     */
    readonly message?: string;
  }
  | Invalid;

/**
 * True when a honeypot (`website`, `_gotcha`, `bot-field`) holds anything but null or a blank
 * string.
 */
export function isHoneypotHit(value: unknown): boolean {
  if (!isRecord(value)) return false;
  // Any case (`Website`, `_GOTCHA`), every one of them: a bot may fill any.
  return Object.keys(value).some((name) => {
    if (!(HONEYPOTS as readonly string[]).includes(name.toLowerCase())) return false;
    const field = value[name];
    if (field === null || field === undefined) return false;
    return typeof field !== "string" || field.trim() !== "";
  });
}

/**
 * The key of `value` that is the spec field `field` (lower-case), in any case: the first one in
 * the order sent (`{"Name": …, "name": …}` takes `Name`); `undefined` when none.
 */
export function specKey(
  value: Readonly<Record<string, unknown>>,
  field: string,
): string | undefined {
  return Object.keys(value).find((key) =>
    key.length === field.length && key.toLowerCase() === field
  );
}

/** A honeypot hit of `value`, with its message as its decoy page shows it. */
function _honeypot(value: Readonly<Record<string, unknown>>): SubmissionResult {
  const key = specKey(value, "message");
  const raw = key === undefined ? undefined : value[key];
  if (typeof raw !== "string") return { kind: "honeypot" };
  let message = cleanMultiLine(raw);
  if (message.length > LIMITS.message && codePointLength(message) > LIMITS.message) {
    message = Array.from(message).slice(0, LIMITS.message).join("");
  }
  return message === "" ? { kind: "honeypot" } : { kind: "honeypot", message };
}

/**
 * Applies the honeypots, then validates `name`, the contact (from `contact`, else `email`, else
 * `_replyto`: the first non-empty one), `message` and then every other field
 * (lib/form/fields.ts; the challenge's proof is not one of them). Absent or null fields are
 * empty. The spec's names and the contact's sources are matched in any case ({@linkcode specKey}:
 * the first one sent wins; a later one in another case is not kept).
 */
export function parseSubmission(value: unknown): SubmissionResult {
  if (!isRecord(value)) return { kind: "invalid", code: "invalid_body" };
  // The honeypot comes first: a bot with over-long fields still sees success.
  if (isHoneypotHit(value)) return _honeypot(value);

  const texts: Record<string, string> = {};
  for (const field of ["name", ...CONTACT_SOURCES, "message"] as const) {
    const key = specKey(value, field);
    const raw = key === undefined ? undefined : value[key];
    if (raw === undefined || raw === null) continue;
    // `email` used as an ordinary field may be a list (checked with the other fields).
    if (field === "email" && typeof raw !== "string") continue;
    if (typeof raw !== "string") {
      return {
        kind: "invalid",
        code: "field_type",
        field,
        message: `${field} must be a string or null.`,
      };
    }
    const limit = field === "name" || field === "message" ? LIMITS[field] : LIMITS.contact;
    const cleaned = field === "message" ? cleanMultiLine(raw) : cleanSingleLine(raw);
    // A string has at least as many UTF-16 units as code points: count only when it could be over.
    if (cleaned.length > limit && codePointLength(cleaned) > limit) {
      return {
        kind: "invalid",
        code: "field_too_long",
        field,
        message: `${field} must be at most ${limit} characters.`,
      };
    }
    texts[field] = cleaned;
  }
  const message = texts.message ?? "";
  if (message === "") {
    return {
      kind: "invalid",
      code: "field_required",
      field: "message",
      message: "message is required.",
    };
  }
  const from = CONTACT_SOURCES.find((field) => (texts[field] ?? "") !== "") ?? "contact";
  const taken = new Set<string>([
    "name",
    "message",
    "contact",
    from,
    ...HONEYPOTS,
    ...PROOF_FIELDS,
    ...SERVICE_FIELDS,
  ]);
  const extra = extraFields(Object.entries(value), taken);
  if (extra.kind === "problem") return { kind: "invalid", ...extra.problem };
  const hasFields = Object.keys(extra.fields).length > 0;
  return {
    kind: "valid",
    submission: {
      name: texts.name ?? "",
      contact: texts[from] ?? "",
      message,
      ...(from === "contact" ? {} : { contactFrom: from }),
      ...(hasFields ? { fields: extra.fields } : {}),
    },
  };
}
