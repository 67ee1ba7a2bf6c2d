import assert from "node:assert/strict";
import {
  CHALLENGE_BUDGET,
  POST_MAX_ADDRESSES,
  POST_TIMESTAMP_SLOTS,
  postBudget,
} from "../../lib/http/budgets.ts";
import { MAX_RATE_LIMIT, parseConfig } from "../../lib/config/config.ts";
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
  assert.deepEqual(budget, { limit: 30, windowMs: 600_000, maxEntries: 166_666 });
  assert.equal(admitted(new RateLimiter(budget), 0, 31), 30);
  assert.equal(postBudget(parseConfig({}).rateLimit).maxEntries, POST_MAX_ADDRESSES);
});

Deno.test("a larger RATE_LIMIT holds fewer addresses, never more times in all than the default", () => {
  for (let limit = 1; limit <= MAX_RATE_LIMIT; limit++) {
    const budget = postBudget({ limit, windowMs: 60_000 });
    assert.ok(budget.maxEntries! <= POST_MAX_ADDRESSES);
    assert.ok(budget.maxEntries! * limit <= POST_TIMESTAMP_SLOTS, `${limit}/60s`);
  }
  assert.equal(postBudget({ limit: MAX_RATE_LIMIT, windowMs: 3_600_000 }).maxEntries, 50_000);
});

Deno.test("the challenge budget is its own: 30 per address in 60 s, whatever RATE_LIMIT says", () => {
  const limiter = new RateLimiter(CHALLENGE_BUDGET);
  assert.equal(admitted(limiter, 0, 31), 30);
  assert.equal(admitted(limiter, 60_000, 1), 1);
  assert.ok(CHALLENGE_BUDGET.maxEntries! < POST_MAX_ADDRESSES, "30 times per key: fewer keys");
});
