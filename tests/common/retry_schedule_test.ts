import assert from "node:assert/strict";
import { outageDelayMs, RETRY_CAP_MS, retryDelayMs } from "../../lib/common/retry_schedule.ts";

Deno.test("retryDelayMs doubles from a second to a cap of ten minutes", () => {
  const top = () => 0.999999;
  const delays = [1, 2, 3, 4, 10, 11, 12, 50, 1000].map((n) => Math.round(retryDelayMs(n, top)));
  assert.deepEqual(delays, [1000, 2000, 4000, 8000, 512_000, 600_000, 600_000, 600_000, 600_000]);
  assert.equal(RETRY_CAP_MS, 600_000);
});

Deno.test("retryDelayMs jitters between half and all of the delay", () => {
  assert.equal(retryDelayMs(3, () => 0), 2000);
  assert.equal(retryDelayMs(3, () => 0.5), 3000);
  let seed = 7;
  const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  const samples = Array.from({ length: 200 }, () => retryDelayMs(5, random));
  assert.ok(samples.every((d) => d >= 8000 && d < 16000));
  assert.ok(new Set(samples.map(Math.round)).size > 150, "retries after an outage do not align");
});

Deno.test("outageDelayMs waits about as long as the outage has lasted, from a second to ten minutes", () => {
  const top = () => 0.999999;
  const delays = [0, 500, 1000, 15_000, 60_000, 3_600_000].map((ms) =>
    Math.round(outageDelayMs(ms, top))
  );
  assert.deepEqual(delays, [1000, 1000, 1000, 15_000, 60_000, 600_000]);
  assert.equal(outageDelayMs(15_000, () => 0), 7500);
});
