/**
 * The email a reply becomes: its subject decided, every header value made one short line, the
 * reply's text with the sender's message quoted below it, as the options nodemailer builds the
 * MIME message from (plain text, UTF-8; nodemailer encodes headers and body). Pure.
 *
 * @module
 */
import type { SendMailOptions } from "nodemailer";

/** The longest subject, in characters, before it is cut (with `…`). */
export const MAX_SUBJECT = 160;
/** The longest display name (`REPLY_FROM`'s site name), in characters. */
export const MAX_NAME = 80;
/** The longest reply text, in characters (a Telegram message is at most 4096). */
export const MAX_REPLY_TEXT = 10_000;
/** The longest quoted message, in characters (a form message is at most a few thousand). */
export const MAX_QUOTED = 20_000;

/** What a subject is decided from. */
export interface SubjectSource {
  /** The submission's `subject` field, when its form had one and the sender filled it. */
  readonly subjectField?: string | undefined;
  /** The form's title (FORM_<NAME>'s title), or the site's name. */
  readonly formTitle?: string | undefined;
  /** `REPLY_FROM`: its domain names the site when nothing else does. */
  readonly from: string;
}

/**
 * The reply's subject: `Re: <the subject field>` when the sender gave one, else
 * `Re: your message to <form title, or REPLY_FROM's domain>`; one line, at most
 * {@linkcode MAX_SUBJECT} characters. A subject field that already starts with `Re:` is not
 * prefixed twice.
 */
export function replySubject(source: SubjectSource): string {
  const field = headerText(source.subjectField ?? "", MAX_SUBJECT);
  if (field !== "") return headerText(/^re:/i.test(field) ? field : `Re: ${field}`, MAX_SUBJECT);
  const title = headerText(source.formTitle ?? "", MAX_SUBJECT);
  const site = title !== "" ? title : source.from.slice(source.from.lastIndexOf("@") + 1);
  return headerText(`Re: your message to ${site}`, MAX_SUBJECT);
}

/** A reply ready to be mailed: what the store keeps of it until it is sent. */
export interface ReplyDraft {
  /** The recipient, from {@linkcode emailRecipient} (lib/mail/recipient.ts). */
  readonly to: string;
  /** From {@linkcode replySubject}. */
  readonly subject: string;
  /** The owner's reply, as written in the chat. */
  readonly text: string;
  /** The sender's message it answers. */
  readonly quoted: QuotedMessage;
}

/** The sender's original message, quoted below the reply. */
export interface QuotedMessage {
  /** When the submission was received (ISO 8601). */
  readonly ts: string;
  /** Its message text. */
  readonly message: string;
}

/** The site's side of every reply (settings). */
export interface ReplySettings {
  /** `REPLY_FROM`: a plain address (the site's, never the owner's own). */
  readonly from: string;
  /** A display name for `From` (the site's name), optional. */
  readonly fromName?: string | undefined;
  /** `REPLY_TO`: a plain address, optional. */
  readonly replyTo?: string | undefined;
}

/**
 * The nodemailer message options for `draft`: `From` (with `fromName` when set), `Reply-To` when
 * set, `To`, the subject, a plain UTF-8 text body (the reply, then `On <date>, you wrote:` and
 * the message as `> ` lines). Every header value is made one line without control characters
 * and capped here again (whatever the draft holds), the envelope is given explicitly (only
 * `to`, never an address parsed from a header), and nodemailer may read no file or URL.
 */
export function composeReply(settings: ReplySettings, draft: ReplyDraft): SendMailOptions {
  const from = headerText(settings.from, 254);
  const name = headerText(settings.fromName ?? "", MAX_NAME);
  const replyTo = headerText(settings.replyTo ?? "", 254);
  const to = headerText(draft.to, 254);
  return {
    from: name === "" ? from : { name, address: from },
    ...(replyTo === "" ? {} : { replyTo }),
    to,
    envelope: { from, to: [to] },
    subject: headerText(draft.subject, MAX_SUBJECT),
    text: replyBody(draft.text, draft.quoted),
    textEncoding: "quoted-printable",
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/**
 * The body: the reply's text, a blank line, `On <date>, you wrote:` and the quoted message,
 * every line of it after `> `. Line ends become `\n` (nodemailer writes CRLF), other control
 * characters are dropped, and each part is capped.
 */
export function replyBody(text: string, quoted: QuotedMessage): string {
  const reply = _bodyText(text, MAX_REPLY_TEXT).trimEnd();
  const message = _bodyText(quoted.message, MAX_QUOTED).trimEnd();
  const lines = message.split("\n").map((line) => line === "" ? ">" : `> ${line}`);
  return `${reply}\n\nOn ${_quotedDate(quoted.ts)}, you wrote:\n${lines.join("\n")}\n`;
}

/**
 * A header value: control characters (CR and LF included, DEL and C1, and Unicode line and
 * paragraph separators) become spaces, runs of spaces one, trimmed, at most `max` characters
 * (cut with `…`).
 */
export function headerText(value: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const line = value.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, " ")
    .replace(/ {2,}/g, " ").trim();
  const chars = [...line];
  return chars.length <= max ? line : `${chars.slice(0, max - 1).join("").trimEnd()}…`;
}

function _bodyText(value: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const text = value.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "");
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join("")}…`;
}

/** `2026-11-22T14:03:09.000Z` → `2026-11-22 14:03 UTC`; anything else as given, one line. */
function _quotedDate(ts: string): string {
  const match = /^(\d{4}-\d\d-\d\d)T(\d\d:\d\d)/.exec(ts);
  return match === null ? headerText(ts, 40) : `${match[1]} ${match[2]} UTC`;
}
