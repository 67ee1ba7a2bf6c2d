/**
 * End to end, forms and forum topics: the real service process against the fake Bot API.
 */
import assert from "node:assert/strict";
import { runPending, runToExit, waitFor, withRestarts, withService } from "../support/service.ts";

Deno.test("e2e: MESSENGER_TOPIC_ID puts every part of a split notification into the forum topic", async () => {
  await withService({ MESSENGER_TOPIC_ID: "42" }, async (service, fake) => {
    fake.topics.add(42);
    // 3900 characters of message and 1000 of a field: over 4096, two parts.
    const message = "word ".repeat(780);
    const response = await service.post({ name: "Ann", note: "n".repeat(1000), message });
    assert.equal(response.status, 200);
    await response.body?.cancel();
    assert.equal(fake.delivered.length, 2);
    assert.deepEqual(fake.deliveredTopics, [42, 42]);
    const sends = fake.calls.filter((call) => call.method === "sendMessage");
    assert.ok(sends.every((call) => call.body.message_thread_id === 42));
  }, { chatId: -1001234 });
});

Deno.test("e2e: a deleted forum topic is a settings problem: stored 502, delivery paused, one line with the hint", async () => {
  await withService({ MESSENGER_TOPIC_ID: "42" }, async (service, fake) => {
    // No topic 42 in the fake: Telegram answers 400 Bad Request: message thread not found.
    const response = await service.post({ message: "Hello" });
    assert.equal(response.status, 502);
    assert.equal((await response.json()).stored, true);
    assert.equal(fake.delivered.length, 0);
    const health = await fetch(`${service.url}/api/health`);
    assert.equal(health.status, 503);
    assert.equal((await health.json()).delivery, "paused");
    const paused = service.logs().filter((line) => line.event === "delivery_paused");
    assert.equal(paused.length, 1);
    assert.match(String(paused[0]!.reason), /message thread not found/);
    assert.match(String(paused[0]!.hint), /MESSENGER_TOPIC_ID/);
    const records = await service.records();
    assert.equal(records[0]!.messenger_ok, false);
  }, { chatId: -1001234 });
});

Deno.test("e2e: MESSENGER_TOPIC_ID=1 (the General topic) stops start-up with one line naming it", async () => {
  const result = await runToExit({ MESSENGER_TOPIC_ID: "1" });
  assert.equal(result.code, 1);
  const lines = result.stderr.trim().split("\n");
  assert.equal(lines.length, 1, result.stderr);
  const log = JSON.parse(lines[0]!);
  assert.equal(log.setting, "MESSENGER_TOPIC_ID");
  assert.match(log.error, /General topic/);
});

const GROUP = -1001234;
const SALES_CHAT = -1005555;

Deno.test("e2e: two forms to two chats and a topic; the default form stays; an unknown form is 404", async () => {
  const forms = {
    FORMS: "support,sales",
    FORM_SUPPORT_TOPIC_ID: "42",
    FORM_SALES_CHAT_ID: String(SALES_CHAT),
    FORM_SALES_TITLE: "Sales",
  };
  await withService(forms, async (service, fake) => {
    fake.topics.add(42);
    fake.chats.add(SALES_CHAT);
    const post = (path: string, body: unknown) =>
      fetch(`${service.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.1" },
        body: JSON.stringify(body),
      });
    // Support: the service's chat, its topic, on every part of a split message.
    const long = { message: "word ".repeat(780), note: "n".repeat(1000) };
    assert.match(
      await (await post("/api/contact/support", long)).text(),
      /^\{"ok":true,"case_url":"\/api\/case\/[A-Za-z0-9_-]{32}"\}$/,
    );
    assert.deepEqual(fake.deliveredChats, [GROUP, GROUP]);
    assert.deepEqual(fake.deliveredTopics, [42, 42]);
    assert.match(fake.delivered[0]!, /^New contact message #\w+ \(1\/2\)\nForm: support\n/);
    // Sales: a chat of its own, no topic, its title.
    assert.equal((await post("/api/contact/sales", { message: "quote" })).status, 200);
    assert.equal(fake.deliveredChats.at(-1), SALES_CHAT);
    assert.equal(fake.deliveredTopics.at(-1), undefined);
    assert.match(fake.delivered.at(-1)!, /^New contact message #\w+\nForm: Sales\n/);
    // The default form: the service's chat, no topic, no Form line.
    assert.equal((await post("/api/contact", { message: "plain" })).status, 200);
    assert.deepEqual([fake.deliveredChats.at(-1), fake.deliveredTopics.at(-1)], [GROUP, undefined]);
    assert.doesNotMatch(fake.delivered.at(-1)!, /\nForm: /);
    // An unknown form: 404 with a JSON error, nothing sent or stored.
    const unknown = await post("/api/contact/nope", { message: "lost?" });
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error, "not_found");
    const records = await service.records();
    assert.deepEqual(records.map((record) => record.form), ["support", "sales", undefined]);
    assert.equal(fake.delivered.length, 4);
  }, { chatId: GROUP });
});

Deno.test("e2e: a pending message of a form goes to its form's chat as set after a restart; a removed form's to the default chat, said in the log", async () => {
  await withRestarts(GROUP, async (start, fake) => {
    const NEW_CHAT = -1007777;
    // The sales chat is wrong at first: stored, not delivered.
    const first = await start({
      FORMS: "sales,gone",
      FORM_SALES_CHAT_ID: "-1006666",
      FORM_GONE_CHAT_ID: "-1006666",
    });
    for (const form of ["sales", "gone"]) {
      const response = await fetch(`${first.url}/api/contact/${form}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.7" },
        body: JSON.stringify({ message: `for ${form}` }),
      });
      assert.equal(response.status, 502);
      await response.body?.cancel();
    }
    assert.equal(await first.stop(), 0);
    const listed = await runPending(first.file, "--with-text");
    assert.match(listed.stdout, /\n {2}form: sales\n[\s\S]*\n {2}form: gone\n/);
    // Restarted with the sales form moved to a chat that exists, and the other form removed.
    fake.chats.add(NEW_CHAT);
    const second = await start({
      MESSAGES_FILE: first.file,
      FORMS: "sales",
      FORM_SALES_CHAT_ID: String(NEW_CHAT),
    });
    await waitFor(() => fake.delivered.length === 2, 15_000, "both delivered after the restart");
    const chatOf = (message: string) =>
      fake.deliveredChats[fake.delivered.findIndex((text) => text.endsWith(message))];
    assert.equal(chatOf("for sales"), NEW_CHAT);
    assert.equal(chatOf("for gone"), GROUP);
    const removed = second.logs().filter((line) => line.event === "form_removed");
    assert.equal(removed.length, 1);
    assert.equal(removed[0]!.form, "gone");
    assert.equal(await second.stop(), 0);
  });
});
