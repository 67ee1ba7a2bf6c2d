import assert from "node:assert/strict";
import { formatTimestamp } from "../../lib/common/timestamp.ts";

Deno.test("formatTimestamp is UTC with whole seconds and a trailing Z", () => {
  assert.equal(formatTimestamp(new Date("2026-11-22T14:03:09.987+01:00")), "2026-11-22T13:03:09Z");
});

Deno.test("formatTimestamp drops the milliseconds rather than rounding into the next second", () => {
  assert.equal(
    formatTimestamp(new Date(Date.UTC(2026, 11, 31, 23, 59, 59, 999))),
    "2026-12-31T23:59:59Z",
  );
});
