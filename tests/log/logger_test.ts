import assert from "node:assert/strict";
import { createLogger, describeError, settingsLogger } from "../../lib/log/logger.ts";

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

Deno.test("settingsLogger redacts the bot token and CHALLENGE_SECRET of the settings, trimmed, and nothing else", () => {
  const secret = "q8Xv2LmN4pRt6YwZ0aBcDeFgHiJkLmNoPqRsTuVwXyZ12";
  const lines: Array<[string, string]> = [];
  const log = settingsLogger(
    { MESSENGER_BOT_TOKEN: ` ${TOKEN}\n`, CHALLENGE_SECRET: ` ${secret} `, HOST: "127.0.0.1" },
    (line, level) => lines.push([line, level]),
    () => new Date("2026-11-22T14:03:09Z"),
  );
  log("warn", { event: "x", error: `${TOKEN} ${secret} 127.0.0.1` });
  assert.equal(lines.length, 1);
  const [line, level] = lines[0]!;
  assert.equal(level, "warn");
  assert.equal(JSON.parse(line).time, "2026-11-22T14:03:09.000Z");
  assert.ok(!line.includes("AAE_secret") && !line.includes(secret.slice(4, 20)), line);
  assert.match(JSON.parse(line).error, / 127\.0\.0\.1$/);
  // Without secrets nothing is redacted.
  const plain: string[] = [];
  settingsLogger({ MESSENGER_BOT_TOKEN: "  " }, (text) => plain.push(text))("info", {
    event: "y",
    error: "nothing secret",
  });
  assert.equal(JSON.parse(plain[0]!).error, "nothing secret");
});
