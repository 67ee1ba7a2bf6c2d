/**
 * Telegram Bot API client: one generic method call, delivery of a notification as one or more
 * `sendMessage` calls, and the calls of the chat actions (edits, toasts, long polling). Nothing
 * here throws, and the bot token (part of every request URL) never appears in a result.
 *
 * @module
 */

import { splitText } from "./notification.ts";
import type { InlineKeyboard } from "./keyboard.ts";
import { isRecord } from "../common/json.ts";
import { readCapped } from "../common/capped_read.ts";
import { redact } from "../log/redact.ts";
import type { LogFields } from "../log/logger.ts";

/** How to reach the Bot API and which chat to notify. */
export interface TelegramOptions {
  /** API base URL, e.g. `"https://api.telegram.org"`; a trailing slash is tolerated. */
  readonly apiUrl: string;
  /** Bot token; secret. */
  readonly token: string;
  /** Chat to notify; negative for groups. */
  readonly chatId: number;
  /** The chat's forum topic (`MESSENGER_TOPIC_ID`), if any: every part goes there. */
  readonly topicId?: number | undefined;
  /** Limit for each API call, response body included, in milliseconds. */
  readonly timeoutMs: number;
  /** Injected `fetch`, so tests need no network. */
  readonly fetch: typeof fetch;
}

/**
 * The subset of {@linkcode TelegramOptions} that {@linkcode callBotApi} needs, and an optional
 * `signal` that ends the call at once when it aborts (shutdown ending a long poll): the call then
 * resolves `{ ok: false, error: "aborted" }`.
 */
export type BotApiOptions = Pick<TelegramOptions, "apiUrl" | "token" | "timeoutMs" | "fetch"> & {
  readonly signal?: AbortSignal | undefined;
};

/** The Bot API's `ResponseParameters`: why a request failed, if it says. */
export interface ResponseParameters {
  /** The group became a supergroup with this id; use it from now on. */
  readonly migrate_to_chat_id?: number;
  /** Flood control: seconds to wait before repeating the request. */
  readonly retry_after?: number;
}

/** Outcome of {@linkcode callBotApi}. */
export type BotApiResult =
  | { readonly ok: true; readonly result: unknown }
  | {
    readonly ok: false;
    /** Short description without secrets, e.g. `"400 Bad Request: chat not found"` or `"timeout"`. */
    readonly error: string;
    /** The API's `error_code`, else the HTTP status; absent if no reply arrived. */
    readonly errorCode?: number;
    readonly parameters?: ResponseParameters;
  };

/** A failed {@linkcode BotApiResult}. */
export type BotApiFailure = Extract<BotApiResult, { readonly ok: false }>;

/** Outcome of {@linkcode sendNotification}. */
export type DeliveryResult =
  | { readonly ok: true; readonly parts: number }
  | {
    readonly ok: false;
    /** Short description without secrets, as in {@linkcode BotApiResult}. */
    readonly error: string;
    /** The chat was migrated; future notifications should go to this id. */
    readonly migrateToChatId?: number;
  };

/**
 * Sends `text`, split by {@linkcode splitText}, as `sendMessage` calls in order, stopping at the
 * first part that fails; delivered only if every part was accepted. For one-off messages (the
 * `send-test` command): the service's notifications go through the paced queue
 * (lib/delivery/queue.ts), which sends {@linkcode sendMessage} part by part. Never throws.
 */
export async function sendNotification(
  options: TelegramOptions,
  text: string,
): Promise<DeliveryResult> {
  const parts = splitText(text).filter((part) => part.trim() !== "");
  if (parts.length === 0) return { ok: false, error: "empty message" };
  for (const part of parts) {
    const reply = await sendMessage(options, options.chatId, part, options.topicId);
    if (!reply.ok) {
      const migrate = reply.parameters?.migrate_to_chat_id;
      return {
        ok: false,
        error: reply.error,
        ...(migrate === undefined ? {} : { migrateToChatId: migrate }),
      };
    }
  }
  return { ok: true, parts: parts.length };
}

/** What else a {@linkcode sendMessage} may carry. */
export interface SendExtra {
  /** Buttons under the message (`reply_markup`). */
  readonly replyMarkup?: InlineKeyboard | undefined;
  /**
   * The `message_id` (same chat) this message answers (`reply_parameters`); sent anyway, as a
   * plain message, if that message is gone.
   */
  readonly replyTo?: number | undefined;
  /** Sent without sound (`disable_notification`): a notification that looks like spam. */
  readonly silent?: boolean | undefined;
}

/**
 * One `sendMessage` of plain `text` (no `parse_mode`: markup arrives literally) with link
 * previews off (the messenger must not fetch links a stranger typed), into the forum topic
 * `topicId` (`message_thread_id`) when one is given, with `extra`'s buttons and reply. The sent
 * message's id: {@linkcode messageIdOf}. Never throws.
 */
export function sendMessage(
  options: BotApiOptions,
  chatId: number,
  text: string,
  topicId?: number,
  extra?: SendExtra,
): Promise<BotApiResult> {
  const replyTo = extra?.replyTo;
  return callBotApi(options, "sendMessage", {
    chat_id: chatId,
    ...(topicId === undefined ? {} : { message_thread_id: topicId }),
    text,
    link_preview_options: { is_disabled: true },
    ...(extra?.replyMarkup === undefined ? {} : { reply_markup: extra.replyMarkup }),
    ...(extra?.silent === true ? { disable_notification: true } : {}),
    ...(replyTo === undefined
      ? {}
      : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
  });
}

/**
 * The `message_id` of the message a successful `sendMessage` (or `editMessageText`) returned;
 * `undefined` for a failure or a result without a usable one (a positive safe integer).
 */
export function messageIdOf(result: BotApiResult): number | undefined {
  if (!result.ok || !isRecord(result.result)) return undefined;
  const id = result.result.message_id;
  return typeof id === "number" && Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/**
 * `editMessageText`: message `messageId` of `chatId` now reads `text` (plain, link previews off)
 * with `replyMarkup`'s buttons; without `replyMarkup` the message loses its buttons. An edit that
 * changes nothing fails with {@linkcode isNotModified}. Never throws.
 */
export function editMessageText(
  options: BotApiOptions,
  chatId: number,
  messageId: number,
  text: string,
  replyMarkup?: InlineKeyboard,
): Promise<BotApiResult> {
  return callBotApi(options, "editMessageText", {
    chat_id: chatId,
    message_id: messageId,
    text,
    link_preview_options: { is_disabled: true },
    ...(replyMarkup === undefined ? {} : { reply_markup: replyMarkup }),
  });
}

/**
 * `editMessageReplyMarkup`: message `messageId` of `chatId` now has `replyMarkup`'s buttons
 * (`{ inline_keyboard: [] }`: none). Never throws.
 */
export function editMessageReplyMarkup(
  options: BotApiOptions,
  chatId: number,
  messageId: number,
  replyMarkup: InlineKeyboard,
): Promise<BotApiResult> {
  return callBotApi(options, "editMessageReplyMarkup", {
    chat_id: chatId,
    message_id: messageId,
    reply_markup: replyMarkup,
  });
}

/** Telegram's limit for a callback query's answer text, in characters. */
export const MAX_TOAST_LENGTH = 200;

/**
 * `answerCallbackQuery`: the short toast the presser sees (not an alert), `text` cut to
 * {@linkcode MAX_TOAST_LENGTH}. Every press must be answered, or the button keeps spinning.
 * Never throws.
 */
export function answerCallbackQuery(
  options: BotApiOptions,
  queryId: string,
  text: string,
): Promise<BotApiResult> {
  return callBotApi(options, "answerCallbackQuery", {
    callback_query_id: queryId,
    text: oneLine(text, MAX_TOAST_LENGTH),
    show_alert: false,
  });
}

/** `deleteMessage`: message `messageId` of `chatId` goes. Never throws. */
export function deleteMessage(
  options: BotApiOptions,
  chatId: number,
  messageId: number,
): Promise<BotApiResult> {
  return callBotApi(options, "deleteMessage", { chat_id: chatId, message_id: messageId });
}

/** Outcome of {@linkcode getChatAdministrators}. */
export type AdministratorsResult =
  | { readonly ok: true; readonly userIds: readonly number[] }
  | BotApiFailure;

/**
 * `getChatAdministrators`: the user ids of the chat's administrators (the creator included;
 * entries without a usable id skipped). Never throws.
 */
export async function getChatAdministrators(
  options: BotApiOptions,
  chatId: number,
): Promise<AdministratorsResult> {
  const reply = await callBotApi(options, "getChatAdministrators", { chat_id: chatId });
  if (!reply.ok) return reply;
  if (!Array.isArray(reply.result)) {
    return { ok: false, error: "invalid getChatAdministrators reply" };
  }
  const userIds: number[] = [];
  for (const member of reply.result) {
    const id = isRecord(member) && isRecord(member.user) ? member.user.id : undefined;
    if (typeof id === "number" && Number.isSafeInteger(id) && id > 0) userIds.push(id);
  }
  return { ok: true, userIds };
}

/** What {@linkcode getUpdates} asks for. */
export interface GetUpdatesRequest {
  /**
   * The first update wanted: one past the last one handled, which confirms (drops) every earlier
   * one. `undefined`: from the oldest unconfirmed.
   */
  readonly offset?: number | undefined;
  /** How long Telegram may hold the request open waiting for an update, in seconds. */
  readonly timeoutS: number;
  /** The update types wanted (`allowed_updates`), e.g. lib/bot/updates.ts `ALLOWED_UPDATES`. */
  readonly allowedUpdates: readonly string[];
}

/** Outcome of {@linkcode getUpdates}: the raw updates (lib/bot/updates.ts reads them). */
export type GetUpdatesResult =
  | { readonly ok: true; readonly updates: readonly unknown[] }
  | BotApiFailure;

/**
 * One long poll (`getUpdates`): answered at once when updates wait, else after up to
 * `timeoutS` seconds. Its time limit is its own, `timeoutS` seconds plus `options.timeoutMs`
 * (the long poll's wait plus an ordinary call's), not `timeoutMs` alone; `options.signal` ends it
 * at once. A `409` ({@linkcode isConflict}) means a webhook is set or another process polls.
 * Never throws.
 */
export async function getUpdates(
  options: BotApiOptions,
  request: GetUpdatesRequest,
): Promise<GetUpdatesResult> {
  const timeoutS = Number.isFinite(request.timeoutS)
    ? Math.max(0, Math.floor(request.timeoutS))
    : 0;
  const reply = await callBotApi(
    { ...options, timeoutMs: timeoutS * 1000 + options.timeoutMs },
    "getUpdates",
    {
      ...(request.offset === undefined ? {} : { offset: request.offset }),
      timeout: timeoutS,
      allowed_updates: request.allowedUpdates,
    },
  );
  if (!reply.ok) return reply;
  if (!Array.isArray(reply.result)) return { ok: false, error: "invalid getUpdates reply" };
  return { ok: true, updates: reply.result };
}

/**
 * True for the `400 message is not modified` of an edit that changes nothing: the message
 * already says that (an action repeated, a press redelivered), so the edit did its job.
 */
export function isNotModified(
  result: BotApiResult | GetUpdatesResult | AdministratorsResult,
): boolean {
  return !result.ok && result.errorCode === 400 && /message is not modified/i.test(result.error);
}

/**
 * True for a `409 Conflict` from `getUpdates`: a webhook is set (`deleteWebhook` removes it) or
 * another process polls the same bot.
 */
export function isConflict(
  result: BotApiResult | GetUpdatesResult | AdministratorsResult,
): boolean {
  return !result.ok && result.errorCode === 409;
}

/** Who the bot is (`getMe`), or why that could not be asked. */
export type BotIdentity =
  | { readonly ok: true; readonly username: string; readonly id: number }
  | {
    readonly ok: false;
    /** As in {@linkcode BotApiResult}: no secret. */
    readonly error: string;
    /** Telegram refused the token (`401`, or `404` for one it cannot even route). */
    readonly tokenRefused: boolean;
  };

/** What to do about a token Telegram refuses, for the lines that report it. */
export const TOKEN_REFUSED_HINT = "wrong or revoked token: ask @BotFather";

/** True when a failed call says the token itself is refused. */
export function isTokenRefused(result: BotApiResult & { ok: false }): boolean {
  return result.errorCode === 401 || result.errorCode === 404;
}

/** One `getMe`: the bot's username and id. Never throws. */
export async function getMe(options: BotApiOptions): Promise<BotIdentity> {
  const reply = await callBotApi(options, "getMe", {});
  if (!reply.ok) return { ok: false, error: reply.error, tokenRefused: isTokenRefused(reply) };
  const bot = isRecord(reply.result) ? reply.result : {};
  if (typeof bot.username !== "string" || !Number.isSafeInteger(bot.id)) {
    return { ok: false, error: "invalid getMe reply", tokenRefused: false };
  }
  return { ok: true, username: bot.username, id: bot.id as number };
}

/**
 * What the service says about its start-up `getMe`: the `bot` field of its `listening` line, or
 * one line saying what is wrong. A refused token is an error with the fix (the service still
 * starts and stores, and delivers once the token is right and it restarts); any other failure
 * (network, timeout) a warning: delivery tries again by itself.
 */
export function botCheckReport(
  identity: BotIdentity,
): { readonly bot: string } | { readonly level: "error" | "warn"; readonly fields: LogFields } {
  if (identity.ok) return { bot: `@${identity.username}` };
  if (identity.tokenRefused) {
    return {
      level: "error",
      fields: {
        event: "bot_token_refused",
        error: identity.error,
        hint: "Telegram refused MESSENGER_BOT_TOKEN (wrong or revoked): copy the bot's token " +
          "from @BotFather into it and restart; messages are stored meanwhile",
      },
    };
  }
  return { level: "warn", fields: { event: "bot_check_failed", error: identity.error } };
}

/** How a failed call bears on what comes next. */
export type FailureKind =
  /** `429`: flood control; nothing may be sent before its `retry_after` has passed. */
  | "flood"
  /**
   * The settings are wrong until the operator fixes them: the token (`401`, `404`), the chat
   * (`400` chat not found, a group that became a supergroup, a missing topic) or the bot's place
   * in it (`403`: blocked by the user, kicked from the group; `400`: no right to post).
   */
  | "settings"
  /**
   * Any other `400 Bad Request` in the API's own words: this request as written is refused
   * (`message is too long`, `message text is empty`, `can't parse entities`), and sending it again
   * unchanged gets the same answer. It belongs to the one message, not to the API's health.
   */
  | "message"
  /** Anything else (timeouts, network errors, `5xx`, odd replies): worth trying again later. */
  | "other";

/** `400` descriptions that are about the chat (or the bot's rights in it), not one message. */
const CHAT_PROBLEMS =
  /chat not found|chat_id is empty|upgraded to a supergroup|not enough rights|have no rights|administrator rights|chat_write_forbidden|thread not found|topic_closed|topic_deleted/i;

/**
 * A `400` in the API's own words (its JSON `description`): a proxy's HTML `400` is not the
 * message's fault.
 */
const API_BAD_REQUEST = /^400 Bad Request: /;

/** Classifies a failed Bot API call; see {@linkcode FailureKind}. */
export function failureKind(result: BotApiResult & { ok: false }): FailureKind {
  const code = result.errorCode;
  if (code === 429) return "flood";
  if (code === 401 || code === 403 || code === 404) return "settings";
  if (
    code === 400 &&
    (result.parameters?.migrate_to_chat_id !== undefined || CHAT_PROBLEMS.test(result.error))
  ) {
    return "settings";
  }
  return code === 400 && API_BAD_REQUEST.test(result.error) ? "message" : "other";
}

/** The longest pause a `429` may impose, in seconds: an hour. */
export const MAX_FLOOD_PAUSE_S = 3600;
/** The pause for a `429` without a usable `retry_after`, in seconds. */
export const DEFAULT_FLOOD_PAUSE_S = 5;

/** A `retry_after` beyond this (a day) is not a pause anyone meant: treated as malformed. */
export const ABSURD_FLOOD_PAUSE_S = 86_400;

/**
 * How long a `429` pauses sending, in seconds: its `retry_after`, at most an hour; a missing,
 * malformed or absurd one (over a day, `1e300`) counts as {@linkcode DEFAULT_FLOOD_PAUSE_S}.
 * `adjusted` says when the API's value was not taken as it was (worth a log line).
 */
export function floodPause(
  parameters: ResponseParameters | undefined,
): { readonly seconds: number; readonly adjusted?: "missing" | "absurd" | "capped" } {
  const asked = parameters?.retry_after;
  if (asked === undefined) return { seconds: DEFAULT_FLOOD_PAUSE_S, adjusted: "missing" };
  if (!(asked <= ABSURD_FLOOD_PAUSE_S)) {
    return { seconds: DEFAULT_FLOOD_PAUSE_S, adjusted: "absurd" };
  }
  if (asked > MAX_FLOOD_PAUSE_S) return { seconds: MAX_FLOOD_PAUSE_S, adjusted: "capped" };
  return { seconds: asked };
}

/**
 * POSTs `params` as JSON to `{apiUrl}/bot{token}/{method}` and interprets
 * the reply. The whole exchange, body included, is bounded by `timeoutMs`
 * (`error: "timeout"`) and ends at once when `options.signal` aborts
 * (`error: "aborted"`, fetch not even called if it already had).
 * Never throws; the token never appears in the result.
 */
export function callBotApi(
  options: BotApiOptions,
  method: string,
  params: Record<string, unknown>,
): Promise<BotApiResult> {
  let body: string;
  try {
    body = JSON.stringify(params);
  } catch {
    return Promise.resolve({ ok: false, error: "invalid request parameters" });
  }
  return callBotApiWith(options, method, () => ({ body, type: "application/json" }));
}

/** A request body for {@linkcode callBotApiWith}: its bytes (or stream), type and length. */
export interface BotApiBody {
  readonly body: string | ReadableStream<Uint8Array>;
  readonly type: string;
  /** Its length in bytes, sent as `Content-Length` (a stream's, which fetch cannot know). */
  readonly length?: number;
}

/**
 * {@linkcode callBotApi} with a body of the caller's (lib/bot/document.ts: a file's upload),
 * made when the call starts: the same limits, the same answers. Never throws.
 */
export async function callBotApiWith(
  options: BotApiOptions,
  method: string,
  makeBody: () => BotApiBody,
): Promise<BotApiResult> {
  const outer = options.signal;
  if (outer?.aborted === true) return { ok: false, error: "aborted" };
  const controller = new AbortController();
  let why: "timeout" | "aborted" | undefined;
  const timer = setTimeout(() => {
    why ??= "timeout";
    controller.abort();
  }, options.timeoutMs);
  const onAbort = () => {
    why ??= "aborted";
    controller.abort();
  };
  outer?.addEventListener("abort", onAbort, { once: true });
  try {
    // Racing the abort too: an injected fetch may ignore the signal.
    return await Promise.race([
      exchange(options, method, makeBody(), controller.signal),
      aborted(controller.signal),
    ]);
  } catch (error) {
    if (controller.signal.aborted) return { ok: false, error: why ?? "timeout" };
    return { ok: false, error: describeFailure(error, options.token) };
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onAbort);
  }
}

async function exchange(
  options: BotApiOptions,
  method: string,
  { body, type, length }: BotApiBody,
  signal: AbortSignal,
): Promise<BotApiResult> {
  const url = `${options.apiUrl.replace(/\/+$/, "")}/bot${options.token}/${method}`;
  const doFetch = options.fetch; // called unbound, like the global fetch
  const response = await doFetch(url, {
    method: "POST",
    headers: length === undefined
      ? { "content-type": type }
      : { "content-type": type, "content-length": String(length) },
    body,
    signal,
  });
  if (!(response instanceof Response)) return { ok: false, error: "invalid reply" };
  const reply = await readCapped(response, MAX_REPLY_BYTES);
  if (!reply.ok) {
    return { ok: false, error: `${response.status} reply too large`, errorCode: response.status };
  }
  const text = new TextDecoder().decode(reply.bytes);
  return interpret(response.status, response.statusText, text, options.token);
}

/**
 * The largest Bot API reply read, in bytes. Real replies are a few kilobytes (`getUpdates` with
 * 100 updates some tens); anything larger is a broken or hostile API, refused before it is held.
 */
export const MAX_REPLY_BYTES = 1 << 20;

/** Rejects once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    signal.addEventListener("abort", () => reject(new DOMException("timeout", "TimeoutError")), {
      once: true,
    });
  });
}

/** Maps an HTTP reply to a result; the Bot API answers `{ok, result}` or `{ok, error_code, description, parameters}`. */
function interpret(status: number, statusText: string, text: string, token: string): BotApiResult {
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    const reason = oneLine(redact(statusText, token), 40).toLowerCase();
    return {
      ok: false,
      error: `${status}${reason ? ` ${reason}` : ""} (non-JSON reply)`,
      errorCode: status,
    };
  }
  if (!isRecord(reply) || typeof reply.ok !== "boolean" || (reply.ok && !("result" in reply))) {
    return { ok: false, error: `${status} invalid reply`, errorCode: status };
  }
  if (reply.ok) return { ok: true, result: reply.result };
  const code = Number.isSafeInteger(reply.error_code) ? reply.error_code as number : status;
  const description = typeof reply.description === "string"
    ? oneLine(redact(reply.description, token), 200)
    : "unknown error";
  const parameters = readParameters(reply.parameters);
  return {
    ok: false,
    error: redact(description ? `${code} ${description}` : `${code}`, token),
    errorCode: code,
    ...(parameters === undefined ? {} : { parameters }),
  };
}

/** Keeps only well-formed parameters: ids are safe integers, waits finite and ≥ 0. */
function readParameters(value: unknown): ResponseParameters | undefined {
  if (!isRecord(value)) return undefined;
  const migrate = value.migrate_to_chat_id;
  const retry = value.retry_after;
  const parameters: { migrate_to_chat_id?: number; retry_after?: number } = {};
  if (typeof migrate === "number" && Number.isSafeInteger(migrate)) {
    parameters.migrate_to_chat_id = migrate;
  }
  if (typeof retry === "number" && Number.isFinite(retry) && retry >= 0) {
    parameters.retry_after = retry;
  }
  return Object.keys(parameters).length > 0 ? parameters : undefined;
}

/**
 * Names the kind of a fetch failure. Deno throws `TypeError("fetch failed")`
 * whose `cause` quotes the request URL, token included: messages are only
 * inspected (after redaction), never returned.
 */
function describeFailure(error: unknown, token: string): string {
  let messages = "";
  let notCapable = false;
  try {
    for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
      notCapable ||= e instanceof Deno.errors.NotCapable;
      messages += ` ${redact(e instanceof Error ? e.message : String(e), token).toLowerCase()}`;
      e = e instanceof Error ? e.cause : undefined;
    }
  } catch {
    // A hostile error object (throwing getters): the generic kind will do.
  }
  // Deno refuses some ports outright (fetch's "bad ports": 6000 is X11, 25 SMTP, ...).
  const blocked = /requests to port (\d{1,5}) are blocked/.exec(messages);
  if (blocked !== null) return `network error: port ${blocked[1]} blocked by the runtime`;
  if (notCapable) return "network error: not permitted (grant --allow-net to the API's host:port)";
  if (messages.includes("connection refused")) return "network error: connection refused";
  if (/connection (reset|closed)|broken pipe/.test(messages)) {
    return "network error: connection reset";
  }
  // Deno's words for a reply whose body stopped before its declared end.
  if (/error reading a body|unexpected eof|incomplete/.test(messages)) {
    return "network error: reply cut off";
  }
  if (/dns error|failed to lookup|name or service not known/.test(messages)) {
    return "network error: dns error";
  }
  if (/certificate|tls/.test(messages)) return "network error: tls error";
  return "network error";
}

/** Collapses whitespace and control characters to single spaces and caps the length. */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/[\s\p{Cc}]+/gu, " ").trim();
  if (flat.length <= max) return flat;
  // Drop a high surrogate the cut would leave without its partner.
  return `${flat.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, "")}…`;
}
