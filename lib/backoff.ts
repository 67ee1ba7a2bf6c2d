/**
 * Flood-control back-off: once the Bot API has asked us (429 `retry_after`) to wait longer than
 * we wait in place, no call is made until that time has passed. Submissions meanwhile fail
 * delivery at once (and are still recorded by the caller), instead of each holding a request
 * open on an API that has said no, and prolonging the ban.
 *
 * @module
 */
import type { Deliver } from "./telegram.ts";

/**
 * Wraps `deliver`. A failed delivery that carries `retryAfterSeconds` opens a window of that
 * length, measured from when the answer arrived; calls made inside it are not forwarded and
 * fail with `"rate limited by the messenger, retry after N s"`. A call exactly at the window's
 * end is forwarded. `now` is a clock in milliseconds; a monotonic one (`performance.now`)
 * keeps wall-clock jumps out of it.
 */
export function withBackoff(deliver: Deliver, now: () => number): Deliver {
  let until = -Infinity;
  return async (text) => {
    const start = now();
    if (start < until) {
      const seconds = Math.ceil((until - start) / 1000);
      return { ok: false, error: `rate limited by the messenger, retry after ${seconds} s` };
    }
    const result = await deliver(text);
    if (!result.ok && result.retryAfterSeconds !== undefined) {
      until = Math.max(until, now() + result.retryAfterSeconds * 1000);
    }
    return result;
  };
}
