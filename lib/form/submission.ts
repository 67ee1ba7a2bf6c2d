/**
 * The contact form's payload: decoding, the honeypot, and field validation.
 *
 * @module
 */
import { isRecord } from "../common/json.ts";

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
  | "field_required";

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
  | { readonly kind: "honeypot" }
  | Invalid;

/** True when the honeypot `website` holds anything but null or a blank string. */
export function isHoneypotHit(value: unknown): boolean {
  if (!isRecord(value) || !Object.hasOwn(value, "website")) return false;
  const website = value.website;
  if (website === null || website === undefined) return false;
  return typeof website !== "string" || website.trim() !== "";
}

/**
 * Applies the honeypot, then validates `name`, `contact` and `message` in that order.
 * Absent or null fields are empty; unknown fields are ignored.
 */
export function parseSubmission(value: unknown): SubmissionResult {
  if (!isRecord(value)) return { kind: "invalid", code: "invalid_body" };
  // The honeypot comes first: a bot with over-long fields still sees success.
  if (isHoneypotHit(value)) return { kind: "honeypot" };

  const fields: Record<keyof Submission, string> = { name: "", contact: "", message: "" };
  for (const field of ["name", "contact", "message"] as const) {
    const raw = Object.hasOwn(value, field) ? value[field] : undefined;
    if (raw === undefined || raw === null) continue;
    if (typeof raw !== "string") {
      return {
        kind: "invalid",
        code: "field_type",
        field,
        message: `${field} must be a string or null.`,
      };
    }
    const cleaned = field === "message" ? cleanMultiLine(raw) : cleanSingleLine(raw);
    // A string has at least as many UTF-16 units as code points: count only when it could be over.
    if (cleaned.length > LIMITS[field] && codePointLength(cleaned) > LIMITS[field]) {
      return {
        kind: "invalid",
        code: "field_too_long",
        field,
        message: `${field} must be at most ${LIMITS[field]} characters.`,
      };
    }
    fields[field] = cleaned;
  }
  if (fields.message === "") {
    return {
      kind: "invalid",
      code: "field_required",
      field: "message",
      message: "message is required.",
    };
  }
  return { kind: "valid", submission: fields };
}

/** Counts Unicode code points; a lone surrogate counts as one. */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

// Control characters, line/paragraph separators and bidi controls could fake or reorder the
// header lines of the notification, so single-line fields lose them.
const SINGLE_LINE_UNSAFE = /[\p{Cc}\u2028\u2029\u200E\u200F\u202A-\u202E\u2066-\u2069\u061C]/gu;
// The message keeps line breaks and tabs; other control characters (NUL, escapes) go.
// deno-lint-ignore no-control-regex -- matching control characters is the point
const MULTI_LINE_UNSAFE = /[\0-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]/g;

/**
 * A single-line field as stored: well-formed, control and bidi characters replaced by spaces,
 * trimmed. `thorough` skips the shortcut for printable ASCII (tests compare the two ways).
 */
export function cleanSingleLine(text: string, thorough = false): string {
  // Printable ASCII is what forms mostly send, and nothing in it is replaced: the
  // well-formed copy and the regular-expression pass would only copy it.
  if (!thorough && isPrintableAscii(text, false)) return text.trim();
  return text.toWellFormed().replace(SINGLE_LINE_UNSAFE, " ").trim();
}

const CRLF = /\r\n?/g;

/**
 * The message as stored: well-formed, line breaks as `\n`, tabs kept, other control characters
 * dropped, trimmed. `thorough` skips the shortcut for printable ASCII with tabs and `\n`.
 */
export function cleanMultiLine(text: string, thorough = false): string {
  if (!thorough && isPrintableAscii(text, true)) return text.trim();
  return text.toWellFormed().replace(CRLF, "\n").replace(MULTI_LINE_UNSAFE, "").trim();
}

/** Only U+0020 to U+007E (and, for a message, tab and line feed): nothing a cleaner changes. */
function isPrintableAscii(text: string, multiLine: boolean): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 || c > 0x7e) && !(multiLine && (c === 0x0a || c === 0x09))) return false;
  }
  return true;
}
