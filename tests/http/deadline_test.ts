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
