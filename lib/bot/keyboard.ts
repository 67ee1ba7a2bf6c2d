/**
 * The chat actions' buttons: the inline keyboard under a notification, its `callback_data`, and
 * the state line the notification shows once an action was taken. Pure.
 *
 * @module
 */

import { MAX_MESSAGE_LENGTH } from "./notification.ts";

/** Where a notification stands: new (`open`), done (`handled`), or marked as `spam`. */
export type MessageState = "open" | "handled" | "spam";

/**
 * What a button does: `handled` (open → handled), `reopen` (handled → open), `spam`
 * (open → spam), `not_spam` (spam → open).
 */
export type ChatAction = "handled" | "reopen" | "spam" | "not_spam";

/** One button of an inline keyboard, as the Bot API's `InlineKeyboardButton` (callback kind). */
export interface InlineButton {
  readonly text: string;
  readonly callback_data: string;
}

/** The Bot API's `InlineKeyboardMarkup`: rows of buttons. `[]` rows: no keyboard. */
export interface InlineKeyboard {
  readonly inline_keyboard: readonly (readonly InlineButton[])[];
}

/** The Bot API's limit for `callback_data`, in bytes. */
export const MAX_CALLBACK_DATA_BYTES = 64;

/** The letter of each action in `callback_data` (`h:<id>`). */
const ACTION_LETTERS: Readonly<Record<ChatAction, string>> = {
  handled: "h",
  reopen: "o",
  spam: "s",
  not_spam: "n",
};

const LETTER_ACTIONS: ReadonlyMap<string, ChatAction> = new Map(
  Object.entries(ACTION_LETTERS).map(([action, letter]) => [letter, action as ChatAction]),
);

/** A submission id fit for `callback_data`: 1 to 40 of `A-Z a-z 0-9 _ -` (ASCII: one byte each). */
const ID_SHAPE = /^[A-Za-z0-9_-]{1,40}$/;

/** `callback_data` as {@linkcode encodeCallbackData} writes it, nothing else. */
const DATA_SHAPE = /^([a-z]):([A-Za-z0-9_-]{1,40})$/;

/**
 * The `callback_data` of the button for `action` on submission `id`: `"<letter>:<id>"` (`h`
 * handled, `o` reopen, `s` spam, `n` not spam), at most {@linkcode MAX_CALLBACK_DATA_BYTES} bytes.
 * `undefined` for an id outside `[A-Za-z0-9_-]{1,40}` (it could not be read back, or would not fit).
 */
export function encodeCallbackData(action: ChatAction, id: string): string | undefined {
  // An id of that shape is ASCII of at most 40 characters: the data always fits.
  return ID_SHAPE.test(id) ? `${ACTION_LETTERS[action]}:${id}` : undefined;
}

/**
 * Reads `callback_data` back, strictly: exactly `"<letter>:<id>"` with a known letter and an id
 * of `[A-Za-z0-9_-]{1,40}`; anything else (an unknown letter, another charset, extra colons,
 * spaces, a trailing line break) is `undefined`. Says nothing about whether the id exists.
 */
export function parseCallbackData(
  data: string,
): { readonly action: ChatAction; readonly id: string } | undefined {
  const match = DATA_SHAPE.exec(data);
  if (match === null) return undefined;
  const action = LETTER_ACTIONS.get(match[1]!);
  return action === undefined ? undefined : { action, id: match[2]! };
}

/** What each button says. */
export const BUTTON_LABELS: Readonly<Record<ChatAction, string>> = {
  handled: "✓ Handled",
  spam: "🚫 Spam",
  reopen: "↩ Reopen",
  not_spam: "✅ Not spam",
};

/** The actions offered in each state, in button order. */
export const ACTIONS_IN: Readonly<Record<MessageState, readonly ChatAction[]>> = {
  open: ["handled", "spam"],
  handled: ["reopen"],
  spam: ["not_spam"],
};

/**
 * The actions offered on a new notification that looks like spam (lib/spam/spam_filter.ts): Not
 * spam (it stays open; the filter learns it) and Spam.
 */
export const ACTIONS_MARKED: readonly ChatAction[] = ["not_spam", "spam"];

/**
 * The keyboard for a notification in `state`, one row: open `[✓ Handled] [🚫 Spam]` (`marked`,
 * one that looks like spam: `[✅ Not spam] [🚫 Spam]`), handled `[↩ Reopen]`, spam
 * `[✅ Not spam]`.
 *
 * @throws {RangeError} If `id` cannot be encoded (see {@linkcode encodeCallbackData}): ids are
 * contactd's own, so this is a bug, not input.
 */
export function keyboardFor(state: MessageState, id: string, marked = false): InlineKeyboard {
  const actions = marked && state === "open" ? ACTIONS_MARKED : ACTIONS_IN[state];
  const row = actions.map((action) => {
    const data = encodeCallbackData(action, id);
    if (data === undefined) throw new RangeError("submission id unfit for callback_data");
    return { text: BUTTON_LABELS[action], callback_data: data };
  });
  return { inline_keyboard: [row] };
}

/** The letter of a release button's `callback_data` (`r:<id>`): not a notification's action. */
const RELEASE_LETTER = "r";

/**
 * The keyboard of `/held`'s list: one `📨 Release #<id>` button a row, for the submissions `ids`
 * the learned spam filter held (`SPAM_FILTER=hold`); ids unfit for `callback_data` are left out.
 */
export function releaseKeyboard(ids: readonly string[]): InlineKeyboard {
  return {
    inline_keyboard: ids.filter((id) => ID_SHAPE.test(id)).map((id) => [
      { text: `📨 Release #${id}`, callback_data: `${RELEASE_LETTER}:${id}` },
    ]),
  };
}

/** The submission id of a release button's `callback_data`, strictly; else `undefined`. */
export function parseReleaseData(data: string): string | undefined {
  const match = DATA_SHAPE.exec(data);
  return match?.[1] === RELEASE_LETTER ? match[2] : undefined;
}

/** Starts every state line (an em dash and a space); see {@linkcode stateLine}. */
export const STATE_LINE_MARKER = "— ";

/** What the state line says for each state (`open`: it was reopened, or marked not spam). */
const STATE_WORDS: Readonly<Record<MessageState, string>> = {
  handled: "✓ Handled",
  spam: "🚫 Spam",
  open: "↩ Reopened",
};

/** The longest name a state line carries, in code points. */
const MAX_NAME = 64;

/**
 * The line a notification ends with after an action:
 * `"— ✓ Handled by Anna, 2026-11-25 18:40 UTC"` (`🚫 Spam`, or `↩ Reopened` for `open`). `byName`
 * is flattened to one line (control, line-separator and bidi characters become spaces) and cut to
 * 64 code points; `at` is the time as the caller formats it.
 */
export function stateLine(state: MessageState, byName: string, at: string): string {
  return `${STATE_LINE_MARKER}${STATE_WORDS[state]} by ${_flat(byName, MAX_NAME) || "?"}, ${
    _flat(at, 40)
  }`;
}

/** A last line {@linkcode stateLine} wrote: the marker, then one of its state words and " by ". */
const STATE_LINE = new RegExp(
  `^${STATE_LINE_MARKER}(?:${Object.values(STATE_WORDS).join("|")}) by `,
  "u",
);

/**
 * `text` (a notification's current text) with its state line set to `line`: a state line already
 * there (the last line, after a blank line, starting as {@linkcode stateLine} writes it) is
 * replaced, else `line` is appended after a blank line; `undefined` removes it. The result is at
 * most {@linkcode MAX_MESSAGE_LENGTH} UTF-16 units: the body is cut and ends in `…` when needed,
 * never the state line. `replaces` false: the text has no state line of contactd's yet (the owner
 * never acted on it), so a last line that only looks like one (the sender's) stays.
 */
export function withStateLine(
  text: string,
  line: string | undefined,
  replaces: boolean = true,
): string {
  const body = replaces ? _withoutStateLine(text) : text;
  if (line === undefined) return _cut(body, MAX_MESSAGE_LENGTH);
  const tail = `\n\n${_flat(line, 200)}`;
  const room = MAX_MESSAGE_LENGTH - tail.length;
  return `${_cut(body, room)}${tail}`;
}

/** `text` without a trailing state line (and the blank line before it). */
function _withoutStateLine(text: string): string {
  const cut = text.lastIndexOf("\n\n");
  if (cut < 0) return text;
  const last = text.slice(cut + 2);
  return !last.includes("\n") && STATE_LINE.test(last) ? text.slice(0, cut) : text;
}

/** At most `max` UTF-16 units: cut, ending in `…`, never splitting a surrogate pair. */
function _cut(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max - 1)).replace(/[\uD800-\uDBFF]$/, "")}…`;
}

/** One line of at most `max` code points: control, separator and bidi characters as spaces. */
function _flat(text: string, max: number): string {
  const flat = text.toWellFormed()
    .replace(/[\p{Cc}\u2028\u2029\u200E\u200F\u202A-\u202E\u2066-\u2069\u061C]+/gu, " ")
    .trim();
  const points = [...flat];
  return points.length <= max ? flat : `${points.slice(0, max - 1).join("")}…`;
}
