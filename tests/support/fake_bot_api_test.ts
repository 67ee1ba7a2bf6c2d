import assert from "node:assert/strict";
import { callBotApi, sendNotification, type TelegramOptions } from "../../lib/bot/api.ts";
import {
  chatMigrated,
  type FakeBotApi,
  htmlError,
  startFakeBotApi,
  tooManyRequests,
} from "./fake_bot_api.ts";

const TOKEN = "424242:fake-TOKEN_for_tests";
const CHAT_ID = -100777;

/** Runs `test` against a fresh fake, always closing it. */
async function withFake(
  test: (fake: FakeBotApi, options: TelegramOptions) => Promise<void>,
): Promise<void> {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID, botUsername: "contactd_bot" });
  const options: TelegramOptions = {
    apiUrl: fake.url,
    token: TOKEN,
    chatId: CHAT_ID,
    timeoutMs: 10_000,
    fetch,
  };
  try {
    await test(fake, options);
  } finally {
    await fake.close();
  }
}

Deno.test("fake Bot API accepts a notification over real HTTP", () =>
  withFake(async (fake, options) => {
    assert.deepEqual(await sendNotification(options, "hello <3 *world*"), { ok: true, parts: 1 });
    assert.deepEqual(fake.delivered, ["hello <3 *world*"]);
    assert.deepEqual(fake.calls, [{
      method: "sendMessage",
      token: TOKEN,
      body: {
        chat_id: CHAT_ID,
        text: "hello <3 *world*",
        link_preview_options: { is_disabled: true },
      },
    }]);
  }));

Deno.test("fake Bot API rejects a wrong token with 401 but still records the call", () =>
  withFake(async (fake, options) => {
    const result = await sendNotification({ ...options, token: "1:wrong" }, "hi");
    assert.deepEqual(result, { ok: false, error: "401 Unauthorized" });
    assert.equal(fake.calls[0]?.token, "1:wrong");
    assert.deepEqual(fake.delivered, []);
  }));

Deno.test("fake Bot API answers an unknown method with 404", () =>
  withFake(async (_fake, options) => {
    assert.deepEqual(await callBotApi(options, "sendTelepathy", {}), {
      ok: false,
      error: "404 Not Found",
      errorCode: 404,
    });
  }));

Deno.test("fake Bot API rejects another chat as not found", () =>
  withFake(async (fake, options) => {
    const result = await sendNotification({ ...options, chatId: 12345 }, "hi");
    assert.deepEqual(result, { ok: false, error: "400 Bad Request: chat not found" });
    assert.deepEqual(fake.delivered, []);
  }));

Deno.test("fake Bot API rejects empty text and text over 4096 units", () =>
  withFake(async (fake, options) => {
    const send = (text: string) => callBotApi(options, "sendMessage", { chat_id: CHAT_ID, text });
    assert.deepEqual(await send("   "), {
      ok: false,
      error: "400 Bad Request: message text is empty",
      errorCode: 400,
    });
    assert.deepEqual(await send("x".repeat(4097)), {
      ok: false,
      error: "400 Bad Request: message is too long",
      errorCode: 400,
    });
    assert.equal((await send("😀".repeat(2048))).ok, true);
    assert.deepEqual(fake.delivered, ["😀".repeat(2048)]);
  }));

Deno.test("sendNotification splits a long text so the fake's 4096 limit is never hit", () =>
  withFake(async (fake, options) => {
    const text = "😀".repeat(2049) + "\n" + "a".repeat(5000);
    assert.deepEqual(await sendNotification(options, text), { ok: true, parts: 3 });
    assert.equal(fake.delivered.join(""), text);
  }));

Deno.test("fake Bot API answers getMe and getUpdates like the real one", () =>
  withFake(async (fake, options) => {
    assert.deepEqual(await callBotApi(options, "getMe", {}), {
      ok: true,
      result: { id: 424242, is_bot: true, first_name: "contactd test", username: "contactd_bot" },
    });
    fake.updates = [{ update_id: 7 }];
    assert.deepEqual(await callBotApi(options, "getUpdates", {}), {
      ok: true,
      result: [{ update_id: 7 }],
    });
  }));

Deno.test("sendNotification reports a scripted 429 with its retry_after", () =>
  withFake(async (fake, options) => {
    fake.script.push(tooManyRequests(42));
    assert.deepEqual(await sendNotification(options, "hi"), {
      ok: false,
      error: "429 Too Many Requests: retry after 42",
    });
    assert.deepEqual(fake.delivered, []);
  }));

Deno.test("sendNotification reports a scripted HTML 502 as a non-JSON reply", () =>
  withFake(async (fake, options) => {
    fake.script.push(htmlError(502));
    assert.deepEqual(await sendNotification(options, "hi"), {
      ok: false,
      error: "502 bad gateway (non-JSON reply)",
    });
  }));

Deno.test("sendNotification surfaces a scripted chat migration", () =>
  withFake(async (fake, options) => {
    fake.script.push(chatMigrated(-1001234));
    assert.deepEqual(await sendNotification(options, "hi"), {
      ok: false,
      error: "400 Bad Request: group chat was upgraded to a supergroup chat",
      migrateToChatId: -1001234,
    });
  }));

Deno.test("sendNotification times out on a hanging fake, then close() still returns", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  fake.script.push("hang");
  const options = { apiUrl: fake.url, token: TOKEN, chatId: CHAT_ID, timeoutMs: 200, fetch };
  const started = Date.now();
  const result = await sendNotification(options, "hi");
  assert.deepEqual(result, { ok: false, error: "timeout" });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 150 && elapsed < 5000, `took ${elapsed} ms`);
  await fake.close();
  assert.equal(fake.calls.length, 1);
});

Deno.test("fake Bot API close() releases a request still waiting on a hang", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID, scriptGetMe: true });
  fake.script.push("hang");
  const options = { apiUrl: fake.url, token: TOKEN, timeoutMs: 10_000, fetch };
  const pending = callBotApi(options, "getMe", {});
  // Real HTTP: poll briefly until the request has reached the fake.
  while (fake.calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  await fake.close();
  assert.deepEqual(await pending, {
    ok: false,
    error: "503 Service Unavailable: fake is closing",
    errorCode: 503,
  });
  await fake.close(); // idempotent
});

Deno.test("sendNotification names a real refused connection without leaking the token", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  await fake.close(); // the port is now closed
  const options = { apiUrl: fake.url, token: TOKEN, chatId: CHAT_ID, timeoutMs: 5000, fetch };
  const result = await sendNotification(options, "hi");
  assert.deepEqual(result, { ok: false, error: "network error: connection refused" });
});

Deno.test("fake Bot API answers a scripted delay as usual, that much later", () =>
  withFake(async (fake, options) => {
    fake.script.push({ delayMs: 300 });
    const started = Date.now();
    assert.deepEqual(await sendNotification(options, "slow"), { ok: true, parts: 1 });
    assert.ok(Date.now() - started >= 250, "answered after the delay");
    assert.deepEqual(fake.delivered, ["slow"]);
  }));

Deno.test("fake Bot API refuses every text matching refuse with 400 message is too long", () =>
  withFake(async (fake, options) => {
    fake.refuse = /poison/;
    const refused = { ok: false, error: "400 Bad Request: message is too long" };
    assert.deepEqual(await sendNotification(options, "a poison pill"), refused);
    assert.deepEqual(await sendNotification(options, "a poison pill"), refused);
    assert.deepEqual(await sendNotification(options, "fine"), { ok: true, parts: 1 });
    assert.deepEqual(fake.delivered, ["fine"]);
  }));
