import assert from "node:assert/strict";
import { CALL_FLOOD_TRIES, DeliveryQueue, type SentPart } from "../../lib/delivery/queue.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import { Pacer } from "../../lib/delivery/pacer.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";
import { fakeClock } from "../support/fake_clock.ts";
import { memoryOutbox } from "../support/memory_outbox.ts";

const CHAT = 4242;
const WAIT_MS = 10_000;

let ids = 0;
function submission(message = "hello"): OutboxSubmission {
  return {
    id: `c${String(++ids).padStart(7, "0")}`,
    ts: "2026-11-22T14:03:09Z",
    name: "Ann",
    contact: "ann@example.org",
    message,
    ip: "203.0.113.7",
  };
}

let messageIds = 100;
const accepted = (): BotApiResult => ({ ok: true, result: { message_id: ++messageIds } });

/** A queue on a fake clock that records what it sent (notifications and calls) and when. */
function setup(options: { markup?: (id: string) => unknown } = {}) {
  const clock = fakeClock(1_000_000);
  const store = memoryOutbox();
  const sent: Array<{ at: number; kind: string; markup?: unknown }> = [];
  const parts: SentPart[] = [];
  const queue = new DeliveryQueue({
    chatId: CHAT,
    send: (text, _to, markup) => {
      sent.push({ at: clock.now(), kind: `notification ${text.slice(0, 24)}`, markup });
      return Promise.resolve(accepted());
    },
    ...(options.markup === undefined ? {} : { markup: options.markup }),
    onSent: (part) => {
      parts.push(part);
      return Promise.resolve();
    },
    store,
    pacer: new Pacer(),
    clock,
    random: () => 0.5,
    log: () => {},
    waitMs: WAIT_MS,
    maxAgeMs: 7 * 86_400_000,
  });
  const submit = (s: OutboxSubmission) => {
    store.add(s);
    return queue.submit(s, true);
  };
  const call = (chat: number, name: string, reply: () => BotApiResult = accepted) =>
    queue.call(chat, () => {
      sent.push({ at: clock.now(), kind: name });
      return Promise.resolve(reply());
    });
  return { clock, queue, sent, parts, submit, call };
}

Deno.test("only a notification's first part carries the buttons, and every part is told to the ledger with its message id", async () => {
  const { clock, queue, sent, parts, submit } = setup({ markup: (id) => ({ buttons: id }) });
  queue.start();
  const s = submission("x".repeat(5000));
  const outcome = submit(s);
  await clock.advance(5000);
  assert.deepEqual(await outcome, { ok: true });
  assert.equal(sent.length, 2);
  assert.deepEqual(sent[0]!.markup, { buttons: s.id });
  assert.equal(sent[1]!.markup, undefined);
  assert.deepEqual(parts.map((p) => [p.submission.id, p.chat, p.first]), [
    [s.id, CHAT, true],
    [s.id, CHAT, false],
  ]);
  assert.ok(parts.every((p) => typeof p.messageId === "number"));
  await queue.close();
});

Deno.test("without markup (CHAT_ACTIONS=0) no notification carries buttons", async () => {
  const { clock, queue, sent, submit } = setup();
  queue.start();
  submit(submission());
  await clock.advance(100);
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.markup, undefined);
  await queue.close();
});

Deno.test("a chat action's call resolves with its result, paced with the notifications of its chat", async () => {
  const { clock, queue, sent, call } = setup();
  queue.start();
  const results = Array.from({ length: 6 }, (_, i) => call(CHAT, `edit ${i}`));
  await clock.advance(10_000);
  const answered = await Promise.all(results);
  assert.ok(answered.every((r) => r.ok));
  const times = sent.map((s) => s.at - 1_000_000);
  // One slot stays free for a sender: a bucket of 3 gives calls 2 at once, then one a second.
  assert.deepEqual(times.slice(0, 2), [0, 0]);
  for (let i = 2; i < times.length; i++) assert.ok(times[i]! - times[i - 1]! >= 1000, `${times}`);
  await queue.close();
});

Deno.test("a waiting sender goes before chat actions, and waits at most one slot behind them", async () => {
  const { clock, queue, sent, call, submit } = setup();
  queue.start();
  // The chat's budget used up by actions (an owner pressing fast) ...
  for (let i = 0; i < 10; i++) void call(CHAT, `edit ${i}`);
  await clock.advance(2500);
  const before = sent.length;
  // ... then a sender: its notification is the very next send to the chat.
  const outcome = submit(submission("a sender waits"));
  const submittedAt = clock.now();
  await clock.advance(5000);
  assert.deepEqual(await outcome, { ok: true });
  const index = sent.findIndex((s) => s.kind.startsWith("notification"));
  assert.equal(index, before, `sent: ${sent.map((s) => s.kind)}`);
  assert.ok(sent[index]!.at - submittedAt <= 1000, "at most one slot (1 s) late");
  await queue.close();
});

Deno.test("a 429 on a chat action's call pauses everything and the call goes again after it, a bounded number of times", async () => {
  const { clock, queue, sent, call } = setup();
  queue.start();
  let floods = 0;
  const flood = (): BotApiResult => {
    floods++;
    return {
      ok: false,
      error: "429 Too Many Requests",
      errorCode: 429,
      parameters: { retry_after: 2 },
    };
  };
  const once = call(CHAT, "edit", () => (floods === 0 ? flood() : accepted()));
  await clock.advance(1000);
  assert.equal(sent.length, 1, "nothing before retry_after");
  await clock.advance(2000);
  assert.ok((await once).ok, "tried again after the pause");
  const always = call(CHAT, "edit again", flood);
  await clock.advance(60_000);
  const result = await always;
  assert.equal(result.ok, false);
  assert.equal(sent.filter((s) => s.kind === "edit again").length, CALL_FLOOD_TRIES);
  await queue.close();
});

Deno.test("a call after close, or waiting at close, is answered 'stopping' without being made", async () => {
  const { clock, queue, sent, call } = setup();
  queue.start();
  await clock.advance(10);
  for (let i = 0; i < 5; i++) void call(CHAT, `edit ${i}`);
  const waiting = call(CHAT, "last");
  await queue.close();
  const result = await waiting;
  assert.equal(result.ok, false);
  assert.ok(!sent.some((s) => s.kind === "last"));
  const late = await call(CHAT, "after");
  assert.equal(late.ok, false);
  assert.ok(!sent.some((s) => s.kind === "after"));
});

Deno.test("a stream of senders does not starve a chat action's call: it gets a turn after every few of theirs", async () => {
  const { clock, queue, sent, call, submit } = setup();
  queue.start();
  // A sender every 0.7 s, faster than the chat's pace (one a second): senders always wait.
  let stop = false;
  const stream = (async () => {
    while (!stop) {
      void submit(submission("spam wave"));
      await clock.advance(700);
    }
  })();
  await clock.advance(0);
  for (let i = 0; i < 20; i++) await clock.advance(100);
  const queuedAt = clock.now();
  const toast = call(CHAT, "toast");
  let doneAt = -1;
  void toast.then(() => (doneAt = clock.now()));
  for (let i = 0; i < 200 && doneAt < 0; i++) await clock.advance(100);
  stop = true;
  await stream;
  assert.ok(doneAt >= 0, "the call was made");
  assert.ok(doneAt - queuedAt <= 5000, `made ${doneAt - queuedAt} ms after it was asked`);
  assert.ok(sent.some((s) => s.kind === "toast"));
  await queue.close();
});

Deno.test("a later call (deleting erased messages) waits for the owner's calls and the senders, and a call whose chat has no room does not hold up another chat's", async () => {
  const { clock, queue, sent, call } = setup();
  queue.start();
  const deletions = Array.from({ length: 3 }, (_, i) =>
    queue.call(CHAT, () => {
      sent.push({ at: clock.now(), kind: `delete ${i}` });
      return Promise.resolve({ ok: true, result: true });
    }, "later"));
  const toast = call(0, "toast");
  // A group's window full of edits: its next edit must wait, a toast goes meanwhile.
  for (let i = 0; i < 25; i++) void call(-100, `group edit ${i}`);
  await clock.advance(5000);
  await toast;
  assert.equal(sent[0]!.kind, "toast");
  const firstDelete = sent.findIndex((s) => s.kind.startsWith("delete"));
  const lastGroupEdit = sent.findLastIndex((s) => s.kind.startsWith("group edit"));
  assert.ok(firstDelete > 0);
  assert.ok(sent.findIndex((s) => s.kind === "toast") < firstDelete);
  await clock.advance(120_000);
  await Promise.all(deletions);
  assert.ok(lastGroupEdit >= 0);
  await queue.close();
});
