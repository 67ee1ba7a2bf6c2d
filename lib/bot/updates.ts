/**
 * What `getUpdates` brought, read as the chat actions need it: button presses, the `/status` and
 * `/pending` commands, replies to messages, and everything else. Pure, and safe on hostile input
 * (wrong types, huge numbers, missing fields): what cannot be read is `other`, never an exception.
 *
 * @module
 */

import { isRecord } from "../common/json.ts";

/** The update types contactd asks for (`allowed_updates`): nothing else reaches it. */
export const ALLOWED_UPDATES: readonly string[] = ["message", "callback_query"];

/** The commands contactd answers, as {@linkcode CommandEvent.command} names them. */
export const COMMANDS = ["status", "pending", "held"] as const;

/** One of {@linkcode COMMANDS}. */
export type Command = typeof COMMANDS[number];

/** Who acted: the Telegram user id and a display name fit for one line. */
export interface Sender {
  /** The user's id (positive). */
  readonly id: number;
  /**
   * `first_name` (+ ` last_name`), else `@username`, else the id: control, line-separator and
   * bidi characters removed, at most 64 code points.
   */
  readonly name: string;
}

/** A press on an inline button (`callback_query` on a message). */
export interface PressEvent {
  readonly kind: "press";
  readonly updateId: number;
  /** For `answerCallbackQuery`. */
  readonly queryId: string;
  /** The chat and message the button is under. */
  readonly chatId: number;
  readonly messageId: number;
  readonly from: Sender;
  /** The button's `callback_data`; `""` when there was none. */
  readonly data: string;
  /** The message's current text, when Telegram sent it (an accessible text message). */
  readonly text?: string;
}

/** `/status` or `/pending` (bare, or addressed to this bot as `/status@bot`). */
export interface CommandEvent {
  readonly kind: "command";
  readonly updateId: number;
  readonly chatId: number;
  readonly messageId: number;
  /** The forum topic it was written in, to answer there. */
  readonly topicId?: number;
  readonly from: Sender;
  readonly command: Command;
}

/** A message that replies to another message of the same chat. */
export interface ReplyEvent {
  readonly kind: "reply";
  readonly updateId: number;
  readonly chatId: number;
  readonly messageId: number;
  /** The forum topic it was written in, to answer there. */
  readonly topicId?: number;
  readonly from: Sender;
  /** The reply's text; `""` for a message without text (a photo, a sticker...). */
  readonly text: string;
  /** The `message_id` of the message it replies to. */
  readonly replyTo: number;
  /** The message it replies to is this bot's own (a notification, or any other it sent). */
  readonly replyToBot: boolean;
}

/** Anything else: only its id matters (so the offset moves past it). */
export interface OtherEvent {
  readonly kind: "other";
  readonly updateId: number;
}

/** One update, as the chat actions see it. */
export type ChatEvent = PressEvent | CommandEvent | ReplyEvent | OtherEvent;

/** The longest `callback_data` or query id kept; longer ones are not Telegram's. */
const MAX_TOKEN = 256;
/** The longest display name, in code points. */
const MAX_NAME = 64;

/**
 * Reads `getUpdates`' `result` (anything) as events, in order. An entry without a usable
 * `update_id` (a non-negative safe integer) is skipped: it can be neither confirmed nor told
 * apart. `botUsername` (without `@`) makes `/status@<botUsername>` count; a command addressed to
 * any other bot (or to any bot when `botUsername` is not given) is `other`.
 */
export function parseUpdates(result: unknown, botUsername?: string): ChatEvent[] {
  if (!Array.isArray(result)) return [];
  const events: ChatEvent[] = [];
  for (const update of result) {
    const updateId = _updateIdOf(update);
    if (updateId === undefined) continue;
    events.push(_event(update as Record<string, unknown>, updateId, botUsername));
  }
  return events;
}

/**
 * The offset that confirms every update of `result` (`getUpdates`' raw `result`): one past the
 * highest usable `update_id`, junk updates included; `previous` when there is none, or when it is
 * higher (an offset never goes back).
 */
export function nextOffset(result: unknown, previous: number | undefined): number | undefined {
  let offset = previous;
  if (!Array.isArray(result)) return offset;
  for (const update of result) {
    const id = _updateIdOf(update);
    if (
      id !== undefined && id < Number.MAX_SAFE_INTEGER && (offset === undefined || id >= offset)
    ) {
      offset = id + 1;
    }
  }
  return offset;
}

function _updateIdOf(update: unknown): number | undefined {
  if (!isRecord(update)) return undefined;
  const id = update.update_id;
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : undefined;
}

function _event(
  update: Record<string, unknown>,
  updateId: number,
  botUsername: string | undefined,
): ChatEvent {
  const other: OtherEvent = { kind: "other", updateId };
  if (isRecord(update.callback_query)) return _press(update.callback_query, updateId) ?? other;
  if (isRecord(update.message)) return _message(update.message, updateId, botUsername) ?? other;
  return other;
}

function _press(query: Record<string, unknown>, updateId: number): PressEvent | undefined {
  const queryId = _token(query.id);
  const from = _sender(query.from);
  const message = isRecord(query.message) ? query.message : undefined;
  const chatId = _chatIdOf(message);
  const messageId = _positive(message?.message_id);
  if (queryId === undefined || from === undefined || chatId === undefined) return undefined;
  if (messageId === undefined) return undefined;
  const data = query.data === undefined ? "" : _token(query.data);
  if (data === undefined) return undefined;
  // An inaccessible message (date 0) carries no text.
  const accessible = message?.date !== 0;
  const text = accessible && typeof message?.text === "string" ? message.text : undefined;
  return {
    kind: "press",
    updateId,
    queryId,
    chatId,
    messageId,
    from,
    data,
    ...(text === undefined ? {} : { text }),
  };
}

function _message(
  message: Record<string, unknown>,
  updateId: number,
  botUsername: string | undefined,
): CommandEvent | ReplyEvent | undefined {
  const chatId = _chatIdOf(message);
  const messageId = _positive(message.message_id);
  const from = _sender(message.from);
  if (chatId === undefined || messageId === undefined || from === undefined) return undefined;
  if (isRecord(message.from) && message.from.is_bot === true) return undefined;
  // A topic message: answers go to the same topic.
  const topic = message.is_topic_message === true
    ? _positive(message.message_thread_id)
    : undefined;
  const where = { updateId, chatId, messageId, ...(topic === undefined ? {} : { topicId: topic }) };
  const text = typeof message.text === "string" ? message.text : undefined;
  const command = text === undefined ? undefined : _command(text, botUsername);
  if (command === "foreign") return undefined;
  if (command !== undefined) return { kind: "command", ...where, from, command };
  const replied = isRecord(message.reply_to_message) ? message.reply_to_message : undefined;
  const replyTo = _positive(replied?.message_id);
  if (replied === undefined || replyTo === undefined) return undefined;
  // In a forum, a message without an explicit reply "replies" to its topic's first message.
  if (isRecord(replied.forum_topic_created) || replyTo === topic) return undefined;
  const author = isRecord(replied.from) ? replied.from : undefined;
  // The bot's own message: by its username when known, else by being a bot's.
  const replyToBot = author?.is_bot === true &&
    (botUsername === undefined || author.username === botUsername);
  return { kind: "reply", ...where, from, text: text ?? "", replyTo, replyToBot };
}

/**
 * The command a text starts with (`/status`, `/pending`, any case, alone or followed by a space):
 * `"foreign"` for any other command or one addressed to another bot; `undefined` when the text
 * does not start with a command (`/etc/hosts` is text).
 */
function _command(text: string, botUsername: string | undefined): Command | "foreign" | undefined {
  const word = /^\/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{1,64}))?(?:\s|$)/.exec(text);
  if (word === null) return undefined;
  const name = word[1]!.toLowerCase();
  const addressee = word[2];
  if (
    addressee !== undefined &&
    (botUsername === undefined || addressee.toLowerCase() !== botUsername.toLowerCase())
  ) return "foreign";
  return (COMMANDS as readonly string[]).includes(name) ? name as Command : "foreign";
}

function _chatIdOf(message: Record<string, unknown> | undefined): number | undefined {
  if (message === undefined || !isRecord(message.chat)) return undefined;
  const id = message.chat.id;
  return typeof id === "number" && Number.isSafeInteger(id) && id !== 0 ? id : undefined;
}

function _positive(value: unknown): number | undefined {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

function _token(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_TOKEN
    ? value
    : undefined;
}

function _sender(value: unknown): Sender | undefined {
  if (!isRecord(value)) return undefined;
  const id = _positive(value.id);
  if (id === undefined) return undefined;
  const first = typeof value.first_name === "string" ? value.first_name : "";
  const last = typeof value.last_name === "string" ? value.last_name : "";
  const username = typeof value.username === "string" ? value.username : "";
  const full = _clean(`${first} ${last}`);
  const name = full !== "" ? full : username !== "" ? _clean(`@${username}`) : String(id);
  return { id, name };
}

/** One line, without control, separator or bidi characters, at most 64 code points. */
function _clean(text: string): string {
  const flat = text.slice(0, 4 * MAX_NAME).toWellFormed()
    .replace(/\s+/g, " ")
    .replace(/[\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069\u061C]/gu, "")
    .trim();
  return [...flat].slice(0, MAX_NAME).join("").trim();
}
