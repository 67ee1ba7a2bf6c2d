import assert from "node:assert/strict";
import { CHALLENGE_BUDGET, POST_MAX_ADDRESSES, postBudget } from "../../lib/http/budgets.ts";
import { parseConfig } from "../../lib/config/config.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";

/** How many of `n` attempts from one address at `nowMs` the limiter admits. */
const admitted = (limiter: RateLimiter, nowMs: number, n: number) =>
  Array.from({ length: n }, () => limiter.take("192.0.2.1", nowMs).allowed).filter(Boolean).length;

Deno.test("the POST budget with RATE_LIMIT unset admits 5 POSTs per address in 60 s, the 6th refused", () => {
  const limiter = new RateLimiter(postBudget(parseConfig({}).rateLimit));
  assert.equal(admitted(limiter, 0, 6), 5);
  assert.equal(admitted(limiter, 59_999, 1), 0);
  assert.equal(admitted(limiter, 60_000, 6), 5);
});

Deno.test("the POST budget follows RATE_LIMIT and holds at most POST_MAX_ADDRESSES addresses", () => {
  const budget = postBudget(parseConfig({ RATE_LIMIT: "30/10m" }).rateLimit);
  assert.deepEqual(budget, { limit: 30, windowMs: 600_000, maxEntries: POST_MAX_ADDRESSES });
  assert.equal(admitted(new RateLimiter(budget), 0, 31), 30);
});

Deno.test("the challenge budget is its own: 30 per address in 60 s, whatever RATE_LIMIT says", () => {
  const limiter = new RateLimiter(CHALLENGE_BUDGET);
  assert.equal(admitted(limiter, 0, 31), 30);
  assert.equal(admitted(limiter, 60_000, 1), 1);
  assert.ok(CHALLENGE_BUDGET.maxEntries! < POST_MAX_ADDRESSES, "30 times per key: fewer keys");
});
