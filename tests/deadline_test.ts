import assert from "node:assert/strict";
import { sharedDeadline } from "../lib/deadline.ts";

Deno.test("body deadlines: requests in the same second share one signal, the next second gets its own", () => {
  const clock = { now: 5_000 };
  const deadline = sharedDeadline(10_000, 1000, () => clock.now);
  const a = deadline();
  clock.now = 5_999;
  assert.equal(deadline(), a);
  clock.now = 6_000;
  const b = deadline();
  assert.notEqual(b, a);
  assert.equal(a.aborted, false);
});

Deno.test("body deadlines: a shared signal fires no earlier than the deadline", async () => {
  const deadline = sharedDeadline(50, 20);
  const started = performance.now();
  const signal = deadline();
  await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  assert.ok(performance.now() - started >= 49, "fired early");
});
