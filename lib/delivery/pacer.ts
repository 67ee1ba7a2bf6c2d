/**
 * Pacing the bot's messages under Telegram's published limits instead of tripping them: about one
 * message per second to one chat (a short burst allowed), 20 per minute to a group, supergroup or
 * channel, 30 per second overall; and a pause when the API asked for one (`429 retry_after`).
 *
 * @module
 */

/** The limits a {@linkcode Pacer} keeps, each as "at most `count` in any `windowMs`". */
export interface PacerLimits {
  /** One chat: a token bucket of `burst` messages, refilled one per `intervalMs`. */
  readonly chat: { readonly burst: number; readonly intervalMs: number };
  /** A group, supergroup or channel (negative chat id): at most `count` per `windowMs`. */
  readonly group: { readonly count: number; readonly windowMs: number };
  /** All chats together: at most `count` per `windowMs`. */
  readonly overall: { readonly count: number; readonly windowMs: number };
  /**
   * The chat actions' calls (edits, answers: lib/delivery/queue.ts `call`) to one chat: at most
   * this share of what the chat may take in any `group.windowMs` (a group: of its `group.count`;
   * another chat: of a message per `chat.intervalMs`), so notifications always keep the rest.
   */
  readonly callShare: number;
}

/** The pacer's chat for calls that are no message to a chat (toasts): no notification goes there. */
export const CALLS_ONLY_CHAT = 0;

/**
 * Telegram's published limits, each kept with a margin: the Bot API measures when a request
 * arrives, and arrivals jitter by the round trip. The bucket allows 3 where Telegram tolerates a
 * few more, and the windows are a little longer than a minute and a second.
 */
export const TELEGRAM_LIMITS: PacerLimits = {
  chat: { burst: 3, intervalMs: 1000 },
  group: { count: 20, windowMs: 61_000 },
  overall: { count: 30, windowMs: 1050 },
  callShare: 0.5,
};

/**
 * When the next message may go. Times are milliseconds on one monotonic clock that the caller
 * passes in (`performance.now()`), so nothing here reads a clock or sleeps.
 */
export class Pacer {
  readonly #limits: PacerLimits;
  /** Per chat: tokens left at `at`. */
  readonly #buckets = new Map<number, { tokens: number; at: number }>();
  /** Per group chat: send times within the window, oldest first. */
  readonly #groups = new Map<number, number[]>();
  #overall: number[] = [];
  /** Per chat: when the last message went. */
  readonly #last = new Map<number, number>();
  /** Per chat: the calls' send times within `group.windowMs`, oldest first. */
  readonly #calls = new Map<number, number[]>();
  #pausedUntil = -Infinity;

  /** A pacer keeping `limits` (default {@linkcode TELEGRAM_LIMITS}). */
  constructor(limits: PacerLimits = TELEGRAM_LIMITS) {
    this.#limits = limits;
  }

  /** Until when the API asked us to send nothing (`-Infinity` when never). */
  get pausedUntil(): number {
    return this.#pausedUntil;
  }

  /** Sends nothing before `until` (a `429`'s `retry_after`); a shorter pause never shortens it. */
  pause(until: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, until);
  }

  /** The earliest time, at or after `now`, that one message to `chatId` may go. */
  readyAt(chatId: number, now: number): number {
    return this.#readyAfter(chatId, 1, now);
  }

  /**
   * The earliest time the last of `count` more messages to `chatId` may go if each goes as soon
   * as it may (what a message waiting behind `count - 1` others can expect).
   */
  readyAfter(chatId: number, count: number, now: number): number {
    return this.#readyAfter(chatId, count, now);
  }

  /**
   * The earliest time, at or after `now`, that is an even step after the last message to
   * `chatId`: `group.windowMs / group.count` for a group, `chat.intervalMs` for another chat.
   * What a backlog keeps to, so it never fills a chat's budget in one burst.
   */
  evenAt(chatId: number, now: number): number {
    const { chat, group } = this.#limits;
    const last = this.#last.get(chatId);
    if (last === undefined) return now;
    return Math.max(now, last + (chatId < 0 ? group.windowMs / group.count : chat.intervalMs));
  }

  /**
   * The earliest time, at or after `now`, that `chatId`'s share for calls
   * ({@linkcode PacerLimits.callShare}) has room for one more; {@linkcode CALLS_ONLY_CHAT} always
   * has. Says nothing about the chat's other limits ({@linkcode Pacer.readyAt}).
   */
  callReadyAt(chatId: number, now: number): number {
    if (chatId === CALLS_ONLY_CHAT) return now;
    return windowFree(this.#calls.get(chatId) ?? [], this.#callLimit(chatId), now);
  }

  /** How many calls `chatId` may take in any `group.windowMs`: its share, at least one. */
  #callLimit(chatId: number): { readonly count: number; readonly windowMs: number } {
    const { chat, group, callShare } = this.#limits;
    const capacity = chatId < 0 ? group.count : group.windowMs / chat.intervalMs;
    return { count: Math.max(1, Math.floor(capacity * callShare)), windowMs: group.windowMs };
  }

  /**
   * Records one message sent to `chatId` at `now` (each part of a split text is one); `call`: a
   * chat action's call, counted against the chat's share for calls too.
   */
  sent(chatId: number, now: number, call = false): void {
    const { group, overall } = this.#limits;
    const bucket = this.#bucket(chatId, now);
    bucket.tokens -= 1;
    this.#last.set(chatId, now);
    if (call) push(this.#calls, chatId, now, group);
    if (chatId < 0) push(this.#groups, chatId, now, group);
    this.#overall.push(now);
    trim(this.#overall, now, overall.windowMs);
  }

  #bucket(chatId: number, now: number): { tokens: number; at: number } {
    const { burst, intervalMs } = this.#limits.chat;
    const bucket = this.#buckets.get(chatId) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + Math.max(0, now - bucket.at) / intervalMs);
    bucket.at = Math.max(bucket.at, now);
    this.#buckets.set(chatId, bucket);
    return bucket;
  }

  #readyAfter(chatId: number, count: number, now: number): number {
    const { chat, group, overall } = this.#limits;
    const refill = (tokens: number, ms: number) =>
      Math.min(chat.burst, tokens + Math.max(0, ms) / chat.intervalMs);
    const stored = this.#buckets.get(chatId);
    let t = Math.max(now, this.#pausedUntil);
    let tokens = stored === undefined ? chat.burst : refill(stored.tokens, t - stored.at);
    const groupTimes = chatId < 0 ? [...(this.#groups.get(chatId) ?? [])] : [];
    const overallTimes = [...this.#overall];
    // Sends each of the `count` messages, on paper, as early as every limit allows.
    for (let i = 0; i < count; i++) {
      if (tokens < 1) {
        t += (1 - tokens) * chat.intervalMs;
        tokens = 1;
      }
      let free = windowFree(overallTimes, overall, t);
      if (chatId < 0) free = Math.max(free, windowFree(groupTimes, group, t));
      if (free > t) {
        tokens = refill(tokens, free - t);
        t = free;
      }
      tokens -= 1;
      if (chatId < 0) groupTimes.push(t);
      overallTimes.push(t);
    }
    return t;
  }
}

/** When one more send fits in `times` (ascending) under "at most `count` per `windowMs`". */
function windowFree(
  times: readonly number[],
  limit: { readonly count: number; readonly windowMs: number },
  at: number,
): number {
  let inWindow = 0;
  for (let i = times.length - 1; i >= 0 && times[i]! > at - limit.windowMs; i--) inWindow++;
  if (inWindow < limit.count) return at;
  // The send that must leave the window first: the count-th newest.
  return times[times.length - limit.count]! + limit.windowMs;
}

function push(
  map: Map<number, number[]>,
  chatId: number,
  now: number,
  limit: { readonly count: number; readonly windowMs: number },
): void {
  const times = map.get(chatId) ?? [];
  times.push(now);
  trim(times, now, limit.windowMs);
  map.set(chatId, times);
}

/** Drops the times that have left the window. */
function trim(times: number[], now: number, windowMs: number): void {
  let drop = 0;
  while (drop < times.length && times[drop]! <= now - windowMs) drop++;
  if (drop > 0) times.splice(0, drop);
}
