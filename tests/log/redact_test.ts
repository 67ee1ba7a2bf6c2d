import assert from "node:assert/strict";
import { ConfigError, parseConfig } from "../../lib/config/config.ts";
import { createLogger } from "../../lib/log/logger.ts";
import { MIN_RUN, redact } from "../../lib/log/redact.ts";
import { callBotApi } from "../../lib/bot/api.ts";

const TOKEN = "123456:ABC-def_ghi";
/** Shaped like a real token: the bot id, a colon, 35 characters of secret. */
const REAL = "7301926845:AAHq3kZ_x9VbN-2mTqLw8sEoYpR4uDfGc1J";
const SECRET = REAL.slice(REAL.indexOf(":") + 1);

/** Every run of MIN_RUN characters of the secret part that `text` holds (any case). */
function leaks(text: string): string[] {
  const lower = text.toLowerCase();
  const runs: string[] = [];
  for (let i = 0; i + MIN_RUN <= SECRET.length; i++) {
    const run = SECRET.slice(i, i + MIN_RUN);
    if (lower.includes(run.toLowerCase())) runs.push(run);
  }
  return runs;
}

Deno.test("the realistic token has a 35-character secret part, and leaks() finds a run of it", () => {
  assert.equal(SECRET.length, 35);
  assert.deepEqual(leaks(`x ${SECRET.slice(3, 11)} y`), [SECRET.slice(3, 11)]);
});

Deno.test("redact replaces every occurrence of the secret", () => {
  assert.equal(
    redact(`bot${TOKEN}/sendMessage and again ${TOKEN}`, TOKEN),
    "bot<redacted>/sendMessage and again <redacted>",
  );
});

Deno.test("redact replaces the token URL-encoded, in either hex case, and double-encoded", () => {
  for (const colon of ["%3A", "%3a", "%253A", "%253a"]) {
    const form = REAL.replace(":", colon);
    assert.equal(redact(`url /bot${form}/getMe`, REAL), "url /bot<redacted>/getMe", colon);
  }
  assert.equal(redact("url /bot123456%3AABC-def_ghi/getMe", TOKEN), "url /bot<redacted>/getMe");
});

Deno.test("redact replaces a secret whose every character is percent-encoded, once or twice", () => {
  const once = Array.from(SECRET, (c) => `%${c.charCodeAt(0).toString(16)}`).join("");
  assert.equal(redact(`a ${once} b`, REAL), "a <redacted> b");
  assert.equal(redact(`a ${once.replaceAll("%", "%25")} b`, REAL), "a <redacted> b");
});

Deno.test("redact replaces any run of 8 or more characters of the secret part, but not 7", () => {
  for (let start = 0; start + MIN_RUN <= SECRET.length; start += 3) {
    const run = SECRET.slice(start, start + MIN_RUN);
    assert.equal(redact(`[${run}]`, REAL), "[<redacted>]", run);
  }
  // The 60-character cut of a value that swallowed the token's line: 25 of 35 characters.
  const cut = `none MESSENGER_BOT_TOKEN=${REAL}`.slice(0, 60);
  assert.deepEqual(leaks(redact(cut, REAL)), []);
  assert.equal(redact(`(${SECRET.slice(0, 7)})`, REAL), `(${SECRET.slice(0, 7)})`);
  assert.equal(redact("123456:ABC-def_gh (one short)", TOKEN), "<redacted> (one short)");
});

Deno.test("redact replaces the secret split by line breaks: raw, JSON-escaped and percent-encoded", () => {
  const [head, tail] = [SECRET.slice(0, 17), SECRET.slice(17)];
  for (const gap of ["\n", "\r\n", "\\n", "\\r\\n", "%0A", "%250A", " \n "]) {
    const text = `desc: ${REAL.split(":")[0]}:${head}${gap}${tail} end`;
    assert.equal(redact(text, REAL), "desc: <redacted> end", JSON.stringify(gap));
  }
});

Deno.test("redact replaces the secret in lower case (error texts get lower-cased)", () => {
  assert.equal(redact(`e: ${REAL.toLowerCase()}.`, REAL), "e: <redacted>.");
});

Deno.test("redact leaves the bot's public id alone when no secret follows it", () => {
  const text = "bot id 7301926845, chat 42";
  assert.equal(redact(text, REAL), text);
});

Deno.test("redact with an empty secret leaves the text unchanged", () => {
  assert.equal(redact("nothing to hide", ""), "nothing to hide");
});

Deno.test("redact treats regex metacharacters in the secret literally", () => {
  assert.equal(redact("a.b a+b a.b", "a.b"), "<redacted> a+b <redacted>");
  assert.equal(redact("x(y]z$1 xyz", "(y]z$1"), "x<redacted> xyz");
});

Deno.test("redact prefers the longer encoded form when the secret contains %", () => {
  // "a%" encodes to "a%25"; matching the raw form first would leave "25" behind.
  assert.equal(redact("[a%25] [a%]", "a%"), "[<redacted>] [<redacted>]");
});

Deno.test("redact copes with a secret containing a lone surrogate", () => {
  assert.equal(redact("x\uD800y", "\uD800"), "x<redacted>y");
});

Deno.test("redact handles a secret adjacent to itself", () => {
  assert.equal(redact(TOKEN + TOKEN, TOKEN), "<redacted><redacted>");
  assert.deepEqual(leaks(redact(REAL + REAL, REAL)), []);
});

Deno.test("a config_invalid message never echoes a value that swallowed the token's line", () => {
  const swallowed = `none MESSENGER_BOT_TOKEN=${REAL}`;
  const cases = [
    ...(["TRUSTED_PROXIES", "ALLOWED_ORIGINS", "MESSENGER_API_URL", "HOST"] as const)
      .map((setting) => [setting, swallowed] as const),
    // Values that are otherwise valid: a path, and URLs whose path takes the rest of the line.
    ["MESSAGES_FILE", `messages.jsonl MESSENGER_BOT_TOKEN=${REAL}`],
    ["MESSAGES_FILE", `messages.jsonl\tMESSENGER_BOT_TOKEN=${REAL}`],
    ["MESSAGES_FILE", `messages.jsonlMESSENGER_BOT_TOKEN=${REAL}`],
    ["PORT", `8787MESSENGER_BOT_TOKEN=${REAL}`],
    ["MESSAGES_FILE", `messages.jsonl export MESSENGER_BOT_TOKEN=${REAL}`],
    ["MESSENGER_API_URL", `https://api.telegram.org/ MESSENGER_BOT_TOKEN=${REAL}`],
    ["TURNSTILE_VERIFY_URL", `https://challenges.example/v0/ MESSENGER_BOT_TOKEN=${REAL}`],
  ] as const;
  for (const [setting, value] of cases) {
    let message = "";
    try {
      parseConfig({ [setting]: value });
    } catch (error) {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.setting, setting);
      message = error.message;
    }
    assert.notEqual(message, "", `${setting} accepted ${JSON.stringify(value)}`);
    assert.deepEqual(leaks(message), [], message);
    assert.ok(!message.includes("MESSENGER_BOT_TOKEN"), message);
  }
  const items = parseConfigError({ ALLOWED_ORIGINS: `https://a.example,${REAL}` });
  assert.match(items, /item 2 is not one$/);
});

Deno.test('MESSAGES_FILE may hold spaces and "=", only not a setting\'s NAME= after its value', () => {
  const paths = [
    "/srv/my data/messages.jsonl",
    "a=b.jsonl",
    "dir/ x=1.jsonl",
    "/srv/EXPORT=1/m.jsonl",
  ];
  for (const path of paths) {
    assert.equal(parseConfig({ MESSAGES_FILE: path }).messagesFile, path);
  }
  assert.match(
    parseConfigError({ MESSAGES_FILE: "messages.jsonl CHALLENGE=altcha" }),
    /^"MESSAGES_FILE" holds NAME=\.\.\. after its value/,
  );
});

function parseConfigError(env: Record<string, string>): string {
  try {
    parseConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
  }
  return assert.fail("expected a ConfigError");
}

Deno.test("log lines redact the token in every form: encoded twice, split by a newline, in part", () => {
  const lines: string[] = [];
  const log = createLogger((line) => lines.push(line), () => new Date(0), [REAL]);
  log("error", { event: "a", error: `url /bot${REAL.replace(":", "%253A")}/sendMessage` });
  log("error", { event: "b", error: `${SECRET.slice(0, 20)}\n${SECRET.slice(20)}` });
  log("error", { event: "c", error: `cut: ${SECRET.slice(5, 30)}` });
  assert.equal(lines.length, 3);
  for (const line of lines) {
    assert.deepEqual(leaks(line), [], line);
    assert.match(JSON.parse(line).error, /<redacted>/);
  }
});

Deno.test("a Bot API description holding the token double-encoded or split never reaches the result", async () => {
  for (
    const description of [
      `Bad Request: /bot${REAL.replace(":", "%253A")}/x`,
      `Bad Request: ${REAL.slice(0, 30)}\n${REAL.slice(30)}`,
      `Bad Request: ${SECRET.slice(2, 14)}`,
    ]
  ) {
    const fetch: typeof globalThis.fetch = () =>
      Promise.resolve(
        new Response(JSON.stringify({ ok: false, error_code: 400, description }), {
          status: 400,
        }),
      );
    const result = await callBotApi(
      { apiUrl: "http://127.0.0.1:9", token: REAL, timeoutMs: 1000, fetch },
      "getMe",
      {},
    );
    assert.ok(!result.ok);
    assert.deepEqual(leaks(result.error), [], result.error);
    assert.match(result.error, /^400 Bad Request: .*<redacted>/);
  }
});
