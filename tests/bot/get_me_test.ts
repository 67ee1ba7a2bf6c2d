/**
 * The start-up `getMe`: the bot's username for the `listening` line, or one line with the fix
 * for a token Telegram refuses.
 */
import assert from "node:assert/strict";
import { botCheckReport, getMe } from "../../lib/bot/api.ts";
import { apiError, startFakeBotApi } from "../support/fake_bot_api.ts";

const TOKEN = "424242:AAE_secret-token-value";

async function withFake(
  run: (fake: ReturnType<typeof startFakeBotApi>, url: string) => Promise<void>,
) {
  const fake = startFakeBotApi({
    token: TOKEN,
    chatId: 7,
    botUsername: "site_bot",
    scriptGetMe: true,
  });
  try {
    await run(fake, fake.url);
  } finally {
    await fake.close();
  }
}

Deno.test("getMe gives the bot's username and id; the report puts @username in the listening line", () =>
  withFake(async (_fake, apiUrl) => {
    const identity = await getMe({ apiUrl, token: TOKEN, timeoutMs: 5000, fetch });
    assert.deepEqual(identity, { ok: true, username: "site_bot", id: 424242 });
    assert.deepEqual(botCheckReport(identity), { bot: "@site_bot" });
  }));

Deno.test("a refused token at start is one error line with the fix, never the token", () =>
  withFake(async (_fake, apiUrl) => {
    const identity = await getMe({ apiUrl, token: "1:wrong", timeoutMs: 5000, fetch });
    assert.deepEqual(identity, { ok: false, error: "401 Unauthorized", tokenRefused: true });
    const report = botCheckReport(identity);
    assert.ok("fields" in report);
    assert.equal(report.level, "error");
    assert.equal(report.fields.event, "bot_token_refused");
    assert.match(String(report.fields.hint), /@BotFather.*restart; messages are stored/);
    assert.ok(!JSON.stringify(report).includes("1:wrong"));
  }));

Deno.test("a getMe that fails otherwise (5xx, network) is a warning: delivery retries by itself", () =>
  withFake(async (fake, apiUrl) => {
    fake.script.push(apiError(502, "Bad Gateway"));
    const report = botCheckReport(await getMe({ apiUrl, token: TOKEN, timeoutMs: 5000, fetch }));
    assert.deepEqual(report, {
      level: "warn",
      fields: { event: "bot_check_failed", error: "502 Bad Gateway" },
    });
    fake.script.push({ status: 200, body: { ok: true, result: { id: "x" } } });
    const odd = await getMe({ apiUrl, token: TOKEN, timeoutMs: 5000, fetch });
    assert.deepEqual(odd, { ok: false, error: "invalid getMe reply", tokenRefused: false });
  }));
