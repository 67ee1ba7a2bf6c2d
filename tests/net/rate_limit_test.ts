import assert from "node:assert/strict";
import {
  type RateDecision,
  RateLimiter,
  type RateLimiterOptions,
  rateLimitKey,
} from "../../lib/net/rate_limit.ts";
import { mulberry32 as random } from "../support/random.ts";

const WINDOW = 60_000;

function limiter(maxEntries?: number): RateLimiter {
  return new RateLimiter(
    maxEntries === undefined
      ? { limit: 5, windowMs: WINDOW }
      : { limit: 5, windowMs: WINDOW, maxEntries },
  );
}

/** Takes `n` attempts for `key` at `now` and returns how many were allowed. */
function admitted(rl: RateLimiter, key: string, now: number, n: number): number {
  let allowed = 0;
  for (let i = 0; i < n; i++) if (rl.take(key, now).allowed) allowed++;
  return allowed;
}

function retryAfter(decision: RateDecision): number | null {
  return decision.allowed ? null : decision.retryAfterSeconds;
}

Deno.test("RateLimiter allows the 5th attempt and refuses the 6th", () => {
  const rl = limiter();
  for (let i = 1; i <= 5; i++) assert.deepEqual(rl.take("a", 1_000), { allowed: true }, `#${i}`);
  assert.deepEqual(rl.take("a", 1_000), { allowed: false, retryAfterSeconds: 60 });
});

Deno.test("RateLimiter frees a slot exactly windowMs after the attempt", () => {
  const rl = limiter();
  assert.equal(admitted(rl, "a", 0, 1), 1);
  assert.equal(admitted(rl, "a", 1, 4), 4);
  assert.equal(rl.take("a", WINDOW - 1).allowed, false);
  assert.equal(rl.take("a", WINDOW).allowed, true);
  assert.equal(rl.take("a", WINDOW).allowed, false, "only one slot was freed");
});

Deno.test("RateLimiter does not count refused attempts", () => {
  const rl = limiter();
  assert.equal(admitted(rl, "a", 0, 5), 5);
  assert.equal(admitted(rl, "a", 30_000, 100), 0);
  // Had the refusals at 30 s counted, nothing would free up at 60 s.
  assert.equal(admitted(rl, "a", WINDOW, 10), 5);
});

Deno.test("RateLimiter gives Retry-After in whole seconds, rounded up, at least 1", () => {
  const rl = limiter();
  admitted(rl, "a", 0, 5);
  assert.equal(retryAfter(rl.take("a", 0)), 60);
  assert.equal(retryAfter(rl.take("a", 1)), 60); // 59.999 s left
  assert.equal(retryAfter(rl.take("a", 58_999)), 2); // 1.001 s left
  assert.equal(retryAfter(rl.take("a", 59_000)), 1);
  assert.equal(retryAfter(rl.take("a", 59_999)), 1); // 1 ms left still says 1
  assert.equal(retryAfter(rl.take("a", 60_000)), null);
});

Deno.test("RateLimiter window slides instead of resetting at fixed boundaries", () => {
  const rl = limiter();
  assert.equal(admitted(rl, "a", 59_000, 5), 5);
  // A fixed one-minute window would start afresh at 60 s.
  assert.equal(rl.take("a", 60_000).allowed, false);
  assert.equal(rl.take("a", 118_999).allowed, false);
  assert.equal(admitted(rl, "a", 119_000, 6), 5);
});

Deno.test("RateLimiter frees slots one by one as spread attempts age out", () => {
  const rl = limiter();
  for (const t of [0, 10_000, 20_000, 30_000, 40_000]) assert.ok(rl.take("a", t).allowed);
  assert.equal(retryAfter(rl.take("a", 50_000)), 10);
  assert.equal(retryAfter(rl.take("a", 60_000)), null);
  assert.equal(retryAfter(rl.take("a", 60_000)), 10); // now the attempt at 10 s is the oldest
  assert.equal(retryAfter(rl.take("a", 70_000)), null);
});

Deno.test("RateLimiter keeps an independent budget per key", () => {
  const rl = limiter();
  assert.equal(admitted(rl, "a", 0, 6), 5);
  assert.equal(admitted(rl, "b", 0, 6), 5);
  assert.equal(admitted(rl, "a", 1, 1), 0);
  assert.equal(rl.size, 2);
});

Deno.test("RateLimiter supports a limit of 1", () => {
  const rl = new RateLimiter({ limit: 1, windowMs: 1_000 });
  assert.equal(admitted(rl, "a", 0, 3), 1);
  assert.equal(retryAfter(rl.take("a", 999)), 1);
  assert.equal(admitted(rl, "a", 1_000, 3), 1);
});

Deno.test("rateLimitKey keeps IPv4 addresses as their own key", () => {
  assert.equal(rateLimitKey("192.0.2.1"), "192.0.2.1");
  assert.equal(rateLimitKey("::ffff:192.0.2.1"), "192.0.2.1");
  assert.notEqual(rateLimitKey("192.0.2.1"), rateLimitKey("192.0.2.2"));
});

Deno.test("rateLimitKey groups IPv6 addresses by their /64", () => {
  assert.equal(rateLimitKey("2001:db8:1:2::1"), "2001:db8:1:2::/64");
  assert.equal(rateLimitKey("2001:DB8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::/64");
  assert.equal(rateLimitKey("2001:db8:1:3::1"), "2001:db8:1:3::/64");
  assert.equal(rateLimitKey("::1"), "::/64");
  assert.equal(rateLimitKey("2001:db8:0:0:8000::"), "2001:db8::/64");
});

Deno.test("rateLimitKey uses input that is not an IP address as-is", () => {
  assert.equal(rateLimitKey("unknown"), "unknown");
  assert.equal(rateLimitKey("fe80::1%eth0"), "fe80::1%eth0");
  assert.equal(rateLimitKey(""), "");
});

Deno.test("RateLimiter shares one budget across a /64 but not across /64s", () => {
  const rl = limiter();
  for (let i = 1; i <= 5; i++) assert.ok(rl.take(rateLimitKey(`2001:db8:1:2::${i}`), 0).allowed);
  assert.equal(rl.take(rateLimitKey("2001:db8:1:2:dead:beef:0:1"), 0).allowed, false);
  assert.equal(rl.take(rateLimitKey("2001:db8:1:3::1"), 0).allowed, true);
});

Deno.test("RateLimiter drops idle keys once their window has passed", () => {
  const rl = limiter();
  for (let i = 0; i < 100; i++) rl.take(`k${i}`, 0);
  assert.equal(rl.size, 100);
  rl.take("other", WINDOW - 1);
  assert.equal(rl.size, 101, "nothing is idle yet");
  for (let i = 0; i < 100; i++) rl.take("other", WINDOW + i);
  assert.equal(rl.size, 1);
});

Deno.test("RateLimiter memory returns after a flood of distinct keys", () => {
  const rl = limiter();
  for (let i = 0; i < 20_000; i++) rl.take(rateLimitKey(`2001:db8:${i.toString(16)}::1`), i);
  assert.equal(rl.size, 20_000);
  rl.take("after", 20_000 + WINDOW);
  assert.equal(rl.size, 1);
  // A flooded key that comes back starts with a full budget.
  assert.equal(admitted(rl, rateLimitKey("2001:db8:0::1"), 20_000 + WINDOW, 6), 5);
});

Deno.test("RateLimiter sheds a flood gradually while other keys stay busy", () => {
  const rl = limiter();
  for (let i = 0; i < 20_000; i++) rl.take(`flood${i}`, 0);
  for (let i = 0; i < 10; i++) admitted(rl, `busy${i}`, WINDOW / 2, 5);
  let now = WINDOW;
  for (let i = 0; i < 5_000 && rl.size > 10; i++) rl.take(`busy${i % 10}`, now++);
  assert.equal(rl.size, 10);
  for (let i = 0; i < 10; i++) {
    assert.equal(rl.take(`busy${i}`, now).allowed, false, "history kept");
  }
});

Deno.test("RateLimiter never holds more than maxEntries keys", () => {
  const rl = limiter(100);
  for (let i = 0; i < 10_000; i++) {
    rl.take(`k${i}`, 0);
    assert.ok(rl.size <= 100);
  }
  assert.equal(rl.size, 100);
});

Deno.test("RateLimiter evicts the least recently used key at the cap", () => {
  const rl = limiter(3);
  admitted(rl, "a", 0, 5);
  admitted(rl, "b", 0, 5);
  assert.equal(rl.take("a", 1).allowed, false); // a refused take still counts as use
  rl.take("c", 2);
  rl.take("d", 3); // the table is full: b is the least recently used
  assert.equal(rl.size, 3);
  assert.equal(rl.take("a", 4).allowed, false, "a was kept");
  assert.equal(rl.take("b", 4).allowed, true, "b was forgotten");
});

Deno.test("RateLimiter gives a new key a full budget even when it replaces an evicted one", () => {
  const rl = limiter(1);
  assert.equal(admitted(rl, "a", 0, 5), 5);
  assert.equal(admitted(rl, "b", 0, 6), 5);
  assert.equal(rl.size, 1);
});

Deno.test("RateLimiter starts a key afresh when the clock goes backwards", () => {
  const rl = limiter();
  assert.equal(admitted(rl, "a", 100_000, 5), 5);
  // Honouring attempts "from the future" could lock the key out indefinitely.
  assert.equal(admitted(rl, "a", 0, 6), 5);
  assert.equal(admitted(rl, "a", WINDOW - 1, 1), 0);
  assert.equal(admitted(rl, "a", WINDOW, 1), 1);
});

Deno.test("RateLimiter drops keys stamped in the future once the clock goes backwards", () => {
  const rl = limiter();
  for (let i = 0; i < 10; i++) rl.take(`k${i}`, 100_000);
  rl.take("x", 0);
  assert.equal(rl.size, 1);
});

Deno.test("RateLimiter handles wall-clock, negative and far-apart timestamps", () => {
  const rl = limiter();
  for (const base of [1_700_000_000_000, -5_000_000, 0, 2 ** 40, 2 ** 31, 2 ** 52]) {
    assert.equal(admitted(rl, "a", base, 6), 5, `at ${base}`);
    assert.equal(retryAfter(rl.take("a", base + WINDOW - 1)), 1, `at ${base}`);
    assert.equal(admitted(rl, "a", base + WINDOW, 6), 5, `at ${base}`);
  }
});

Deno.test("RateLimiter keeps live attempts across a long stretch of time", () => {
  // Times are stored relative to an internal epoch that moves as the clock advances;
  // with the longest window, live attempts must survive that move exactly.
  const windowMs = 2 ** 30;
  const rl = new RateLimiter({ limit: 2, windowMs });
  rl.take("b", 0);
  assert.ok(rl.take("a", 1).allowed);
  assert.ok(rl.take("a", windowMs - 10).allowed);
  assert.equal(retryAfter(rl.take("a", windowMs)), 1);
  assert.equal(rl.take("a", windowMs + 1).allowed, true);
  assert.equal(rl.take("a", windowMs + 1).allowed, false);
});

Deno.test("RateLimiter treats fractional timestamps as whole milliseconds", () => {
  const rl = limiter();
  assert.equal(admitted(rl, "a", 0.9, 5), 5);
  assert.equal(rl.take("a", 0.2).allowed, false, "0.2 and 0.9 are the same millisecond");
  assert.equal(rl.take("a", WINDOW + 0.5).allowed, true);
});

Deno.test("RateLimiter rejects invalid options and timestamps", () => {
  const bad: RateLimiterOptions[] = [
    { limit: 0, windowMs: 1 },
    { limit: 1.5, windowMs: 1 },
    { limit: 1, windowMs: 0 },
    { limit: 1, windowMs: NaN },
    { limit: 1, windowMs: 2 ** 30 + 1 },
    { limit: 1, windowMs: 1, maxEntries: 0 },
    { limit: 1, windowMs: 1, maxEntries: 2.5 },
  ];
  for (const options of bad) {
    assert.throws(() => new RateLimiter(options), RangeError, JSON.stringify(options));
  }
  const rl = limiter();
  for (const now of [NaN, Infinity, -Infinity, 2 ** 60]) {
    assert.throws(() => rl.take("a", now), RangeError, String(now));
  }
  assert.equal(rl.size, 0);
});

Deno.test("RateLimiter agrees with a naive sliding log on a random schedule", () => {
  const limit = 3;
  const rl = new RateLimiter({ limit, windowMs: WINDOW });
  const log = new Map<string, number[]>();
  const naive = (key: string, now: number): RateDecision => {
    let times = log.get(key) ?? [];
    if (times.length > 0 && times[times.length - 1]! > now) times = []; // clock went back
    times = times.filter((t) => t + WINDOW > now);
    log.set(key, times);
    if (times.length < limit) {
      times.push(now);
      return { allowed: true };
    }
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((times[0]! + WINDOW - now) / 1000)),
    };
  };
  const next = random(7);
  let now = 1_700_000_000_000;
  let fresh = 0;
  for (let step = 0; step < 60_000; step++) {
    const roll = next();
    if (roll < 0.0005) now -= Math.floor(next() * 2 * WINDOW); // clock steps back
    else if (roll < 0.001) now += 2 ** 31; // long gap
    else now += Math.floor(next() * 100);
    // Mostly a few hot keys, some new ones, and floods of new keys that force rebuilds.
    const burst = next() < 0.0005 ? 5_000 : 1;
    for (let i = 0; i < burst; i++) {
      const key = burst > 1 || next() < 0.2 ? `fresh${fresh++}` : `hot${Math.floor(next() * 20)}`;
      assert.deepEqual(rl.take(key, now), naive(key, now), `step ${step}: ${key} at ${now}`);
    }
  }
});
