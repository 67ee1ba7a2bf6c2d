/**
 * A notification the learned spam filter scored as spam goes without sound (every part), with
 * the marked buttons (Not spam, Spam) and the spam line first; one below the threshold, or not
 * scored, goes as before.
 */
import assert from "node:assert/strict";
import { DeliveryQueue } from "../../lib/delivery/queue.ts";
import { Pacer } from "../../lib/delivery/pacer.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import { SPAM_THRESHOLD } from "../../lib/learn/classifier.ts";
import { spamMarkLine } from "../../lib/bot/notification.ts";
import { fakeClock } from "../support/fake_clock.ts";
import { memoryOutbox } from "../support/memory_outbox.ts";

function setup() {
  const clock = fakeClock(1_000_000);
  const store = memoryOutbox();
  const sent: { text: string; markup: unknown; silent: boolean | undefined }[] = [];
  const queue = new DeliveryQueue({
    chatId: 4242,
    send: (text, _to, markup, silent) => {
      sent.push({ text, markup, silent });
      return Promise.resolve({ ok: true, result: { message_id: sent.length } });
    },
    markup: (id, marked) => ({ id, marked }),
    store,
    pacer: new Pacer(),
    clock,
    random: () => 0.5,
    log: () => {},
    waitMs: 10_000,
    maxAgeMs: 86_400_000,
  });
  const submit = (submission: OutboxSubmission) => {
    store.add(submission);
    void queue.submit(submission, true);
  };
  return { clock, queue, sent, submit };
}

const base = {
  ts: "2026-11-22T14:03:09Z",
  name: "SEO",
  contact: "",
  message: "x".repeat(5000), // two parts
  ip: "203.0.113.7",
};

Deno.test("a notification scored as spam is sent silently, every part, with the marked buttons and the spam line first", async () => {
  const { clock, queue, sent, submit } = setup();
  queue.start();
  submit({ ...base, id: "spam0001", spamScore: 0.95 });
  await clock.settle();
  assert.equal(sent.length, 2);
  assert.ok(sent.every((part) => part.silent === true));
  assert.deepEqual(sent[0]!.markup, { id: "spam0001", marked: true });
  assert.equal(sent[1]!.markup, undefined);
  assert.ok(sent[0]!.text.startsWith(spamMarkLine(0.95) + "\n"));
  queue.close();
});

Deno.test("a notification below the threshold, or not scored, is sent with sound and the usual buttons", async () => {
  const { clock, queue, sent, submit } = setup();
  queue.start();
  submit({ ...base, id: "hamm0001", message: "hello", spamScore: SPAM_THRESHOLD - 0.01 });
  submit({ ...base, id: "none0001", message: "hello" });
  await clock.settle();
  assert.equal(sent.length, 2);
  assert.ok(sent.every((part) => part.silent !== true));
  assert.deepEqual(sent.map((part) => part.markup), [
    { id: "hamm0001", marked: false },
    { id: "none0001", marked: false },
  ]);
  queue.close();
});

Deno.test("with CHAT_ACTIONS=0 (no buttons) the spam line names no buttons", async () => {
  const clock = fakeClock(1_000_000);
  const store = memoryOutbox();
  const sent: string[] = [];
  const queue = new DeliveryQueue({
    chatId: 4242,
    send: (text) => (sent.push(text), Promise.resolve({ ok: true, result: { message_id: 1 } })),
    store,
    pacer: new Pacer(),
    clock,
    random: () => 0.5,
    log: () => {},
    waitMs: 10_000,
    maxAgeMs: 86_400_000,
  });
  queue.start();
  const submission = { ...base, message: "short", id: "spam0003", spamScore: 0.95 };
  store.add(submission);
  void queue.submit(submission, true);
  await clock.settle();
  assert.equal(sent[0]!.split("\n")[0], spamMarkLine(0.95, false));
  assert.doesNotMatch(sent[0]!, /below/);
  queue.close();
});
