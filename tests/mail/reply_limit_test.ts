import assert from "node:assert/strict";
import { checkReplyLimit } from "../../lib/mail/reply_limit.ts";

const HOUR = 3_600_000;
const NOW = Date.parse("2026-11-22T14:00:00Z");
const at = (msBefore: number) => new Date(NOW - msBefore).toISOString();

Deno.test("replies under the limit in the window are accepted", () => {
  assert.deepEqual(checkReplyLimit([], NOW, { limit: 1, windowMs: HOUR }), { ok: true });
  const times = Array.from({ length: 19 }, (_, i) => at(i * 1000));
  assert.deepEqual(checkReplyLimit(times, NOW, { limit: 20, windowMs: HOUR }), { ok: true });
});

Deno.test("the reply over the limit is refused until the oldest counted one leaves the window", () => {
  const times = [at(50 * 60_000), at(40 * 60_000), at(10 * 60_000)];
  assert.deepEqual(checkReplyLimit(times, NOW, { limit: 3, windowMs: HOUR }), {
    ok: false,
    retryAfterMs: 10 * 60_000,
  });
  assert.deepEqual(checkReplyLimit(times, NOW, { limit: 2, windowMs: HOUR }), {
    ok: false,
    retryAfterMs: 20 * 60_000,
  });
});

Deno.test("replies older than the window, or unreadable times, do not count", () => {
  const times = [at(HOUR), at(2 * HOUR), "not a time", at(HOUR - 1)];
  assert.deepEqual(checkReplyLimit(times, NOW, { limit: 2, windowMs: HOUR }), { ok: true });
  assert.equal(checkReplyLimit(times, NOW, { limit: 1, windowMs: HOUR }).ok, false);
});
