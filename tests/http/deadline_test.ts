import assert from "node:assert/strict";
import { sharedDeadline } from "../../lib/http/deadline.ts";

Deno.test("body deadlines: requests in the same second share one signal, the next second gets its own", () => {
  const deadline = sharedDeadline(10_000, 1000);
  const a = deadline(5_000);
  assert.equal(deadline(5_999), a);
  const b = deadline(6_000);
  assert.notEqual(b, a);
  assert.equal(a.aborted, false);
});

Deno.test("body deadlines: a shared signal fires no earlier than the deadline", async () => {
  const deadline = sharedDeadline(50, 20);
  const started = performance.now();
  const signal = deadline(Date.now());
  await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  assert.ok(performance.now() - started >= 49, "fired early");
});

Deno.test("body deadlines: when the service stops, every signal handed out aborts at once, and later ones come aborted", () => {
  const stop = new AbortController();
  const deadline = sharedDeadline(10_000, 1000, stop.signal);
  const earlier = deadline(5_000);
  const current = deadline(6_500);
  assert.notEqual(earlier, current);
  assert.deepEqual([earlier.aborted, current.aborted], [false, false]);
  stop.abort();
  assert.deepEqual([earlier.aborted, current.aborted], [true, true]);
  assert.equal(deadline(6_600).aborted, true);
  assert.equal(deadline(9_000).aborted, true);
});

Deno.test("body deadlines: a slot's hold on the stop signal is let go once its deadline passes", async () => {
  const stop = new AbortController().signal;
  let listening = 0;
  const add = stop.addEventListener.bind(stop);
  const remove = stop.removeEventListener.bind(stop);
  stop.addEventListener = (...args: Parameters<typeof add>) => (listening++, add(...args));
  stop.removeEventListener = (...args: Parameters<typeof remove>) => (listening--, remove(...args));
  const deadline = sharedDeadline(20, 10, stop);
  const signal = deadline(Date.now());
  assert.equal(listening, 1);
  await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  assert.equal(listening, 0);
});
