/**
 * The request budgets per client address: how many POSTs and challenges one address may ask
 * for in a window, and how many addresses each limiter holds. The service builds its limiters
 * from these; the tests import them.
 *
 * @module
 */
import type { RateLimit } from "../config/config.ts";
import type { RateLimiterOptions } from "../net/rate_limit.ts";

/**
 * Most client addresses the POSTs' limiter holds at once (the least recently seen is dropped
 * beyond it): 1,000,000, room for a flood from a whole IPv6 range counted per /64.
 */
export const POST_MAX_ADDRESSES = 1_000_000;

/**
 * The POSTs' limiter keeps one 4-byte time per admitted POST for each address it holds: at most
 * this many in all (the default 5 per address times {@linkcode POST_MAX_ADDRESSES}), so a larger
 * `RATE_LIMIT` holds fewer addresses instead of taking more memory (about 20 MiB of times).
 */
export const POST_TIMESTAMP_SLOTS = 5_000_000;

/**
 * `POST /api/contact`: `RATE_LIMIT` POSTs per client address in any window (by default 5 in
 * 60 s; the next is answered `429` with `Retry-After`), over at most
 * {@linkcode POST_MAX_ADDRESSES} addresses, fewer when the limit is above 5 (at most
 * {@linkcode POST_TIMESTAMP_SLOTS} times held in all: `100/1h` holds 50,000 addresses).
 */
export function postBudget(rate: RateLimit): RateLimiterOptions {
  const maxEntries = Math.min(POST_MAX_ADDRESSES, Math.floor(POST_TIMESTAMP_SLOTS / rate.limit));
  return { limit: rate.limit, windowMs: rate.windowMs, maxEntries };
}

/**
 * `GET /api/challenge`: 30 per client address in any 60 s, a budget of its own (fetching
 * challenges never uses up the POSTs'). Fewer addresses than the POSTs' are held (30 times
 * are kept per address): an evicted address only gets more challenges, each of which still
 * costs a solve.
 */
export const CHALLENGE_BUDGET: RateLimiterOptions = Object.freeze({
  limit: 30,
  windowMs: 60_000,
  maxEntries: 250_000,
});
