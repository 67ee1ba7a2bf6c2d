/**
 * End to end, the chat actions (issue 23): the real service process against the fake Bot API,
 * which serves `getUpdates` by long polling and records edits and toasts. Buttons on a
 * notification's first part, Spam blocking the sender's address and contact, Handled and
 * Reopen, refusals of presses from elsewhere, a restart in the middle of an action, a `409`,
 * `/status` and `/pending`, `CHAT_ACTIONS=0`, and a stop that ends the long poll at once.
 */
import assert from "node:assert/strict";
import { REFUSAL_TOASTS } from "../../lib/inbox/actions.ts";
import { OFFSET_KEY, offsetText, parseOffset } from "../../lib/inbox/offset_file.ts";
import { databasePath, openLocalStore } from "../../lib/storage/store.ts";
import type { FakeBotApi, FakeMarkup } from "../support/fake_bot_api.ts";
import {
  assertNoTokenLeak,
  CHAT_ID,
  runBlockCommand,
  type Service,
  waitFor,
  withRestarts,
  withService,
} from "../support/service.ts";

/** A chat contactd does not notify. */
const OTHER_CHAT = -1009999;
/** The contact and the text every test submits: neither may show up in a log line. */
const CONTACT = "spammer@example.org";
const TEXT = "Buy cheap watches now";
const SPAMMER_IP = "198.51.100.9";
const OTHER_IP = "203.0.113.44";
/** About 5000 characters in all (the message may have 4000): a notification in two parts. */
const LONG = { message: "word ".repeat(780), note: "n".repeat(1000) };

/** POSTs a submission and checks it was answered 200. */
async function submit(service: Service, ip: string, body: Record<string, string> = {}) {
  const response = await service.post({ contact: CONTACT, message: TEXT, ...body }, ip);
  assert.equal(response.status, 200, await response.text());
}

/** The message ids of every part the bot sent for submission `id`, in order. */
function partsOf(fake: FakeBotApi, id: string, chat = CHAT_ID): number[] {
  const ids: number[] = [];
  for (const [key, message] of fake.messages) {
    const [chatId, messageId] = key.split(":").map(Number);
    if (chatId !== chat || message.from !== undefined) continue;
    if (
      message.text.startsWith(`New contact message #${id}`) ||
      /^\(\d+\/\d+\) #(\w+)\n/.exec(message.text)?.[1] === id
    ) {
      ids.push(messageId!);
    }
  }
  return ids;
}

/** The buttons of a message: `[label, callback_data]` of its one row; `[]` without any. */
function buttonsOf(fake: FakeBotApi, messageId: number, chat = CHAT_ID): string[][] {
  const markup: FakeMarkup | undefined = fake.messages.get(`${chat}:${messageId}`)?.replyMarkup;
  if (markup === undefined) return [];
  assert.equal(markup.inline_keyboard.length, 1, "one row of buttons");
  return markup.inline_keyboard[0]!.map((button) => [button.text, button.callback_data]);
}

/** Pushes a press of `data` on `messageId` in `chatId`; returns the update id. */
function press(fake: FakeBotApi, messageId: number, data: string, chatId = CHAT_ID): number {
  return fake.pushUpdate(fake.pressUpdate({ chatId, messageId, data }));
}

/** Presses and waits for its toast (the press is then handled); returns the toast's text. */
async function pressAndToast(fake: FakeBotApi, messageId: number, data: string, chatId = CHAT_ID) {
  const before = fake.toasts.length;
  press(fake, messageId, data, chatId);
  await waitFor(() => fake.toasts.length > before, 15_000, `the toast of ${data}`);
  return fake.toasts[before]!.text;
}

/** The last submission's id, from the backup file. */
async function lastId(service: Service): Promise<string> {
  const id = (await service.records()).at(-1)?.id;
  assert.equal(typeof id, "string");
  return id as string;
}

/** Log lines of `event` (about submission `id`, when given) across `services`. */
function lines(services: readonly Service[], event: string, id?: string) {
  return services.flatMap((service) => service.logs()).filter((line) =>
    line.event === event && (id === undefined || line.id === id)
  );
}

/** Sum of `key` over every `contact_summary` line. */
function summed(service: Service, key: string): number {
  return lines([service], "contact_summary").reduce(
    (sum, line) => sum + (typeof line[key] === "number" ? line[key] as number : 0),
    0,
  );
}

/** No log line holds the token, the contact or the message text. */
function assertPrivate(service: Service) {
  assertNoTokenLeak(service);
  for (const line of [...service.stdout, ...service.stderr]) {
    assert.ok(!line.includes(CONTACT), `the contact leaked in: ${line}`);
    assert.ok(!line.includes(TEXT), `the message text leaked in: ${line}`);
  }
}

/** The updates offset the service kept in `file`'s database (read with it stopped). */
async function keptOffset(file: string): Promise<number | undefined> {
  const store = openLocalStore(databasePath(file), { create: false });
  try {
    const text = await store.run("meta.get", { key: OFFSET_KEY });
    return text === undefined ? undefined : parseOffset(text)?.offset;
  } finally {
    await store.close();
  }
}

/** Sets the updates offset kept in `file`'s database (the service stopped) to `offset`. */
async function keepOffset(file: string, offset: number): Promise<void> {
  const store = openLocalStore(databasePath(file), { create: false });
  try {
    await store.run("meta.set", { key: OFFSET_KEY, value: offsetText({ offset }) });
  } finally {
    await store.close();
  }
}

/** The bot's message in `chat` that replies to `messageId`, if any. */
function answerTo(fake: FakeBotApi, messageId: number, chat = CHAT_ID) {
  for (const [key, message] of fake.messages) {
    if (key.startsWith(`${chat}:`) && message.from === undefined && message.replyTo === messageId) {
      return message.text;
    }
  }
  return undefined;
}

Deno.test("e2e: a split notification carries [✓ Handled] [🚫 Spam] on its first part only", async () => {
  await withService({}, async (service, fake) => {
    await submit(service, SPAMMER_IP, LONG);
    const id = await lastId(service);
    const parts = partsOf(fake, id);
    assert.equal(parts.length, 2);
    assert.deepEqual(buttonsOf(fake, parts[0]!), [["✓ Handled", `h:${id}`], [
      "🚫 Spam",
      `s:${id}`,
    ]]);
    assert.deepEqual(buttonsOf(fake, parts[1]!), []);
    const sends = fake.calls.filter((call) => call.method === "sendMessage");
    assert.deepEqual(sends.map((call) => call.body.reply_markup !== undefined), [true, false]);
    assertPrivate(service);
  });
});

Deno.test("e2e: Spam blocks the sender's address and contact, held records say so; Not spam lets both through", async () => {
  await withService({}, async (service, fake) => {
    await submit(service, SPAMMER_IP);
    const id = await lastId(service);
    const [first] = partsOf(fake, id);
    const spam = buttonsOf(fake, first!).find(([label]) => label === "🚫 Spam")![1]!;
    assert.match(await pressAndToast(fake, first!, spam), /spam/i);
    await waitFor(() => fake.edits.length === 1, 15_000, "the edit after Spam");
    const edit = fake.edits[0]!;
    assert.equal(edit.messageId, first);
    assert.match(edit.text ?? "", /\n\n— 🚫 Spam by Owner, \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    assert.deepEqual(buttonsOf(fake, first!), [["✅ Not spam", `n:${id}`]]);
    assert.equal(lines([service], "marked_spam", id).length, 1);
    assert.equal(lines([service], "blocked", id).length, 1);

    // The same address (another contact), then the same contact from another address: held.
    const delivered = fake.delivered.length;
    await submit(service, SPAMMER_IP, { contact: "someone-else@example.org" });
    await submit(service, OTHER_IP);
    const held = (await service.records()).slice(-2);
    assert.deepEqual(held.map((record) => [record.held, record.block]), [
      ["spam", `address:${SPAMMER_IP}`],
      ["spam", `contact:${CONTACT}`],
    ]);
    assert.ok(held.every((record) => record.messenger_ok === false));
    assert.equal(fake.delivered.length, delivered, "nothing of the blocked sender was sent");

    // /status counts them.
    const ask = fake.commandUpdate({ chatId: CHAT_ID, text: "/status" });
    fake.pushUpdate(ask);
    const asked = (ask.message as { message_id: number }).message_id;
    await waitFor(() => answerTo(fake, asked) !== undefined, 15_000, "the /status answer");
    assert.match(answerTo(fake, asked)!, /Last 24 h: 1 delivered, 2 held as spam, /);

    // Not spam: the block is lifted, both go through.
    assert.match(await pressAndToast(fake, first!, `n:${id}`), /not spam/i);
    await waitFor(() => fake.edits.length === 2, 15_000, "the edit after Not spam");
    assert.match(fake.edits[1]!.text ?? "", /\n\n— ↩ Reopened by Owner, [^\n]+ UTC$/);
    assert.doesNotMatch(fake.edits[1]!.text ?? "", /🚫 Spam by/, "the state line is replaced");
    assert.deepEqual(buttonsOf(fake, first!), [["✓ Handled", `h:${id}`], ["🚫 Spam", `s:${id}`]]);
    assert.equal(lines([service], "unblocked", id).length, 1);
    const answered = fake.delivered.length; // the /status answer is a sendMessage too
    await submit(service, SPAMMER_IP, { contact: "someone-else@example.org" });
    await submit(service, OTHER_IP);
    assert.equal(fake.delivered.length, answered + 2);
    const after = (await service.records()).slice(-2);
    assert.ok(after.every((record) => record.messenger_ok === true && record.held === undefined));
    assert.equal(await service.stop(), 0);
    assert.equal(summed(service, "held_spam"), 2, "held submissions are counted in the summaries");
    assertPrivate(service);
  });
});

Deno.test("e2e: contactd unblock while the service runs: the running service lets the sender through within a second", async () => {
  await withService({}, async (service, fake) => {
    await submit(service, SPAMMER_IP);
    const id = await lastId(service);
    const [first] = partsOf(fake, id);
    assert.match(await pressAndToast(fake, first!, `s:${id}`), /spam/i);
    await waitFor(() => lines([service], "blocked", id).length === 1, 15_000, "the block");
    await submit(service, SPAMMER_IP, { contact: "someone-else@example.org" });
    assert.equal((await service.records()).at(-1)!.held, "spam");

    const listed = await runBlockCommand(service.file, "blocked");
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^address\\t${SPAMMER_IP}\\t.*\\t${id}$`, "m"));
    const lifted = await runBlockCommand(service.file, "unblock", SPAMMER_IP);
    assert.equal(lifted.code, 0, lifted.stderr);
    assert.match(lifted.stdout, /^lifted 1 block\(s\) of address:198\.51\.100\.9 /);
    await waitFor(
      () => lines([service], "unblocked").some((line) => line.by === "command"),
      3_000,
      "the service taking the unblock in",
    );
    const delivered = fake.delivered.length;
    await submit(service, SPAMMER_IP, { contact: "someone-else@example.org" });
    assert.equal((await service.records()).at(-1)!.held, undefined, "no longer blocked");
    assert.equal(fake.delivered.length, delivered + 1);
    // The contact block stays: unblock lifted the address only.
    await submit(service, OTHER_IP);
    assert.equal((await service.records()).at(-1)!.held, "spam");
    assert.equal(await service.stop(), 0);
    assertPrivate(service);
  });
});

Deno.test("e2e: Handled then Reopen edit the notification's state and block nobody", async () => {
  await withService({}, async (service, fake) => {
    await submit(service, SPAMMER_IP);
    const id = await lastId(service);
    const [first] = partsOf(fake, id);
    assert.match(await pressAndToast(fake, first!, `h:${id}`), /handled/i);
    await waitFor(() => fake.edits.length === 1, 15_000, "the edit after Handled");
    assert.match(fake.edits[0]!.text ?? "", /\n\n— ✓ Handled by Owner, [^\n]+ UTC$/);
    assert.deepEqual(buttonsOf(fake, first!), [["↩ Reopen", `o:${id}`]]);
    assert.match(await pressAndToast(fake, first!, `o:${id}`), /reopened/i);
    await waitFor(() => fake.edits.length === 2, 15_000, "the edit after Reopen");
    assert.match(fake.edits[1]!.text ?? "", /\n\n— ↩ Reopened by Owner, [^\n]+ UTC$/);
    assert.deepEqual(buttonsOf(fake, first!), [["✓ Handled", `h:${id}`], ["🚫 Spam", `s:${id}`]]);
    assert.equal(lines([service], "marked_handled", id).length, 1);
    assert.equal(lines([service], "reopened", id).length, 1);
    assert.equal(lines([service], "blocked").length, 0);
    const delivered = fake.delivered.length;
    await submit(service, SPAMMER_IP);
    assert.equal(fake.delivered.length, delivered + 1, "the sender is not blocked");
    assertPrivate(service);
  });
});

Deno.test("e2e: a press from another chat, on another message or with forged data changes nothing, is refused and tallied", async () => {
  await withService({}, async (service, fake) => {
    await submit(service, SPAMMER_IP, { ...LONG, message: `${TEXT} ${LONG.message}` });
    const id = await lastId(service);
    const [first, second] = partsOf(fake, id);
    const refused: [number, string, number, string][] = [
      [first!, `s:${id}`, OTHER_CHAT, REFUSAL_TOASTS.wrong_chat],
      [second!, `s:${id}`, CHAT_ID, REFUSAL_TOASTS.not_notification],
      [first!, `x:${id}`, CHAT_ID, REFUSAL_TOASTS.forged],
      [first!, "s:zzzzzzzz", CHAT_ID, REFUSAL_TOASTS.unknown_submission],
    ];
    for (const [messageId, data, chat, toast] of refused) {
      assert.equal(await pressAndToast(fake, messageId, data, chat), toast, data);
    }
    // The same refusal to the same person again soon is not answered again (a flood of forged
    // presses cannot keep the bot busy), but it is handled: confirmed, and tallied.
    const toasts = fake.toasts.length;
    const quiet = [[9999, `s:${id}`], [first!, `s:${id} `]] as const;
    for (const [messageId, data] of quiet) {
      const update = press(fake, messageId, data);
      await waitFor(
        () => fake.polls.some((offset) => offset !== undefined && offset > update),
        15_000,
        `the press ${data} handled`,
      );
    }
    assert.equal(fake.toasts.length, toasts, "no second toast for the same refusal");
    assert.equal(fake.edits.length, 0, "nothing edited");
    assert.deepEqual(buttonsOf(fake, first!), [["✓ Handled", `h:${id}`], ["🚫 Spam", `s:${id}`]]);
    for (const event of ["marked_spam", "blocked"]) assert.equal(lines([service], event).length, 0);
    const delivered = fake.delivered.length;
    await submit(service, SPAMMER_IP);
    assert.equal(fake.delivered.length, delivered + 1, "the next POST is delivered");
    assert.equal(await service.stop(), 0);
    // Refusals are tallied: counted in the contact_summary lines, not logged one by one.
    assert.equal(summed(service, "action_refused_wrong_chat"), 1);
    assert.equal(summed(service, "action_refused_not_notification"), 2);
    assert.equal(summed(service, "action_refused_forged"), 2);
    assert.equal(summed(service, "action_refused_unknown_submission"), 1);
    assertPrivate(service);
  });
});

Deno.test("e2e: SIGTERM right after a Spam press, then a restart: the block holds, applied once, the offset confirmed", async () => {
  await withRestarts(CHAT_ID, async (start, fake) => {
    const first = await start();
    await submit(first, SPAMMER_IP);
    const id = await lastId(first);
    const [message] = partsOf(fake, id);
    const updateId = press(fake, message!, `s:${id}`);
    assert.equal(await first.stop("SIGTERM"), 0);
    const second = await start({ MESSAGES_FILE: first.file });
    const runs = [first, second];
    // Handled before the stop, or after the restart (Telegram kept it unconfirmed): once.
    await waitFor(() => lines(runs, "blocked", id).length > 0, 15_000, "the block");
    await waitFor(() => fake.polls.includes(updateId + 1), 15_000, "the offset confirmed");
    const delivered = fake.delivered.length;
    await submit(second, SPAMMER_IP);
    assert.equal((await second.records()).at(-1)!.held, "spam", "the block holds after a restart");
    assert.equal(fake.delivered.length, delivered);
    assert.equal(await second.stop(), 0);
    assert.equal(lines(runs, "marked_spam", id).length, 1, "applied once across both runs");
    assert.equal(lines(runs, "blocked", id).length, 1);
    assert.equal(await keptOffset(first.file), updateId + 1);
    for (const run of runs) assertPrivate(run);
  });
});

Deno.test("e2e: kill -9 once a Spam press is written, before its offset: the repeat after a restart applies nothing again", async () => {
  await withRestarts(CHAT_ID, async (start, fake) => {
    const first = await start();
    await submit(first, SPAMMER_IP);
    const id = await lastId(first);
    const [message] = partsOf(fake, id);
    const update = fake.pressUpdate({ chatId: CHAT_ID, messageId: message!, data: `s:${id}` });
    const updateId = fake.pushUpdate(update);
    // marked_spam is logged once the block and the ledger's state are written.
    await waitFor(() => lines([first], "marked_spam", id).length === 1, 15_000, "the state");
    first.process.kill("SIGKILL");
    await first.process.status;
    // As if the kill came before the offset was written and confirmed: Telegram sends the
    // update again.
    await keepOffset(first.file, updateId);
    fake.updates.unshift({ update_id: updateId, ...update });
    const [polled, called] = [fake.polls.length, fake.calls.length];
    const second = await start({ MESSAGES_FILE: first.file });
    const runs = [first, second];
    await waitFor(
      () => fake.polls.slice(polled).includes(updateId + 1),
      15_000,
      "the repeated update handled and confirmed",
    );
    const queryId = (update.callback_query as { id: string }).id;
    assert.ok(
      fake.calls.slice(called).some((call) =>
        call.method === "answerCallbackQuery" && call.body.callback_query_id === queryId
      ),
      "the second run handled the repeat (answered it again)",
    );
    assert.deepEqual(buttonsOf(fake, message!), [["✅ Not spam", `n:${id}`]]);
    const delivered = fake.delivered.length;
    await submit(second, SPAMMER_IP);
    assert.equal((await second.records()).at(-1)!.held, "spam", "the block holds after kill -9");
    assert.equal(fake.delivered.length, delivered);
    // The ledger kept "spam": Not spam applies.
    assert.match(await pressAndToast(fake, message!, `n:${id}`), /not spam/i);
    await waitFor(() => lines(runs, "unblocked", id).length === 1, 15_000, "the block lifted");
    await submit(second, SPAMMER_IP);
    assert.equal(fake.delivered.length, delivered + 1, "delivered again after Not spam");
    assert.equal(await second.stop(), 0);
    assert.equal(lines(runs, "marked_spam", id).length, 1, "applied once across both runs");
    assert.equal(lines(runs, "blocked", id).length, 1, "blocked once across both runs");
    assert.equal(lines(runs, "marked_not_spam", id).length, 1);
    for (const run of runs) assertPrivate(run);
  });
});

Deno.test("e2e: a webhook's 409 is said once with the deleteWebhook hint; notifications still go out", async () => {
  await withRestarts(CHAT_ID, async (start, fake) => {
    fake.conflict = "webhook";
    const service = await start();
    await waitFor(() => lines([service], "updates_conflict").length > 0, 15_000, "the conflict");
    await submit(service, SPAMMER_IP);
    assert.equal(fake.delivered.length, 1);
    assert.equal(await service.stop(), 0);
    const conflicts = lines([service], "updates_conflict");
    assert.equal(conflicts.length, 1);
    assert.match(String(conflicts[0]!.hint), /deleteWebhook/);
    assert.equal(fake.polls.length, 1, "tried again slowly (every 30 s), not at once");
    assertPrivate(service);
  });
});

Deno.test("e2e: /status and /pending are answered in the owner's chat only, with the counts and pending ids", async () => {
  const SALES_CHAT = -1006666; // not a chat the fake knows: the sales form's messages wait
  await withService(
    { FORMS: "sales", FORM_SALES_CHAT_ID: String(SALES_CHAT) },
    async (service, fake) => {
      await submit(service, SPAMMER_IP);
      // A stranger's /status first: updates are handled in order, so once the owner's is
      // answered, the stranger's was handled (and not answered).
      const stranger = fake.commandUpdate({ chatId: OTHER_CHAT, text: "/status" });
      fake.pushUpdate(stranger);
      const ask = fake.commandUpdate({ chatId: CHAT_ID, text: "/status" });
      fake.pushUpdate(ask);
      const asked = (ask.message as { message_id: number }).message_id;
      await waitFor(() => answerTo(fake, asked) !== undefined, 15_000, "the /status answer");
      const status = answerTo(fake, asked)!;
      assert.match(status, /Delivery: ok/);
      assert.match(status, /Nothing waits\./);
      assert.match(status, /Last 24 h: 1 delivered, 0 held as spam, 0 refused by the rate limit\./);
      const strangerId = (stranger.message as { message_id: number }).message_id;
      assert.equal(answerTo(fake, strangerId, OTHER_CHAT), undefined, "no answer to a stranger");
      assert.ok(!fake.deliveredChats.includes(OTHER_CHAT));

      // The sales form's message cannot reach its chat and waits (delivery pauses on "chat not
      // found"). It belongs to that chat: the owner's /pending does not list it.
      const sales = await fetch(`${service.url}/api/contact/sales`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": OTHER_IP },
        body: JSON.stringify({ contact: CONTACT, message: TEXT }),
      });
      assert.equal(sales.status, 502);
      await sales.body?.cancel();
      const id = await lastId(service);
      const ask2 = async (chatId: number, text: string) => {
        const update = fake.commandUpdate({ chatId, text });
        fake.pushUpdate(update);
        const asked = (update.message as { message_id: number }).message_id;
        await waitFor(() => answerTo(fake, asked, chatId) !== undefined, 15_000, text);
        return answerTo(fake, asked, chatId)!;
      };
      assert.equal(await ask2(CHAT_ID, "/pending"), "Nothing waits.");
      // The sales chat is told: /pending lists it, /status counts it (the paused backlog is not
      // tried again before its probe, so it still waits).
      fake.chats.add(SALES_CHAT);
      assert.match(
        await ask2(SALES_CHAT, "/pending"),
        new RegExp(`^Waiting \\(1\\):\\n#${id} · \\d+ s`),
      );
      const salesStatus = await ask2(SALES_CHAT, "/status");
      assert.match(salesStatus, /Delivery: paused \(.+\)\nWaiting: 1, the oldest/);
      assert.doesNotMatch(salesStatus, /Last 24 h/, "site-wide counts only in the owner's chat");
      assert.ok(!fake.deliveredChats.includes(OTHER_CHAT), "still no answer to the stranger");
      assertPrivate(service);
    },
  );
});

Deno.test("e2e: CHAT_ACTIONS=0: no buttons on notifications and no getUpdates at all", async () => {
  await withService({ CHAT_ACTIONS: "0" }, async (service, fake) => {
    await submit(service, SPAMMER_IP, LONG);
    const sends = fake.calls.filter((call) => call.method === "sendMessage");
    assert.equal(sends.length, 2);
    assert.ok(sends.every((call) => call.body.reply_markup === undefined));
    assert.equal(await service.stop(), 0);
    assert.deepEqual(fake.polls, [], "never polled");
    assert.equal(lines([service], "chat_actions_started").length, 0);
    assertPrivate(service);
  });
});

Deno.test("e2e: SIGTERM during a held long poll stops the service at once", async () => {
  await withService({}, async (service, fake) => {
    await waitFor(() => fake.polls.length > 0, 15_000, "the long poll");
    const started = Date.now();
    assert.equal(await service.stop("SIGTERM"), 0);
    const took = Date.now() - started;
    assert.ok(took < 2000, `stopped after ${took} ms, not after the long poll's 25 s`);
    assert.equal(fake.polls.length, 1, "the poll was held open, not answered and repeated");
    assertPrivate(service);
  });
});
