/**
 * End to end: every stored message reaches the chat. The real service against a fake Bot API that
 * enforces Telegram's flood control (a bucket per chat, then `429 retry_after` until the block
 * ends): bursts are paced instead of tripping it, outages and crashes are redelivered after, and
 * a settings problem waits for the operator.
 */
import assert from "node:assert/strict";
import type { FakeBotApi } from "../support/fake_bot_api.ts";
import { runPending, waitFor, withRestarts, withService } from "../support/service.ts";

/** A private chat: about one message a second after a burst of three. */
const PRIVATE_CHAT = 424242;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** How many notifications name each message text (the message is the last line). */
function deliveries(fake: FakeBotApi): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of fake.delivered) {
    const message = text.split("\n").at(-1)!;
    counts.set(message, (counts.get(message) ?? 0) + 1);
  }
  return counts;
}

Deno.test("e2e: a burst of 30 from 30 addresses is paced under flood control and all delivered in about the time the limits allow", async () => {
  await withService({}, async (service, fake) => {
    const started = Date.now();
    const messages = Array.from({ length: 30 }, (_, i) => `burst ${i}`);
    const responses = await Promise.all(
      messages.map((message, i) => service.post({ message }, `10.30.0.${i + 1}`)),
    );
    const statuses = await Promise.all(responses.map(async (response) => {
      const body = await response.json();
      if (response.status !== 200) assert.equal(body.stored, true);
      return response.status;
    }));
    assert.ok(statuses.every((status) => status === 200 || status === 502));
    assert.ok(statuses.filter((status) => status === 200).length >= 8, String(statuses));
    await waitFor(() => deliveries(fake).size === 30, 60_000, "all 30 delivered");
    const elapsed = (Math.max(...fake.deliveredAt) - started) / 1000;
    // Three at once, then one a second: 27 s is the least the limits allow.
    assert.ok(elapsed >= 26, `${elapsed} s: faster than the limits allow`);
    assert.ok(elapsed <= 27 * 1.15 + 1, `${elapsed} s to drain 30`);
    assert.equal(fake.floods, 0, "paced: never answered 429");
    assert.ok([...deliveries(fake).values()].every((count) => count === 1));
    const records = await service.records();
    assert.equal(records.length, 30);
    assert.deepEqual(records.map((r) => r.message).sort(), [...messages].sort());
  }, { chatId: PRIVATE_CHAT });
});

Deno.test("e2e: submissions during an outage (HTML 502, then refused connections) are all delivered after it", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "1000" }, async (service, fake) => {
    await fake.outage("html");
    const answers = [];
    for (let i = 0; i < 3; i++) {
      answers.push(await service.post({ message: `outage ${i}` }, `10.31.0.${i}`));
    }
    await fake.outage("refuse");
    answers.push(await service.post({ message: "outage 3" }, "10.31.0.3"));
    for (const answer of answers) {
      assert.equal(answer.status, 502);
      assert.equal((await answer.json()).stored, true);
    }
    await sleep(4000);
    await fake.outage(false);
    await waitFor(() => deliveries(fake).size === 4, 20_000, "all 4 delivered after the outage");
    // The first were tried and failed; once the outage was known (two failures in a row), the
    // others were answered at once without a try.
    for (const text of fake.delivered) {
      assert.match(text, /Delivered late: (first attempt failed: |it waited in the queue)/);
    }
    assert.ok(fake.delivered.some((text) => /first attempt failed: 502 bad gateway/.test(text)));
    const records = await service.records();
    assert.deepEqual(records.map((r) => r.messenger_ok), [false, false, false, false]);
    assert.ok(service.logs().some((log) => log.event === "delivery_retry"));
    const done = await runPending(service.file);
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout, /^nothing pending/);
  }, { chatId: PRIVATE_CHAT });
});

Deno.test("e2e: kill -9 during a paced burst, then a restart: every submission delivered, at most the one in flight twice", async () => {
  await withRestarts(PRIVATE_CHAT, async (start, fake) => {
    const first = await start();
    const messages = Array.from({ length: 20 }, (_, i) => `crash ${i}`);
    const posts = messages.map((message, i) =>
      first.post({ message }, `10.32.0.${i + 1}`).then((r) => r.status, () => 0)
    );
    await waitFor(() => fake.delivered.length >= 5, 15_000, "5 delivered");
    first.process.kill("SIGKILL");
    await first.process.status;
    await Promise.all(posts);
    const before = fake.delivered.length;
    assert.ok(before < 20, "killed mid-burst");

    const second = await start({ MESSAGES_FILE: first.file });
    await waitFor(() => deliveries(fake).size === 20, 40_000, "all 20 delivered after restart");
    const twice = [...deliveries(fake).values()].filter((count) => count > 1).length;
    assert.ok(twice <= 1, `${twice} delivered twice`);
    // The new process cannot know what the old one sent just before it died: its first burst may
    // meet one 429, whose retry_after it then honours (no second one).
    assert.ok(fake.floods <= 1, `${fake.floods} floods`);
    // One record each: those whose senders got no answer were recorded at restart.
    const records = await second.records();
    assert.deepEqual(records.map((r) => r.message).sort(), [...messages].sort());
    for (const record of records.filter((r) => r.messenger_error === "interrupted")) {
      assert.equal(record.messenger_ok, false);
    }
    assert.ok(second.logs().some((log) => log.event === "outbox_loaded"));
    assert.equal(await second.stop(), 0);
  });
});

Deno.test("e2e: the backup file renamed away (logrotate) while a redelivery is pending: it is delivered, the outbox untouched", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "1000" }, async (service, fake) => {
    await fake.outage("html");
    const response = await service.post({ message: "before rotation" }, "10.33.0.1");
    assert.equal(response.status, 502);
    await response.body?.cancel();
    await Deno.rename(service.file, `${service.file}.1`);
    await fake.outage(false);
    await waitFor(() => deliveries(fake).has("before rotation"), 20_000, "the late delivery");
    const ok = await service.post({ message: "after rotation" }, "10.33.0.2");
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
    const rotated = (await Deno.readTextFile(`${service.file}.1`)).trim().split("\n");
    assert.equal(rotated.length, 1);
    assert.equal(JSON.parse(rotated[0]!).message, "before rotation");
    assert.deepEqual((await service.records()).map((r) => r.message), ["after rotation"]);
  }, { chatId: PRIVATE_CHAT });
});

Deno.test("e2e: a wrong chat id pauses redelivery with one error line; pending lists it; a restart with the right id delivers it", async () => {
  await withRestarts(PRIVATE_CHAT, async (start, fake) => {
    const wrong = await start({ MESSENGER_CHAT_ID: String(PRIVATE_CHAT + 1) });
    for (const [i, message] of ["first", "second"].entries()) {
      const response = await wrong.post({ message, name: "Ann", phone: "+1 555" }, `10.34.0.${i}`);
      assert.equal(response.status, 502);
      assert.equal((await response.json()).stored, true);
    }
    await sleep(2500);
    // Each new submission tried once; nothing retried while the settings are wrong.
    assert.equal(fake.calls.filter((call) => call.method === "sendMessage").length, 2);
    const paused = wrong.logs().filter((log) => log.event === "delivery_paused");
    assert.equal(paused.length, 1);
    assert.match(String(paused[0]!.hint), /MESSENGER_CHAT_ID/);
    assert.equal(await wrong.stop(), 0);

    const listed = await runPending(wrong.file);
    assert.equal(listed.code, 0, listed.stderr);
    const ids = wrong.logs().filter((log) => log.event === "contact").map((log) => log.id);
    for (const id of ids) assert.match(listed.stdout, new RegExp(`^${id}\\t`, "m"));
    assert.match(listed.stdout, /400 Bad Request: chat not found/);
    assert.ok(
      !listed.stdout.includes("first") && !listed.stdout.includes("Ann"),
      "no text unless asked",
    );
    const withText = await runPending(wrong.file, "--with-text");
    assert.ok(
      withText.stdout.includes('message: "first"\n  field phone: +1 555\n'),
      withText.stdout,
    );

    const fixed = await start({ MESSAGES_FILE: wrong.file });
    await waitFor(() => deliveries(fake).size === 2, 15_000, "both delivered after the restart");
    for (const text of fake.delivered) {
      assert.match(text, /Delivered late: first attempt failed: 400 Bad Request: chat not found/);
      // The form's other fields come back from the outbox with the rest.
      assert.match(text, /\n· phone: \+1 555\n/);
    }
    assert.match(fake.delivered[0]!, /^New contact message #[0-9a-z]{8}\n/);
    assert.equal(await fixed.stop(), 0);
    assert.match((await runPending(wrong.file)).stdout, /^nothing pending/);
  });
});

Deno.test("e2e: 12 submissions Telegram refuses at the head of the backlog do not hold up 3 good ones; each refused one arrives as a notice without its text", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "1000" }, async (service, fake) => {
    fake.refuse = /\nrefused \d+$/;
    // An outage puts all 15 in the backlog, the 12 refused ones oldest.
    await fake.outage("html");
    const messages = [
      ...Array.from({ length: 12 }, (_, i) => `refused ${i}`),
      ...Array.from({ length: 3 }, (_, i) => `good ${i}`),
    ];
    for (const [i, message] of messages.entries()) {
      const response = await service.post({ message }, `10.35.0.${i + 1}`);
      assert.equal(response.status, 502);
      await response.body?.cancel();
    }
    await fake.outage(false);
    const healthy = Date.now();
    const good = () => ["good 0", "good 1", "good 2"].every((m) => deliveries(fake).has(m));
    await waitFor(good, 45_000, "the 3 good ones");
    // Paced only (27 sends: 12 refused, 12 notices, 3 good), not backed off as an outage.
    const elapsed = (Date.now() - healthy) / 1000;
    assert.ok(elapsed <= 35, `${elapsed} s for the good ones`);
    const notices = () => fake.delivered.filter((text) => text.includes("\nNot shown: "));
    await waitFor(() => notices().length === 12, 20_000, "12 notices");
    for (const text of notices()) {
      assert.match(text, /Telegram refused its text \(400 Bad Request: message is too long\)/);
      assert.ok(!text.includes("refused 1") && !text.includes("\nrefused"), "no sender's text");
    }
    const logs = service.logs();
    assert.equal(logs.filter((l) => l.event === "delivered" && l.fallback === true).length, 12);
    assert.equal(logs.filter((l) => l.event === "delivery_paused").length, 0);
    const done = await runPending(service.file);
    assert.match(done.stdout, /^nothing pending/);
  }, { chatId: PRIVATE_CHAT });
});

Deno.test("e2e: SIGTERM while a notification is in flight waits for it: the sender gets 200, the record says messenger_ok:true, and the next start does not send it again", async () => {
  await withRestarts(PRIVATE_CHAT, async (start, fake) => {
    const first = await start();
    fake.script.push({ delayMs: 1500 });
    const answer = first.post({ message: "in flight" }, "10.36.0.1");
    await waitFor(() => fake.calls.some((c) => c.method === "sendMessage"), 10_000, "the call");
    const stopped = first.stop("SIGTERM");
    const response = await answer;
    assert.equal(response.status, 200, await response.clone().text());
    await response.body?.cancel();
    assert.equal(await stopped, 0);
    assert.deepEqual(
      (await first.records()).map((r) => [r.message, r.messenger_ok]),
      [["in flight", true]],
    );
    assert.match((await runPending(first.file)).stdout, /^nothing pending/);

    const second = await start({ MESSAGES_FILE: first.file });
    await sleep(2000);
    assert.equal(deliveries(fake).get("in flight"), 1, "sent once");
    assert.equal((await second.records()).length, 1, "one record");
    assert.equal(await second.stop(), 0);
  });
});
