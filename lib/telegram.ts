/**
 * Telegram Bot API client: one generic method call, and delivery of a
 * notification as one or more `sendMessage` calls. Nothing here throws, and
 * the bot token (part of every request URL) never appears in a result.
 *
 * @module
 */

import { splitText } from "./notification.ts";
import { isRecord } from "./json.ts";
import { redact } from "./redact.ts";

/** How to reach the Bot API and which chat to notify. */
export interface TelegramOptions {
  /** API base URL, e.g. `"https://api.telegram.org"`; a trailing slash is tolerated. */
  readonly apiUrl: string;
  /** Bot token; secret. */
  readonly token: string;
  /** Chat to notify; negative for groups. */
  readonly chatId: number;
  /** Limit for each API call, response body included, in milliseconds. */
  readonly timeoutMs: number;
  /** Injected `fetch`, so tests need no network. */
  readonly fetch: typeof fetch;
  /** Injected sleep, so tests need no waiting. */
  readonly sleep: (ms: number) => Promise<void>;
  /** Longest flood-control wait honoured in place, in seconds; default 5. */
  readonly maxRetryAfterSeconds?: number;
}

/** The subset of {@linkcode TelegramOptions} that {@linkcode callBotApi} needs. */
export type BotApiOptions = Pick<TelegramOptions, "apiUrl" | "token" | "timeoutMs" | "fetch">;

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

/** Outcome of {@linkcode sendNotification}. */
export type DeliveryResult =
  | { readonly ok: true; readonly parts: number }
  | {
    readonly ok: false;
    /** Short description without secrets, as in {@linkcode BotApiResult}. */
    readonly error: string;
    /** The chat was migrated; future notifications should go to this id. */
    readonly migrateToChatId?: number;
    /** Flood control asked for a longer wait than we take in place. */
    readonly retryAfterSeconds?: number;
  };

/** Sends a notification text. */
export type Deliver = (text: string) => Promise<DeliveryResult>;

/**
 * Sends `text`, split by {@linkcode splitText}, as `sendMessage` calls in
 * order, stopping at the first part that fails. Delivered only if every part
 * was accepted. Parts that are only whitespace are skipped, since Telegram
 * rejects them as empty; text with nothing else fails as `"empty message"`
 * without any call. A 429 asking to wait at most `maxRetryAfterSeconds` is
 * waited out and that part retried once. Never throws.
 */
export async function sendNotification(
  options: TelegramOptions,
  text: string,
): Promise<DeliveryResult> {
  const parts = splitText(text).filter((part) => part.trim() !== "");
  if (parts.length === 0) return { ok: false, error: "empty message" };
  const maxWait = options.maxRetryAfterSeconds ?? 5;
  for (const part of parts) {
    const params = {
      chat_id: options.chatId,
      text: part,
      link_preview_options: { is_disabled: true },
    };
    let reply = await callBotApi(options, "sendMessage", params);
    const wait = reply.ok || reply.errorCode !== 429 ? undefined : reply.parameters?.retry_after;
    if (wait !== undefined && wait <= maxWait) {
      try {
        await options.sleep(wait * 1000);
      } catch {
        // A broken sleep only costs us the wait; the retry may still succeed.
      }
      reply = await callBotApi(options, "sendMessage", params);
    }
    if (!reply.ok) {
      const migrate = reply.parameters?.migrate_to_chat_id;
      const retryAfter = reply.parameters?.retry_after;
      return {
        ok: false,
        error: reply.error,
        ...(migrate === undefined ? {} : { migrateToChatId: migrate }),
        ...(retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter }),
      };
    }
  }
  return { ok: true, parts: parts.length };
}

/**
 * POSTs `params` as JSON to `{apiUrl}/bot{token}/{method}` and interprets
 * the reply. The whole exchange, body included, is bounded by `timeoutMs`.
 * Never throws; the token never appears in the result.
 */
export async function callBotApi(
  options: BotApiOptions,
  method: string,
  params: Record<string, unknown>,
): Promise<BotApiResult> {
  let body: string;
  try {
    body = JSON.stringify(params);
  } catch {
    return { ok: false, error: "invalid request parameters" };
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  try {
    // Racing the abort too: an injected fetch may ignore the signal.
    return await Promise.race([
      exchange(options, method, body, controller.signal),
      aborted(controller.signal),
    ]);
  } catch (error) {
    if (controller.signal.aborted) return { ok: false, error: "timeout" };
    return { ok: false, error: describeFailure(error, options.token) };
  } finally {
    clearTimeout(timer);
  }
}

async function exchange(
  options: BotApiOptions,
  method: string,
  body: string,
  signal: AbortSignal,
): Promise<BotApiResult> {
  const url = `${options.apiUrl.replace(/\/+$/, "")}/bot${options.token}/${method}`;
  const doFetch = options.fetch; // called unbound, like the global fetch
  const response = await doFetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
    signal,
  });
  if (!(response instanceof Response)) return { ok: false, error: "invalid reply" };
  const text = await response.text();
  return interpret(response.status, response.statusText, text, options.token);
}

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
  try {
    for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
      messages += ` ${redact(e instanceof Error ? e.message : String(e), token).toLowerCase()}`;
      e = e instanceof Error ? e.cause : undefined;
    }
  } catch {
    // A hostile error object (throwing getters): the generic kind will do.
  }
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
