import assert from "node:assert/strict";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";
import { isRefusal, isTallied, tallyRefusals } from "../../lib/log/tally.ts";

function setup() {
  const lines: Array<{ level: LogLevel } & LogFields> = [];
  const tally = tallyRefusals((level, fields) => lines.push({ level, ...fields }));
  return { lines, tally };
}

Deno.test("refusals are counted per result and logged as one contact_summary line", () => {
  const { lines, tally } = setup();
  for (let i = 0; i < 3; i++) {
    tally.log("info", { event: "contact", status: 429, result: "rate_limited" });
  }
  tally.log("info", { event: "contact", status: 200, result: "honeypot" });
  tally.log("info", { event: "contact", status: 400, result: "invalid_json" });
  assert.equal(lines.length, 0);
  tally.flush();
  assert.deepEqual(lines, [{
    level: "info",
    event: "contact_summary",
    refused: 5,
    rate_limited: 3,
    honeypot: 1,
    invalid_json: 1,
  }]);
  tally.flush(); // nothing new: no line
  assert.equal(lines.length, 1);
});

Deno.test("stored submissions, warnings and errors are logged at once, one line each", () => {
  const { lines, tally } = setup();
  tally.log("info", { event: "contact", status: 200, result: "delivered" });
  tally.log("info", { event: "contact", status: 502, result: "delivery_failed" });
  tally.log("warn", { event: "delivery_failed", error: "timeout" });
  tally.log("error", { event: "backup_write_failed", error: "EIO" });
  tally.log("info", { event: "listening", hostname: "127.0.0.1", port: 8787 });
  assert.deepEqual(lines.map((line) => line.event), [
    "contact",
    "contact",
    "delivery_failed",
    "backup_write_failed",
    "listening",
  ]);
});

Deno.test("refused origins and preflights are tallied; the summary names the first refused origin, cut to one line", () => {
  const { lines, tally } = setup();
  const long = `https://evil.example/${"x".repeat(200)}`;
  for (let i = 0; i < 50; i++) {
    tally.log("info", { event: "preflight", status: 204 });
    tally.log("info", {
      event: "preflight",
      status: 403,
      result: "origin_not_allowed",
      origin: i === 0 ? `https://a.example\r\n{"event":"x"}` : "https://b.example",
    });
    tally.log("info", {
      event: "contact",
      status: 403,
      result: "origin_not_allowed",
      origin: long,
    });
  }
  tally.log("info", { event: "challenge", status: 403, result: "origin_not_allowed", origin: "c" });
  assert.equal(lines.length, 0);
  tally.flush();
  assert.deepEqual(lines, [{
    level: "info",
    event: "contact_summary",
    refused: 101,
    preflight: 50,
    preflight_origin_not_allowed: 50,
    origin_not_allowed: 50,
    challenge_origin_not_allowed: 1,
    refused_origin: 'https://a.example??{"event":"x"}',
  }]);
  // The next period names its own first refused origin.
  tally.log("info", { event: "contact", status: 403, result: "origin_not_allowed", origin: long });
  tally.flush();
  assert.equal(lines.length, 2);
  assert.equal(lines[1]!.refused_origin, long.slice(0, 100));
  assert.equal(lines[1]!.refused, 1);
  // A period of allowed preflights only refuses nothing and names no origin.
  tally.log("info", { event: "preflight", status: 204 });
  tally.flush();
  assert.deepEqual(lines[2], {
    level: "info",
    event: "contact_summary",
    refused: 0,
    preflight: 1,
  });
});

Deno.test("isRefusal: honeypot hits, refused origins, 400, 413, 415 and 429 only", () => {
  assert.equal(isRefusal({ event: "contact", status: 200, result: "honeypot" }), true);
  assert.equal(isRefusal({ event: "contact", status: 400, result: "invalid_json" }), true);
  assert.equal(isRefusal({ event: "contact", status: 429, result: "rate_limited" }), true);
  assert.equal(isRefusal({ event: "contact", status: 408, result: "request_timeout" }), false);
  assert.equal(
    isRefusal({ event: "contact", status: 403, result: "origin_not_allowed", origin: "x" }),
    true,
  );
  assert.equal(isRefusal({ event: "preflight", status: 204 }), false);
  assert.equal(isTallied({ event: "preflight", status: 204 }), true);
  assert.equal(isTallied({ event: "contact", status: 200, result: "delivered" }), false);
  assert.equal(isRefusal({ event: "contact", status: 413, result: "payload_too_large" }), true);
  assert.equal(
    isRefusal({ event: "contact", status: 415, result: "unsupported_media_type" }),
    true,
  );
  assert.equal(isRefusal({ event: "contact", status: 503, result: "not_configured" }), false);
  assert.equal(isRefusal({ event: "contact", status: 500, result: "lost" }), false);
  assert.equal(isRefusal({ event: "internal_error", status: 400 }), false);
});
