/**
 * Turning a validated contact submission into plain text for the messenger,
 * and cutting long text into parts the messenger accepts.
 *
 * @module
 */

/** A contact submission, already validated and trimmed. */
export interface NotificationInput {
  /** Sender's name, single-line; may be empty. */
  readonly name: string;
  /** How to reach the sender (e-mail, handle...), single-line; may be empty. */
  readonly contact: string;
  /** The message body; may span many lines. */
  readonly message: string;
  /** Client IP address as the server saw it. */
  readonly ip: string;
  /** Submission time, e.g. `"2026-11-22T14:03:09Z"`. */
  readonly ts: string;
}

/** Telegram's limit for one message, in UTF-16 code units. */
export const MAX_MESSAGE_LENGTH = 4096;

/** Shown for an empty name or contact. */
const MISSING = "—";

/**
 * Formats a plain-text notification (no markup: it is sent without
 * `parse_mode`): a short header, a blank line, then the message.
 *
 * @example
 * ```ts
 * formatNotification({ name: "Ann", contact: "", message: "Hi", ip: "203.0.113.9", ts: "2026-11-22T14:03:09Z" });
 * // "New contact message\nFrom: Ann\nContact: —\nIP: 203.0.113.9\nTime: 2026-11-22T14:03:09Z\n\nHi"
 * ```
 */
export function formatNotification(input: NotificationInput): string {
  return [
    "New contact message",
    `From: ${headerValue(input.name)}`,
    `Contact: ${headerValue(input.contact)}`,
    `IP: ${headerValue(input.ip)}`,
    `Time: ${headerValue(input.ts)}`,
    "",
    input.message,
  ].join("\n");
}

/**
 * Header fields should already be single-line; flattening line breaks again
 * costs nothing and guarantees no field can fake another header line.
 */
function headerValue(value: string): string {
  const flat = value.replace(/[\r\n\v\f\u0085\u2028\u2029]+/g, " ");
  return flat === "" ? MISSING : flat;
}

/**
 * Splits `text` into parts of at most `max` UTF-16 code units, in order.
 *
 * - A cut never falls between the two halves of a surrogate pair.
 * - Each cut prefers to follow the last line break (`"\n"`) in the last
 *   quarter of the window, else the last space there, else it is a hard cut.
 * - No separator is consumed: a line break or space a cut follows stays at the
 *   end of the earlier part, so `parts.join("") === text` always holds.
 * - `""` gives `[]` (there is nothing to send); any other text gives at least
 *   one part, and no part is empty.
 *
 * @param max Part size limit, an integer ≥ 2 (room for one surrogate pair); default 4096.
 * @throws {RangeError} If `max` is not an integer ≥ 2.
 */
export function splitText(text: string, max: number = MAX_MESSAGE_LENGTH): string[] {
  if (!Number.isInteger(max) || max < 2) {
    throw new RangeError(`splitText: max must be an integer >= 2, got ${max}`);
  }
  const parts: string[] = [];
  let start = 0;
  while (text.length - start > max) {
    const end = start + max;
    // A soft break must leave the part at least three quarters full.
    const earliest = start + Math.ceil((max * 3) / 4);
    const cut = softCut(text, "\n", earliest, end) ?? softCut(text, " ", earliest, end) ??
      hardCut(text, end);
    parts.push(text.slice(start, cut));
    start = cut;
  }
  if (start < text.length) parts.push(text.slice(start));
  return parts;
}

/** Cut position just after the last `separator` ending in `[earliest, end]`, if any. */
function softCut(text: string, separator: string, earliest: number, end: number): number | null {
  const at = text.lastIndexOf(separator, end - 1);
  return at >= 0 && at + 1 >= earliest ? at + 1 : null;
}

/** `end`, moved back one unit if it would separate a surrogate pair. */
function hardCut(text: string, end: number): number {
  const before = text.charCodeAt(end - 1);
  const after = text.charCodeAt(end);
  const splitsPair = before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
  return splitsPair ? end - 1 : end;
}
