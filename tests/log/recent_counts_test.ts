import assert from "node:assert/strict";
import { RECENT_WINDOW_MS, RecentCounts } from "../../lib/log/recent_counts.ts";

const HOUR = 3_600_000;

Deno.test("what was counted in the last 24 hours is reported, per name", () => {
  const counts = new RecentCounts();
  counts.add("delivered", 10 * HOUR);
  counts.add("delivered", 10 * HOUR + 5);
  counts.add("held_spam", 11 * HOUR);
  assert.equal(counts.count("delivered", 12 * HOUR), 2);
  assert.equal(counts.count("held_spam", 12 * HOUR), 1);
  assert.equal(counts.count("rate_limited", 12 * HOUR), 0);
});

Deno.test("a count older than 24 hours (and its hour) leaves the report", () => {
  const counts = new RecentCounts();
  counts.add("delivered", 10 * HOUR);
  counts.add("delivered", 20 * HOUR);
  assert.equal(counts.count("delivered", 10 * HOUR + RECENT_WINDOW_MS - 1), 2);
  assert.equal(counts.count("delivered", 11 * HOUR + RECENT_WINDOW_MS), 1);
  assert.equal(counts.count("delivered", 21 * HOUR + RECENT_WINDOW_MS), 0);
});
