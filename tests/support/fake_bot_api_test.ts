import assert from "node:assert/strict";
import {
  answerCallbackQuery,
  callBotApi,
  deleteMessage,
  editMessageReplyMarkup,
  editMessageText,
  getChatAdministrators,
  getUpdates,
  isConflict,
  isNotModified,
  messageIdOf,
  sendMessage,
  sendNotification,
  type TelegramOptions,
} from "../../lib/bot/api.ts";
import { keyboardFor } from "../../lib/bot/keyboard.ts";
import { ALLOWED_UPDATES, parseUpdates } from "../../lib/bot/updates.ts";
import {
  chatMigrated,
  CONFLICT_DESCRIPTIONS,
  DEFAULT_USER_ID,
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

// --- The chat actions' methods: messages, edits, toasts, deletions, long polling. ---

const ANSWERS = { apiUrl: "", token: TOKEN, timeoutMs: 10_000, fetch };

/** Waits (briefly polling real time: the fake is a real server) until `done()` holds. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 5));
}

Deno.test("fake sendMessage answers a real Message, ids counting per chat, and keeps it with its buttons", () =>
  withFake(async (fake, options) => {
    fake.chats.add(555);
    const keyboard = keyboardFor("open", "k3x9q2ab");
    const first = await sendMessage(options, CHAT_ID, "one", undefined, { replyMarkup: keyboard });
    const second = await sendMessage(options, CHAT_ID, "two", undefined, { replyTo: 1 });
    const elsewhere = await sendMessage(options, 555, "three");
    assert.deepEqual([first, second, elsewhere].map(messageIdOf), [1, 2, 1]);
    assert.ok(first.ok);
    const message = first.result as Record<string, unknown>;
    assert.deepEqual(message.chat, {
      id: CHAT_ID,
      type: "supergroup",
      title: "contactd test group",
    });
    assert.equal(message.text, "one");
    assert.deepEqual(message.reply_markup, keyboard);
    assert.ok(second.ok);
    assert.equal(
      (second.result as { reply_to_message: { text: string } }).reply_to_message.text,
      "one",
    );
    assert.deepEqual(fake.messages.get(`${CHAT_ID}:1`), { text: "one", replyMarkup: keyboard });
    assert.deepEqual(fake.messages.get(`${CHAT_ID}:2`), {
      text: "two",
      replyMarkup: undefined,
      replyTo: 1,
    });
    assert.deepEqual(fake.delivered, ["one", "two", "three"]);
    assert.deepEqual(fake.deliveredChats, [CHAT_ID, CHAT_ID, 555]);
  }));

Deno.test("fake sendMessage refuses a reply to a missing message unless allowed, and oversized button data", () =>
  withFake(async (fake, options) => {
    assert.deepEqual(
      await callBotApi(options, "sendMessage", {
        chat_id: CHAT_ID,
        text: "x",
        reply_parameters: { message_id: 99 },
      }),
      { ok: false, error: "400 Bad Request: message to be replied not found", errorCode: 400 },
    );
    const allowed = await sendMessage(options, CHAT_ID, "x", undefined, { replyTo: 99 });
    assert.equal(messageIdOf(allowed), 1);
    assert.equal(fake.messages.get(`${CHAT_ID}:1`)?.replyTo, undefined);
    const tooLong = await callBotApi(options, "sendMessage", {
      chat_id: CHAT_ID,
      text: "x",
      reply_markup: { inline_keyboard: [[{ text: "b", callback_data: "x".repeat(65) }]] },
    });
    assert.deepEqual(tooLong, {
      ok: false,
      error: "400 Bad Request: BUTTON_DATA_INVALID",
      errorCode: 400,
    });
    assert.deepEqual(fake.delivered, ["x"]);
  }));

Deno.test("fake edits apply once, refuse an unknown message, and call an unchanged edit not modified", () =>
  withFake(async (fake, options) => {
    const open = keyboardFor("open", "k3x9q2ab");
    const handled = keyboardFor("handled", "k3x9q2ab");
    await sendMessage(options, CHAT_ID, "note", undefined, { replyMarkup: open });
    const edited = await editMessageText(options, CHAT_ID, 1, "note\n\n— done", handled);
    assert.equal(messageIdOf(edited), 1);
    const again = await editMessageText(options, CHAT_ID, 1, "note\n\n— done", handled);
    assert.ok(isNotModified(again), JSON.stringify(again));
    assert.deepEqual(
      await editMessageText(options, CHAT_ID, 9, "x"),
      { ok: false, error: "400 Bad Request: message to edit not found", errorCode: 400 },
    );
    const long = await editMessageText(options, CHAT_ID, 1, "x".repeat(4097), handled);
    assert.equal(long.ok, false);
    assert.ok(isNotModified(await editMessageReplyMarkup(options, CHAT_ID, 1, handled)));
    assert.equal((await editMessageReplyMarkup(options, CHAT_ID, 1, open)).ok, true);
    assert.deepEqual(fake.messages.get(`${CHAT_ID}:1`), {
      text: "note\n\n— done",
      replyMarkup: open,
    });
    assert.deepEqual(fake.edits, [
      {
        method: "editMessageText",
        chatId: CHAT_ID,
        messageId: 1,
        text: "note\n\n— done",
        replyMarkup: handled,
      },
      { method: "editMessageReplyMarkup", chatId: CHAT_ID, messageId: 1, replyMarkup: open },
    ]);
    // editMessageText without buttons removes them: a change.
    assert.equal((await editMessageText(options, CHAT_ID, 1, "note\n\n— done")).ok, true);
    assert.equal(fake.messages.get(`${CHAT_ID}:1`)?.replyMarkup, undefined);
  }));

Deno.test("fake edits are metered by the flood control like messages", async () => {
  const fake = startFakeBotApi({
    token: TOKEN,
    chatId: CHAT_ID,
    floodControl: {
      chatBurst: 2,
      chatIntervalMs: 60_000,
      groupPerMinute: 20,
      overallPerSecond: 30,
    },
  });
  try {
    const options = { ...ANSWERS, apiUrl: fake.url };
    assert.equal((await sendMessage(options, CHAT_ID, "a")).ok, true);
    assert.equal((await editMessageText(options, CHAT_ID, 1, "b")).ok, true);
    const third = await editMessageText(options, CHAT_ID, 1, "c");
    assert.equal(!third.ok && third.errorCode, 429);
    assert.equal(fake.floods, 1);
    assert.equal(fake.messages.get(`${CHAT_ID}:1`)?.text, "b");
  } finally {
    await fake.close();
  }
});

Deno.test("fake toasts answer only a query it issued, once; deletions remove a message once", () =>
  withFake(async (fake, options) => {
    await sendMessage(options, CHAT_ID, "note");
    const press = fake.pressUpdate({ chatId: CHAT_ID, messageId: 1, data: "h:k3x9q2ab" });
    const queryId = (press.callback_query as { id: string }).id;
    assert.equal((await answerCallbackQuery(options, queryId, "Marked handled")).ok, true);
    const tooOld = {
      ok: false,
      error:
        "400 Bad Request: query is too old and response timeout expired or query ID is invalid",
      errorCode: 400,
    };
    assert.deepEqual(await answerCallbackQuery(options, queryId, "again"), tooOld);
    assert.deepEqual(await answerCallbackQuery(options, "forged", "x"), tooOld);
    assert.deepEqual(fake.toasts, [{ queryId, text: "Marked handled" }]);

    assert.equal((await deleteMessage(options, CHAT_ID, 1)).ok, true);
    assert.deepEqual(await deleteMessage(options, CHAT_ID, 1), {
      ok: false,
      error: "400 Bad Request: message to delete not found",
      errorCode: 400,
    });
    assert.equal(fake.messages.has(`${CHAT_ID}:1`), false);
    assert.deepEqual(fake.deletions, [{ chatId: CHAT_ID, messageId: 1 }]);
  }));

Deno.test("fake getChatAdministrators answers the ids a test set", () =>
  withFake(async (fake, options) => {
    assert.deepEqual(await getChatAdministrators(options, CHAT_ID), { ok: true, userIds: [] });
    fake.admins.set(CHAT_ID, [7, 8]);
    assert.deepEqual(await getChatAdministrators(options, CHAT_ID), { ok: true, userIds: [7, 8] });
  }));

Deno.test("fake getUpdates answers waiting updates at once and confirms those before the offset", () =>
  withFake(async (fake, options) => {
    const ids = [1, 2, 3].map((n) => fake.pushUpdate({ message: { n } }));
    assert.deepEqual(ids, [1, 2, 3]);
    const poll = (offset?: number) =>
      getUpdates(options, { offset, timeoutS: 0, allowedUpdates: ALLOWED_UPDATES });
    const all = await poll();
    assert.ok(all.ok);
    assert.deepEqual(all.updates.map((update) => (update as { update_id: number }).update_id), ids);
    const rest = await poll(3);
    assert.deepEqual(rest.ok && rest.updates, [{ update_id: 3, message: { n: 3 } }]);
    assert.deepEqual(fake.updates, [{ update_id: 3, message: { n: 3 } }]);
    const none = await poll(4);
    assert.deepEqual(none.ok && none.updates, []);
    assert.deepEqual(fake.polls, [undefined, 3, 4]);
    // Ids keep increasing after confirmation.
    assert.equal(fake.pushUpdate({ message: {} }), 4);
  }));

Deno.test("fake getUpdates leaves out update types not allowed", () =>
  withFake(async (fake, options) => {
    fake.pushUpdate({ edited_message: {} });
    fake.pushUpdate({ callback_query: {} });
    const result = await getUpdates(options, { timeoutS: 0, allowedUpdates: ["callback_query"] });
    assert.deepEqual(result.ok && result.updates, [{ update_id: 2, callback_query: {} }]);
  }));

Deno.test("fake long poll waits for an update and is woken by it", () =>
  withFake(async (fake, options) => {
    const pending = getUpdates(options, {
      offset: 1,
      timeoutS: 30,
      allowedUpdates: ALLOWED_UPDATES,
    });
    await until(() => fake.polls.length === 1);
    let settled = false;
    pending.then(() => settled = true, () => settled = true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(settled, false, "a long poll with nothing to say waits");
    fake.pushUpdate(fake.commandUpdate({ chatId: CHAT_ID, text: "/status" }));
    const result = await pending;
    assert.ok(result.ok);
    assert.deepEqual(parseUpdates(result.updates, "contactd_bot").map((event) => event.kind), [
      "command",
    ]);
  }));

Deno.test("fake getUpdates answers 409 with Telegram's words for a webhook or another poller", () =>
  withFake(async (fake, options) => {
    const poll = () => getUpdates(options, { timeoutS: 0, allowedUpdates: ALLOWED_UPDATES });
    fake.conflict = "webhook";
    const webhook = await poll();
    assert.ok(isConflict(webhook));
    assert.deepEqual(webhook, {
      ok: false,
      error: `409 ${CONFLICT_DESCRIPTIONS.webhook}`,
      errorCode: 409,
    });
    assert.match(CONFLICT_DESCRIPTIONS.webhook, /use deleteWebhook to delete the webhook first$/);
    fake.conflict = "poller";
    assert.deepEqual(await poll(), {
      ok: false,
      error: `409 ${CONFLICT_DESCRIPTIONS.poller}`,
      errorCode: 409,
    });
    fake.conflict = false;
    assert.equal((await poll()).ok, true);
  }));

Deno.test("fake: a second long poll ends the waiting one with 409, as another process would", () =>
  withFake(async (fake, options) => {
    const first = getUpdates(options, { timeoutS: 30, allowedUpdates: ALLOWED_UPDATES });
    await until(() => fake.polls.length === 1);
    const second = getUpdates(options, { timeoutS: 0, allowedUpdates: ALLOWED_UPDATES });
    const ended = await first;
    assert.ok(isConflict(ended), JSON.stringify(ended));
    assert.equal((await second).ok, true);
  }));

Deno.test("fake close() releases a waiting long poll", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const options = { ...ANSWERS, apiUrl: fake.url };
  const pending = getUpdates(options, { timeoutS: 50, allowedUpdates: ALLOWED_UPDATES });
  await until(() => fake.polls.length === 1);
  await fake.close();
  assert.deepEqual(await pending, { ok: true, updates: [] });
});

Deno.test("fake long polls are answered aside: not in calls, not taking scripted replies", () =>
  withFake(async (fake, options) => {
    fake.script.push(tooManyRequests(3));
    const polled = await getUpdates(options, { timeoutS: 0, allowedUpdates: ALLOWED_UPDATES });
    assert.equal(polled.ok, true);
    assert.deepEqual(fake.calls, []);
    assert.equal(fake.script.length, 1);
  }));

Deno.test("fake update helpers build what Telegram sends, read back by parseUpdates", () =>
  withFake(async (fake, options) => {
    const keyboard = keyboardFor("open", "k3x9q2ab");
    await sendMessage(options, CHAT_ID, "New contact message #k3x9q2ab", undefined, {
      replyMarkup: keyboard,
    });
    fake.pushUpdate(
      fake.pressUpdate({ chatId: CHAT_ID, messageId: 1, data: "s:k3x9q2ab", firstName: "Anna" }),
    );
    fake.pushUpdate(fake.commandUpdate({ chatId: CHAT_ID, text: "/pending", topicId: 4 }));
    fake.pushUpdate(fake.replyUpdate({ chatId: CHAT_ID, replyTo: 1, text: "Thanks!", fromId: 9 }));
    fake.pushUpdate(fake.replyUpdate({ chatId: CHAT_ID, replyTo: 1, text: "" }));
    fake.pushUpdate(fake.pressUpdate({ chatId: CHAT_ID, messageId: 77, data: "h:forged" }));
    const result = await getUpdates(options, { timeoutS: 0, allowedUpdates: ALLOWED_UPDATES });
    assert.ok(result.ok);
    const events = parseUpdates(result.updates, "contactd_bot");
    const queryId = (fake.updates[0] as { callback_query: { id: string } }).callback_query.id;
    assert.deepEqual(events, [
      {
        kind: "press",
        updateId: 1,
        queryId,
        chatId: CHAT_ID,
        messageId: 1,
        from: { id: DEFAULT_USER_ID, name: "Anna" },
        data: "s:k3x9q2ab",
        text: "New contact message #k3x9q2ab",
      },
      {
        kind: "command",
        updateId: 2,
        chatId: CHAT_ID,
        messageId: 2,
        topicId: 4,
        from: { id: DEFAULT_USER_ID, name: "Owner" },
        command: "pending",
      },
      {
        kind: "reply",
        updateId: 3,
        chatId: CHAT_ID,
        messageId: 3,
        from: { id: 9, name: "Owner" },
        text: "Thanks!",
        replyTo: 1,
        replyToBot: true,
      },
      {
        kind: "reply",
        updateId: 4,
        chatId: CHAT_ID,
        messageId: 4,
        from: { id: DEFAULT_USER_ID, name: "Owner" },
        text: "",
        replyTo: 1,
        replyToBot: true,
      },
      {
        kind: "press",
        updateId: 5,
        queryId: (fake.updates[4] as { callback_query: { id: string } }).callback_query.id,
        chatId: CHAT_ID,
        messageId: 77,
        from: { id: DEFAULT_USER_ID, name: "Owner" },
        data: "h:forged",
      },
    ]);
    // The owner's messages take ids from the chat's counter: the bot's next message is 5.
    assert.equal(messageIdOf(await sendMessage(options, CHAT_ID, "next")), 5);
    assert.equal(fake.messages.get(`${CHAT_ID}:3`)?.from, 9);
    // An owner's message is not the bot's to edit.
    const edit = await editMessageText(options, CHAT_ID, 3, "changed");
    assert.equal(!edit.ok && edit.error, "400 Bad Request: message can't be edited");
  }));
