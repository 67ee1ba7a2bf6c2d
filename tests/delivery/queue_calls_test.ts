import assert from "node:assert/strict";
import {
  CALL_FLOOD_TRIES,
  CALLS_FULL,
  CALLS_WAITING_PER_CHAT,
  DeliveryQueue,
  type SentPart,
} from "../../lib/delivery/queue.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import { Pacer, TELEGRAM_LIMITS } from "../../lib/delivery/pacer.ts";
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
function setup(options: { markup?: (id: string) => unknown; chatId?: number } = {}) {
  const clock = fakeClock(1_000_000);
  const store = memoryOutbox();
  const sent: Array<{ at: number; kind: string; markup?: unknown }> = [];
  const parts: SentPart[] = [];
  const queue = new DeliveryQueue({
    chatId: options.chatId ?? CHAT,
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
  return { clock, queue, sent, parts, submit, call, store };
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

/** The owner's calls asked while a backlog drains: how long each waited for its turn (ms). */
async function ownerWaitsDuringBacklog(chatId: number, backlog: number, calls: number) {
  const { clock, queue, sent, call, store } = setup({ chatId });
  for (let i = 0; i < backlog; i++) store.add(submission(`backlog ${i}`));
  queue.start();
  const waits: number[] = [];
  for (let i = 0; i < calls; i++) {
    // A press (its toast and its edit), then /status, /pending and a reply's answer, spread out.
    await clock.advance(7_000);
    const askedAt = clock.now();
    const chat = i % 4 === 0 ? 0 : chatId;
    void call(chat, `owner ${i}`).then(() => waits.push(clock.now() - askedAt));
  }
  await clock.advance(10_000);
  const notifications = sent.filter((s) => s.kind.startsWith("notification")).length;
  await queue.close();
  return { waits, notifications };
}

Deno.test("the owner's calls never wait for a backlog to drain: a backlog of 300 in a private chat, each call made within 2 s", async () => {
  const { waits, notifications } = await ownerWaitsDuringBacklog(CHAT, 300, 30);
  assert.equal(waits.length, 30, "every call was made");
  assert.ok(notifications < 300, "the backlog was still draining");
  assert.ok(Math.max(...waits) <= 2000, `waits: ${waits}`);
});

Deno.test("the owner's calls never wait for a backlog to drain: a backlog of 300 in a group (20 a minute), each call made within 6 s", async () => {
  const { waits, notifications } = await ownerWaitsDuringBacklog(-100_200, 300, 20);
  assert.equal(waits.length, 20, "every call was made");
  assert.ok(notifications < 300, "the backlog was still draining");
  assert.ok(Math.max(...waits) <= 6000, `waits: ${waits}`);
});

Deno.test("a group's chat actions never take the notifications' share: a flood of 300 answers leaves senders their slots and their deadline", async () => {
  const GROUP = -100_300;
  const { clock, queue, sent, call, submit } = setup({ chatId: GROUP });
  queue.start();
  const answers: Promise<unknown>[] = [];
  // 300 /status answers asked as fast as the inbox asks (each once the one before was made).
  let stop = false;
  const flood = (async () => {
    for (let i = 0; i < 300 && !stop; i++) {
      const answer = call(GROUP, `answer ${i}`);
      answers.push(answer);
      await answer;
    }
  })();
  await clock.advance(30_000);
  // Then senders, one every 5 s: every one delivered within its wait.
  const outcomes: Promise<unknown>[] = [];
  for (let i = 0; i < 8; i++) {
    outcomes.push(submit(submission(`sender ${i}`)));
    await clock.advance(5_000);
  }
  await clock.advance(WAIT_MS);
  for (const outcome of outcomes) assert.deepEqual(await outcome, { ok: true });
  // In any window of the group's limit, calls took at most their share.
  const share = Math.floor(TELEGRAM_LIMITS.group.count * TELEGRAM_LIMITS.callShare);
  const callTimes = sent.filter((s) => s.kind.startsWith("answer")).map((s) => s.at);
  for (let i = share; i < callTimes.length; i++) {
    assert.ok(callTimes[i]! - callTimes[i - share]! >= TELEGRAM_LIMITS.group.windowMs, `${i}`);
  }
  assert.ok(callTimes.length >= share, "the calls had their share");
  stop = true;
  await queue.close();
  await flood;
});

Deno.test("at most CALLS_WAITING_PER_CHAT owner calls wait for one chat: one more is answered at once without being made", async () => {
  const { clock, queue, sent, call } = setup({ chatId: -100_400 });
  const waiting = Array.from({ length: CALLS_WAITING_PER_CHAT }, (_, i) => call(-100_400, `c${i}`));
  const refused = await call(-100_400, "one too many");
  assert.deepEqual(refused, { ok: false, error: CALLS_FULL });
  // Another chat is not affected.
  const other = call(CHAT, "other chat");
  queue.start();
  await clock.advance(200_000);
  assert.ok((await other).ok);
  assert.ok((await Promise.all(waiting)).every((r) => r.ok));
  assert.ok(!sent.some((s) => s.kind === "one too many"));
  await queue.close();
});
