/**
 * End to end, the learned spam filter (issue 31): the real service process against the fake Bot
 * API, taught by `contactd train` (the real main.ts, with the flags `deno task contactd` gives
 * it) while it runs; within a second a spammy submission arrives silently
 * (`disable_notification`), its first line saying it looks like spam, with Not spam and Spam
 * buttons, and its record carries `spam_score`; a harmless one arrives as before; both senders
 * are answered alike. With `hold`, a held submission's case page is real, and its file reaches
 * the chat once it is released; with `off`, a running service's forget still erases what an
 * earlier hold period kept.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../../lib/config/config.ts";
import { blockedFlags } from "../../lib/config/permissions.ts";
import { MIN_EXAMPLES, SPAM_THRESHOLD } from "../../lib/learn/classifier.ts";
import {
  baseEnv,
  CHAT_ID,
  runContactdTask,
  waitFor,
  withRestarts,
  withService,
} from "../support/service.ts";
import { databasePath, openLocalStore } from "../../lib/storage/store.ts";
import { madeUp } from "../support/spam_texts.ts";
import type { FakeBotApi } from "../support/fake_bot_api.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** `contactd train ARGS < stdin` run by the real main.ts against `file`'s database. */
async function train(file: string, stdin: string, ...args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...blockedFlags(parseConfig({ MESSAGES_FILE: file })), MAIN, "train", ...args],
    clearEnv: true,
    env: { ...baseEnv(), MESSAGES_FILE: file },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const output = await child.output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** Teaches the running service's filter `MIN_EXAMPLES` of each kind with `contactd train`. */
async function trainService(file: string, next: ReturnType<typeof madeUp>) {
  const lines = Array.from({ length: MIN_EXAMPLES.spam + MIN_EXAMPLES.ham }, (_, i) => {
    const spam = i < MIN_EXAMPLES.spam;
    return JSON.stringify({ id: `h${i}`, ...next(spam), label: spam ? "spam" : "ham" });
  });
  const taught = await train(file, lines.join("\n"));
  assert.equal(taught.code, 0, taught.stderr);
  assert.match(taught.stdout, /taught 60 example/);
  // The running service takes it in within a second (its refresh).
  await new Promise((resolve) => setTimeout(resolve, 1500));
}

Deno.test("taught by contactd train while it runs, the service marks a spammy submission: silent, the spam line first, Not spam and Spam buttons, spam_score recorded", async () => {
  await withService({}, async (service, fake) => {
    const next = madeUp(11);
    await trainService(service.file, next);

    const spammy = next(true);
    const harmless = next(false);
    const answers = [];
    for (const body of [spammy, harmless]) {
      const response = await service.post(body, "198.51.100.7");
      // Each answer's case page is its own (random): the rest is compared.
      const text = (await response.text()).replace(/\/api\/case\/[\w-]+/, "/api/case/…");
      answers.push({ status: response.status, body: text });
    }
    assert.deepEqual(answers[0], answers[1], "the sender's answer never depends on the score");
    await waitFor(() => fake.delivered.length >= 2, 10_000, "two notifications");

    const sends = fake.calls.filter((call) => call.method === "sendMessage");
    const [marked, plain] = sends.map((call) => call.body);
    assert.equal(marked!.disable_notification, true);
    assert.match(String(marked!.text), /^⚠️ Looks like spam \(9\d % sure\)/);
    const buttons = (marked!.reply_markup as { inline_keyboard: { text: string }[][] })
      .inline_keyboard[0]!.map((button) => button.text);
    assert.deepEqual(buttons, ["✅ Not spam", "🚫 Spam"]);
    assert.equal(plain!.disable_notification, undefined);
    assert.match(String(plain!.text), /^New contact message #/);

    const records = await service.records();
    assert.equal(records.length, 2);
    assert.ok(Number(records[0]!.spam_score) >= SPAM_THRESHOLD, JSON.stringify(records[0]));
    assert.ok(Number(records[1]!.spam_score) < SPAM_THRESHOLD, JSON.stringify(records[1]));
    // The filter's log lines name no text of the senders'.
    const logs = JSON.stringify(service.logs());
    assert.ok(!logs.includes(spammy.message.slice(0, 20)));
    assert.ok(service.logs().some((line) => line.event === "spam_filter_loaded"));
  });
});

/** `/held` in the chat, then its one held submission `id`'s release pressed; until it is sent. */
async function releaseFromChat(fake: FakeBotApi, id: string) {
  fake.pushUpdate(fake.commandUpdate({ chatId: CHAT_ID, text: "/held" }));
  await waitFor(
    () => fake.delivered.some((text) => text.startsWith("Held as spam (1)")),
    10_000,
    "the /held list",
  );
  const list = fake.calls.find((call) =>
    call.method === "sendMessage" && String(call.body.text).startsWith("Held as spam")
  )!;
  assert.match(String(list.body.text), new RegExp(`#${id} · `));
  const button = (list.body.reply_markup as { inline_keyboard: { callback_data: string }[][] })
    .inline_keyboard[0]![0]!;
  const messageId = [...fake.messages.entries()].find(([, message]) =>
    message.text.startsWith("Held as spam")
  )![0].split(":").map(Number)[1]!;
  fake.pushUpdate(fake.pressUpdate({ chatId: CHAT_ID, messageId, data: button.callback_data }));
  await waitFor(
    () => fake.delivered.some((text) => text.startsWith(`New contact message #${id}`)),
    10_000,
    "the released notification",
  );
}

Deno.test("SPAM_FILTER=hold keeps a spammy submission out of the chat, /held lists it, and one press releases it to the chat", async () => {
  await withService({ SPAM_FILTER: "hold" }, async (service, fake) => {
    const next = madeUp(12);
    await trainService(service.file, next);
    const response = await service.post(next(true), "198.51.100.8");
    assert.equal(response.status, 200);
    // Its case page is real, as any other's: reading it does not reveal the hold.
    const { case_url } = await response.json();
    const page = await fetch(`${service.url}${case_url}`);
    assert.equal(page.status, 200, "a held submission's case page exists");
    await page.body?.cancel();
    const [record] = await service.records();
    assert.equal(record!.held, "spam");
    assert.ok(Number(record!.spam_score) >= SPAM_THRESHOLD);
    const id = String(record!.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(fake.delivered.length, 0, "nothing reached the chat");

    await releaseFromChat(fake, id);
    const sent = fake.calls.find((call) =>
      call.method === "sendMessage" &&
      String(call.body.text).startsWith(`New contact message #${id}`)
    )!;
    assert.equal(sent.body.disable_notification, undefined, "released: sent as any other");
    // Released once: the record is not written twice.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await service.records()).length, 1);
  });
});

Deno.test("a held submission's file is kept while it is held and reaches the chat once it is released, as a reply to its notification", async () => {
  await withService({ SPAM_FILTER: "hold", ATTACHMENTS: "1MB" }, async (service, fake) => {
    const next = madeUp(14);
    await trainService(service.file, next);
    const spammy = next(true);
    const content = new Uint8Array(50_000);
    content.set(new TextEncoder().encode("%PDF-1.7\n"));
    for (let i = 9; i < content.length; i++) content[i] = (i * 7) & 0xff;
    const form = new FormData();
    for (const [name, value] of Object.entries(spammy)) form.append(name, value);
    form.append("offer", new File([content], "offer.pdf"));
    const response = await fetch(`${service.url}/api/contact`, {
      method: "POST",
      headers: { accept: "application/json", "x-forwarded-for": "198.51.100.10" },
      body: form,
    });
    assert.equal(response.status, 200);
    await response.body?.cancel();
    const [record] = await service.records();
    assert.equal(record!.held, "spam");
    const id = String(record!.id);
    assert.deepEqual([fake.delivered.length, fake.documents.length], [0, 0], "held");

    await releaseFromChat(fake, id);
    await waitFor(() => fake.documents.length === 1, 20_000, "the released submission's file");
    const [document] = fake.documents;
    assert.deepEqual(document!.bytes, content);
    assert.equal(document!.caption, `#${id}`);
    const notification = fake.messages.get(`${CHAT_ID}:${document!.replyTo}`);
    assert.match(notification?.text ?? "", new RegExp(`^New contact message #${id}`));
  });
});

Deno.test("with SPAM_FILTER=off a running service's forget still erases what an earlier hold period kept", async () => {
  await withRestarts(CHAT_ID, async (start) => {
    const held = await start({ SPAM_FILTER: "hold" });
    const next = madeUp(13);
    await trainService(held.file, next);
    assert.equal((await held.post(next(true), "198.51.100.9")).status, 200);
    const id = String((await held.records())[0]!.id);
    await held.stop();
    const off = await start({ SPAM_FILTER: "off", MESSAGES_FILE: held.file });
    const store = openLocalStore(databasePath(held.file), { create: false });
    try {
      assert.equal(await store.run("spam.count", { submissions: [id] }), 2, "lesson and held row");
      const forget = await runContactdTask(["forget", "--id", id], off.dir, {
        MESSAGES_FILE: held.file,
      });
      assert.equal(forget.code, 0, forget.stderr);
      assert.equal(await store.run("spam.count", { submissions: [id] }), 0, "erased");
    } finally {
      await store.close();
    }
  });
});
