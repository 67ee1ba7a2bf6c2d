/**
 * The limit on outgoing replies (`REPLY_LIMIT`, `<count>/<window>` like `RATE_LIMIT`; default
 * `20/1h`), checked when the owner's reply is accepted: over it, the reply is refused with a
 * clear answer and nothing is stored or sent, so a compromised chat cannot make contactd a mass
 * mailer. The replies counted are those in the replies file (waiting and done), so the limit
 * holds across restarts. Pure.
 *
 * @module
 */
import type { RateLimit } from "../config/config.ts";

/** At most `limit` replies accepted in any `windowMs` (`REPLY_LIMIT`, lib/config/config.ts). */
export type ReplyLimit = RateLimit;

/** Whether another reply may be accepted now, and if not, when the oldest counted one leaves. */
export type ReplyLimitCheck =
  | { readonly ok: true }
  | { readonly ok: false; readonly retryAfterMs: number };

/**
 * Whether a reply accepted at `nowMs` (wall clock) stays within `limit`, given the acceptance
 * times (`ts` of the replies file's waiting and done replies, ISO 8601): fewer than
 * `limit.limit` of them in the window ending now. When over, `retryAfterMs` is when the oldest
 * one in the window leaves it.
 */
export function checkReplyLimit(
  acceptedTs: Iterable<string>,
  nowMs: number,
  limit: ReplyLimit,
): ReplyLimitCheck {
  const since = nowMs - limit.windowMs;
  const inWindow = [...acceptedTs].map((ts) => Date.parse(ts))
    .filter((ms) => Number.isFinite(ms) && ms > since && ms <= nowMs)
    .sort((a, b) => a - b);
  if (inWindow.length < limit.limit) return { ok: true };
  const leaves = inWindow[inWindow.length - limit.limit]! + limit.windowMs;
  return { ok: false, retryAfterMs: Math.max(1000, leaves - nowMs) };
}
