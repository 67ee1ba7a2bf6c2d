import assert from "node:assert/strict";
import { createLogger, describeError } from "../lib/log.ts";

const TOKEN = "123456789:AAE_secret-token-value";

Deno.test("createLogger writes one JSON object per line and redacts the token from the whole line", () => {
  const lines: Array<[string, string]> = [];
  const log = createLogger(
    (line, level) => lines.push([line, level]),
    () => new Date("2026-11-22T14:03:09Z"),
    [TOKEN],
  );
  log("error", {
    event: "backup_write_failed",
    error: `fetch https://api.telegram.org/bot${TOKEN}/sendMessage and ${
      encodeURIComponent(TOKEN)
    }`,
  });
  log("info", { event: "contact", status: 200, result: "delivered" });
  assert.equal(lines.length, 2);
  for (const [line] of lines) {
    assert.ok(line.endsWith("\n") && line.indexOf("\n") === line.length - 1);
    assert.ok(!line.includes(TOKEN) && !line.includes("AAE_secret"), line);
  }
  const first = JSON.parse(lines[0]![0]);
  assert.equal(first.time, "2026-11-22T14:03:09.000Z");
  assert.equal(first.level, "error");
  assert.match(first.error, /bot<redacted>\/sendMessage and <redacted>$/);
  assert.equal(lines[1]![1], "info");
});

Deno.test("describeError keeps name and message only, capped at 500 characters", () => {
  assert.equal(describeError(new RangeError("x".repeat(600))).length, 500);
  assert.equal(describeError(new TypeError("boom")), "TypeError: boom");
  assert.equal(describeError("plain"), "plain");
});
