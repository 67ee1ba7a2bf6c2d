/**
 * Turning a validated contact submission into plain text for the messenger,
 * and cutting long text into parts the messenger accepts.
 *
 * @module
 */
import { looksLikeSpam } from "../learn/classifier.ts";

/** A contact submission, already validated and trimmed. */
export interface NotificationInput {
  /** Sender's name, single-line; may be empty. */
  readonly name: string;
  /** How to reach the sender (e-mail, handle...), single-line; may be empty. */
  readonly contact: string;
  /** The message body; may span many lines. */
  readonly message: string;
  /** The field the contact came from when it was not `contact` (`email`, `_replyto`). */
  readonly contactFrom?: string | undefined;
  /** The form's other fields, single-line, in the order sent (lib/form/fields.ts). */
  readonly fields?: Readonly<Record<string, string>> | undefined;
  /** Client IP address as the server saw it. */
  readonly ip: string;
  /** Submission time, e.g. `"2026-11-22T14:03:09Z"`. */
  readonly ts: string;
  /** The submission's short id (letters and digits), the same in the log. */
  readonly id: string;
  /** Present when the notification comes after the sender was answered: a late delivery. */
  readonly late?: LateDelivery;
  /** The title of its form of `FORMS` (`FORM_<ID>_TITLE`); absent for the default form. */
  readonly title?: string | undefined;
  /**
   * The case it follows up (its first submission's id), when the sender wrote it on their case
   * page (lib/cases/): said in a line below the first.
   */
  readonly followUpOf?: string | undefined;
  /**
   * The learned spam filter's score (lib/spam/spam_filter.ts): at or above the threshold the
   * notification starts with {@linkcode spamMarkLine}.
   */
  readonly spamScore?: number | undefined;
  /**
   * Whether it carries the chat's buttons (`CHAT_ACTIONS=1`); default true. Without them the
   * spam mark names none ({@linkcode spamMarkLine}).
   */
  readonly buttons?: boolean | undefined;
}

/**
 * `text` (a notification's current text) without the first line {@linkcode spamMarkLine} wrote,
 * once the owner said it is not spam; any other text as it is. Only a first line followed by the
 * header's (`New contact message #…`) counts: a sender's text never starts a notification.
 */
export function withoutSpamMark(text: string): string {
  const end = text.indexOf("\n");
  if (end < 0 || !text.startsWith(spamMarkLine(0.9).slice(0, 20))) return text;
  const rest = text.slice(end + 1);
  return rest.startsWith("New contact message #") ? rest : text;
}

/**
 * The first line of a notification that looks like spam, saying how sure contactd is: the score
 * as a percentage, rounded down (never 100 %); it names the buttons that teach the filter only
 * when the notification has them (`buttons`, `CHAT_ACTIONS=1`).
 *
 * @example
 * ```ts
 * spamMarkLine(0.973); // "⚠️ Looks like spam (97 % sure): sent silently. Not spam or Spam below teaches the filter."
 * spamMarkLine(0.973, false); // "⚠️ Looks like spam (97 % sure): sent silently."
 * ```
 */
export function spamMarkLine(spamScore: number, buttons = true): string {
  const sure = Math.min(99, Math.floor(spamScore * 100));
  const line = `⚠️ Looks like spam (${sure} % sure): sent silently.`;
  return buttons ? `${line} Not spam or Spam below teaches the filter.` : line;
}

/** The line of a follow-up written on the case page of submission `caseId`. */
export function followUpLine(caseId: string): string {
  return `↩️ Follow-up of #${headerValue(caseId)}, written on the sender's case page`;
}

/** Why a notification arrives late, for the owner to read. */
export interface LateDelivery {
  /** The first failed attempt's reason, `null` if it was never tried before (it waited). */
  readonly firstError: string | null;
  /** What the sender was answered (`502`, `503`), `null` when contactd stopped before answering. */
  readonly answered: number | null;
}

/** Telegram's limit for one message, in UTF-16 code units. */
export const MAX_MESSAGE_LENGTH = 4096;

/** Shown for an empty name or contact. */
const MISSING = "—";

/**
 * The header of a notification (no markup: it is sent without `parse_mode`): the id, the form's
 * title (a form of `FORMS`), a line on a late delivery, the form's `subject` field if it sent one, then who (the contact labelled with
 * the field it came from when that was not `contact`), from where, when.
 *
 * @example
 * ```ts
 * formatHeader({ name: "Ann", contact: "", message: "Hi", ip: "203.0.113.9", ts: "2026-11-22T14:03:09Z", id: "k3x9q2ab" });
 * // "New contact message #k3x9q2ab\nFrom: Ann\nContact: —\nIP: 203.0.113.9\nTime: 2026-11-22T14:03:09Z"
 * ```
 */
function formatHeader(input: NotificationInput, part = ""): string {
  return [
    ...(looksLikeSpam(input.spamScore)
      ? [spamMarkLine(input.spamScore!, input.buttons ?? true)]
      : []),
    `New contact message #${input.id}${part}`,
    ...(input.followUpOf === undefined ? [] : [followUpLine(input.followUpOf)]),
    ...(input.title === undefined ? [] : [`Form: ${headerValue(input.title)}`]),
    ...(input.late === undefined ? [] : [lateLine(input.late)]),
    ..._subjectOf(input.fields).map(([, value]) => `Subject: ${headerValue(value)}`),
    `From: ${headerValue(input.name)}`,
    `Contact${input.contactFrom === undefined ? "" : ` (${input.contactFrom})`}: ${
      headerValue(input.contact)
    }`,
    `IP: ${headerValue(input.ip)}`,
    `Time: ${headerValue(input.ts)}`,
  ].join("\n");
}

/**
 * What is sent instead of a notification Telegram refused as written (a `400` that belongs to the
 * message, such as `message is too long`): the id, the late line, the refusal, and where to read
 * the text, with nothing a stranger wrote (name, contact or message may be what was refused).
 *
 * @example
 * ```ts
 * refusedNotice({ name: "Ann", contact: "", message: "Hi", ip: "203.0.113.9", ts: "2026-11-22T14:03:09Z", id: "k3x9q2ab" }, "400 Bad Request: message is too long");
 * // "New contact message #k3x9q2ab\nNot shown: Telegram refused its text (400 Bad Request: …)…"
 * ```
 */
export function refusedNotice(input: NotificationInput, refusal: string): string {
  return [
    `New contact message #${input.id}`,
    ...(input.late === undefined ? [] : [lateLine(input.late)]),
    `Not shown: Telegram refused its text (${headerValue(refusal)}); ` +
    "it is in the backup file (MESSAGES_FILE), under this time and IP.",
    `IP: ${headerValue(input.ip)}`,
    `Time: ${headerValue(input.ts)}`,
  ].join("\n");
}

/** What starts each line of an extra field: no header line and no part marker starts so. */
export const FIELD_BULLET = "· ";

/** The form's `subject` field (any case), the first one: it leads the notification. */
function _subjectOf(fields: Readonly<Record<string, string>> | undefined): [string, string][] {
  const subject = Object.entries(fields ?? {}).find(([name]) => name.toLowerCase() === "subject");
  return subject === undefined ? [] : [subject];
}

/**
 * The form's other fields (but the subject, which leads the header), a line each as
 * `· name: value` in the order sent: they end the header block, before its blank line, where the
 * message (the only text that may span lines) can never reach.
 */
function fieldLines(input: NotificationInput): string[] {
  const subject = _subjectOf(input.fields)[0]?.[0];
  return Object.entries(input.fields ?? {})
    .filter(([name]) => name !== subject)
    .map(([name, value]) => `${FIELD_BULLET}${headerValue(name)}: ${headerValue(value)}`);
}

function lateLine(late: LateDelivery): string {
  const why = late.firstError === null
    ? "it waited in the queue"
    : `first attempt failed: ${headerValue(late.firstError)}`;
  const told = late.answered === null
    ? "the sender got no answer (contactd stopped first)"
    : `the sender was told it was saved but not yet delivered (${late.answered})`;
  return `Delivered late: ${why}; ${told}, and may have sent it again.`;
}

/**
 * The notification as the messages to send, in order, each within {@linkcode MAX_MESSAGE_LENGTH}:
 * the header with the form's other fields as its last lines, a blank line and the message
 * (the field lines, a blank line, the message); a body too long for one goes on in further parts,
 * each starting with `(k/n) #id` on a line of its own, so no part ever starts with text the sender
 * wrote (a crafted message cannot pass for a second notification). The first part's header then
 * ends in ` (1/n)`.
 */
export function notificationParts(input: NotificationInput): string[] {
  // Room for the longest marker: "(99/99) #" + id + newline, and " (99/99)" in the header.
  const marker = 9 + input.id.length + 1;
  const header = formatHeader(input, " (99/99)");
  // The field lines end the header block; the first blank line comes before the message only.
  const lines = fieldLines(input);
  const message = neutraliseLines(input.message);
  const body = lines.length === 0 ? message : `${lines.join("\n")}\n\n${message}`;
  const first = splitText(body, Math.max(2, MAX_MESSAGE_LENGTH - header.length - 2))[0]!;
  const rest = splitText(body.slice(first.length), MAX_MESSAGE_LENGTH - marker);
  const total = 1 + rest.length;
  const count = total === 1 ? "" : ` (1/${total})`;
  const joint = lines.length === 0 ? "\n\n" : "\n";
  return [
    `${formatHeader(input, count)}${joint}${first}`,
    ...rest.map((part, i) => `(${i + 2}/${total}) #${input.id}\n${part}`),
  ];
}

/** What starts a line of the sender's that is shaped like contactd's own (a state line). */
export const SENDER_LINE_MARK = "(sender wrote) ";

/** Spaces, invisible and direction characters a line may start with. */
const LEADING = "[\\p{Z}\\p{Cc}\\p{Cf}\\s\\u115F\\u1160\\u3164\\uFFA0]*";

/** Any dash, minus or horizontal bar (the state line's `—` and its look-alikes). */
const DASH =
  "[\\p{Pd}\\u2212\\u2500-\\u2501\\u2574\\u2576\\u2578\\u257A\\u23AF\\u2E3A\\u2E3B\\uFE58\\uFE63\\uFF0D\\u30FC\\u4E00\\u2013-\\u2015]";

/**
 * A line shaped like contactd's state line (`— ✓ Handled by Anna, 2026-11-27 09:12 UTC`): after
 * any leading spaces or invisible characters, a dash of any kind, then a mark (any symbol, the
 * look-alikes of ✓ 🚫 ↩ included) before a word, or a date anywhere after it.
 */
const STATE_SHAPE = new RegExp(
  `^${LEADING}${DASH}(?:${LEADING}[^\\p{L}\\p{N}\\s]+${LEADING}\\p{L}|.*\\p{Nd}{4}\\D\\p{Nd}{1,2}\\D\\p{Nd}{1,2})`,
  "u",
);

/**
 * The sender's message with every line shaped like contactd's own state line marked as the
 * sender's ({@linkcode SENDER_LINE_MARK} before it): nothing a sender writes can pass for a line
 * contactd adds, in the first sending or later. Other lines (a `- item` list) are left as written.
 */
export function neutraliseLines(message: string): string {
  return message.split("\n").map((line) =>
    STATE_SHAPE.test(line.normalize("NFKC")) ? `${SENDER_LINE_MARK}${line}` : line
  ).join("\n");
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
