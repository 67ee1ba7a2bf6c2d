import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../lib/config/config.ts";

const TOKEN = "123456:ABC-def_ghi";

function configError(env: Record<string, string>): ConfigError {
  try {
    parseConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error;
  }
  assert.fail("expected a ConfigError");
}

Deno.test("parseConfig applies the documented defaults to an empty environment", () => {
  const config = parseConfig({});
  assert.equal(config.messenger, undefined);
  assert.equal(config.messagesFile, "messages.jsonl");
  assert.equal(config.host, "127.0.0.1");
  assert.equal(config.port, 8787);
  assert.equal(config.apiUrl, "https://api.telegram.org");
  assert.equal(config.trustedProxies.length, 2);
  assert.equal(config.timeoutMs, 10_000);
});

Deno.test("parseConfig is configured only with both a token and a chat id", () => {
  assert.deepEqual(
    parseConfig({ MESSENGER_BOT_TOKEN: TOKEN, MESSENGER_CHAT_ID: "-1001234" })
      .messenger,
    { token: TOKEN, chatId: -1001234 },
  );
  assert.equal(parseConfig({ MESSENGER_BOT_TOKEN: TOKEN }).messenger, undefined);
  assert.equal(parseConfig({ MESSENGER_CHAT_ID: "42" }).messenger, undefined);
  assert.equal(
    parseConfig({ MESSENGER_BOT_TOKEN: "", MESSENGER_CHAT_ID: "" }).messenger,
    undefined,
  );
});

Deno.test("parseConfig treats empty and blank values as unset", () => {
  const config = parseConfig({ PORT: "", HOST: "  ", MESSAGES_FILE: "" });
  assert.equal(config.port, 8787);
  assert.equal(config.host, "127.0.0.1");
  assert.equal(config.messagesFile, "messages.jsonl");
});

Deno.test("parseConfig refuses a PORT that is not a port number, naming the setting", () => {
  for (const port of ["abc", "0", "65536", "-1", "80.5", "1e3", "123456"]) {
    const error = configError({ PORT: port });
    assert.equal(error.setting, "PORT");
    assert.equal(error.message, `"PORT" must be a port number between 1 and 65535`);
  }
  assert.equal(parseConfig({ PORT: "65535" }).port, 65535);
  assert.equal(parseConfig({ PORT: "1" }).port, 1);
});

Deno.test("parseConfig refuses a malformed token without echoing it", () => {
  for (const token of ["abc", "123", ":abc", "123:", "123:ab cd", "123:ab/cd"]) {
    const error = configError({ MESSENGER_BOT_TOKEN: token });
    assert.equal(error.setting, "MESSENGER_BOT_TOKEN");
    assert.ok(!error.message.includes(token));
  }
});

Deno.test("parseConfig refuses a chat id that is not a non-zero safe integer", () => {
  for (const chat of ["abc", "1.5", "0", "@channel", "99999999999999999", "1e5"]) {
    assert.equal(configError({ MESSENGER_CHAT_ID: chat }).setting, "MESSENGER_CHAT_ID");
  }
});

Deno.test("parseConfig accepts only http(s) API URLs without credentials and strips the slash", () => {
  assert.equal(
    parseConfig({ MESSENGER_API_URL: "http://127.0.0.1:9999/" }).apiUrl,
    "http://127.0.0.1:9999",
  );
  for (
    const url of ["ftp://x", "api.telegram.org", "https://u:p@x", "https://x/?a=1", "file:///x"]
  ) {
    assert.equal(configError({ MESSENGER_API_URL: url }).setting, "MESSENGER_API_URL");
  }
});

Deno.test("parseConfig refuses a bad CIDR in TRUSTED_PROXIES and accepts none", () => {
  assert.equal(configError({ TRUSTED_PROXIES: "10.0.0.0/33" }).setting, "TRUSTED_PROXIES");
  assert.equal(configError({ TRUSTED_PROXIES: "127.0.0.1,nope" }).setting, "TRUSTED_PROXIES");
  assert.equal(parseConfig({ TRUSTED_PROXIES: "none" }).trustedProxies.length, 0);
  assert.equal(
    parseConfig({ TRUSTED_PROXIES: "10.0.0.0/8, 2001:db8::/32" }).trustedProxies.length,
    2,
  );
});

Deno.test("parseConfig refuses a MESSAGES_FILE that would break the permission list", () => {
  assert.equal(configError({ MESSAGES_FILE: "a,b.jsonl" }).setting, "MESSAGES_FILE");
});

Deno.test("parseConfig bounds MESSENGER_TIMEOUT_MS", () => {
  assert.equal(parseConfig({ MESSENGER_TIMEOUT_MS: "250" }).timeoutMs, 250);
  for (const ms of ["99", "120001", "abc", "1.5"]) {
    assert.equal(configError({ MESSENGER_TIMEOUT_MS: ms }).setting, "MESSENGER_TIMEOUT_MS");
  }
});

Deno.test("parseConfig refuses a HOST with characters no address has", () => {
  assert.equal(configError({ HOST: "127.0.0.1,evil.example" }).setting, "HOST");
  assert.equal(parseConfig({ HOST: "::1" }).host, "::1");
});

Deno.test("parseConfig reads ALLOWED_ORIGINS as normalised origins; unset means none", () => {
  assert.deepEqual(parseConfig({}).allowedOrigins, []);
  assert.deepEqual(
    parseConfig({
      ALLOWED_ORIGINS: " https://Example.org/, http://localhost:8080,https://example.org:443 ,",
    }).allowedOrigins,
    ["https://example.org", "http://localhost:8080"],
  );
});

Deno.test("parseConfig refuses an ALLOWED_ORIGINS entry that is not a bare http(s) origin", () => {
  for (
    const origin of [
      "example.org",
      "*",
      "null",
      "https://example.org/contact",
      "https://example.org?x",
      "https://user@example.org",
      "ftp://example.org",
      "https://",
      "javascript:alert(1)",
    ]
  ) {
    const error = configError({ ALLOWED_ORIGINS: `https://ok.example,${origin}` });
    assert.equal(error.setting, "ALLOWED_ORIGINS", origin);
    assert.match(error.message, /^"ALLOWED_ORIGINS" must be a comma list of origins/);
    assert.ok(!error.message.includes("\n"));
  }
});

Deno.test("parseConfig reads SERVE_EXAMPLE as 1 or 0, off by default", () => {
  assert.equal(parseConfig({}).serveExample, false);
  assert.equal(parseConfig({ SERVE_EXAMPLE: "1" }).serveExample, true);
  assert.equal(parseConfig({ SERVE_EXAMPLE: "0" }).serveExample, false);
  for (const value of ["yes", "true", "2", "on"]) {
    const error = configError({ SERVE_EXAMPLE: value });
    assert.equal(error.setting, "SERVE_EXAMPLE");
    assert.equal(error.message, `"SERVE_EXAMPLE" must be 1 or 0`);
  }
});

Deno.test("REAL_IP_HEADER is X-Forwarded-For by default, either header in any case, nothing else", () => {
  assert.equal(parseConfig({}).realIpHeader, "x-forwarded-for");
  assert.equal(parseConfig({ REAL_IP_HEADER: " x-real-ip " }).realIpHeader, "x-real-ip");
  assert.equal(parseConfig({ REAL_IP_HEADER: "X-FORWARDED-FOR" }).realIpHeader, "x-forwarded-for");
  for (const value of ["Forwarded", "X-Real-IP,X-Forwarded-For", "CF-Connecting-IP", "x_real_ip"]) {
    assert.throws(() => parseConfig({ REAL_IP_HEADER: value }), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.setting, "REAL_IP_HEADER");
      assert.equal(error.message, '"REAL_IP_HEADER" must be X-Forwarded-For or X-Real-IP');
      return true;
    }, value);
  }
});

Deno.test("RATE_LIMIT is 5/60s by default (the spec's), POSTs/window with s, m or h, bounded", () => {
  assert.deepEqual(parseConfig({}).rateLimit, { limit: 5, windowMs: 60_000 });
  assert.deepEqual(parseConfig({ RATE_LIMIT: "30/10m" }).rateLimit, {
    limit: 30,
    windowMs: 600_000,
  });
  assert.deepEqual(parseConfig({ RATE_LIMIT: " 100 / 1h " }).rateLimit, {
    limit: 100,
    windowMs: 3_600_000,
  });
  assert.deepEqual(parseConfig({ RATE_LIMIT: "1/1s" }).rateLimit, { limit: 1, windowMs: 1000 });
  assert.deepEqual(parseConfig({ RATE_LIMIT: "5/24h" }).rateLimit, {
    limit: 5,
    windowMs: 86_400_000,
  });
  for (
    const value of ["0/60s", "101/60s", "5/0s", "5/25h", "5", "5/60", "5/60d", "-5/60s", "a/b"]
  ) {
    const error = configError({ RATE_LIMIT: value });
    assert.equal(error.setting, "RATE_LIMIT", value);
    assert.match(error.message, /^"RATE_LIMIT" must be POSTs\/window/, value);
  }
});

Deno.test("SERVE_EXAMPLE=1 with a CHALLENGE is refused: the example page could never send", () => {
  const secret = "k".repeat(44);
  for (const kind of ["altcha", "turnstile"]) {
    const error = configError({ SERVE_EXAMPLE: "1", CHALLENGE: kind, CHALLENGE_SECRET: secret });
    assert.equal(error.setting, "SERVE_EXAMPLE");
    assert.match(error.message, new RegExp(`could never send with CHALLENGE=${kind}`));
    assert.match(error.message, /CHALLENGE=none/);
  }
  assert.equal(parseConfig({ SERVE_EXAMPLE: "1", CHALLENGE: "none" }).serveExample, true);
  assert.equal(
    parseConfig({ SERVE_EXAMPLE: "0", CHALLENGE: "altcha", CHALLENGE_SECRET: secret }).challenge
      .kind,
    "altcha",
  );
});

Deno.test("RETENTION: unset keeps everything; hours or days from 1h, at least DELIVERY_MAX_AGE; anything else names the setting", () => {
  assert.equal(parseConfig({}).retentionMs, undefined);
  assert.equal(parseConfig({ RETENTION: "" }).retentionMs, undefined);
  assert.equal(parseConfig({ RETENTION: "90d" }).retentionMs, 90 * 86_400_000);
  assert.equal(
    parseConfig({ RETENTION: "48h", DELIVERY_MAX_AGE: "36h" }).retentionMs,
    48 * 3_600_000,
  );
  assert.equal(parseConfig({ RETENTION: "3650d" }).retentionMs, 3650 * 86_400_000);
  for (const bad of ["90", "90m", "0d", "d", "-1d", "1.5d", "36501d", "ninety days"]) {
    const error = configError({ RETENTION: bad });
    assert.equal(error.setting, "RETENTION", bad);
    assert.match(error.message, /^"RETENTION" must be a number with h or d/, bad);
  }
  // Shorter than DELIVERY_MAX_AGE (7d by default): a message may still be on its way.
  const short = configError({ RETENTION: "6d" });
  assert.equal(short.setting, "RETENTION");
  assert.match(short.message, /at least "DELIVERY_MAX_AGE"/);
});
