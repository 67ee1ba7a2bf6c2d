import assert from "node:assert/strict";
import {
  type DeliveryOutcome,
  DeliveryQueue,
  type DeliveryStore,
} from "../../lib/delivery/queue.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";
import type { OutboxEntry, OutboxSubmission } from "../../lib/storage/outbox.ts";
import { newEntry } from "../../lib/storage/outbox_lines.ts";
import { Pacer } from "../../lib/delivery/pacer.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";
import { fakeClock } from "../support/fake_clock.ts";

const PRIVATE_CHAT = 4242;
const GROUP_CHAT = -1001234;
const WAIT_MS = 10_000;
const DAY = 86_400_000;

/** An in-memory outbox with the real one's rules (lib/storage/outbox.ts). */
function memoryStore() {
  const entries = new Map<string, OutboxEntry>();
  const texts = new Map<string, OutboxSubmission>();
  const store: DeliveryStore & {
    add(submission: OutboxSubmission, state?: Partial<OutboxEntry>): void;
    entries: DeliveryStore["entries"];
    given: string[];
  } = {
    given: [],
    add(submission, state = {}) {
      texts.set(submission.id, submission);
      entries.set(submission.id, { ...newEntry(submission, 0, 0), ...state });
    },
    entries: () => entries.values(),
    read: (id) => Promise.resolve(texts.get(id)!),
    failed(id, ts, error) {
      const entry = entries.get(id)!;
      entry.attempts++;
      entry.firstError ??= error;
      entry.lastError = error;
      entry.lastTs = ts;
      return Promise.resolve();
    },
    done(id, _ts, result) {
      entries.delete(id);
      if (result === "given_up") store.given.push(id);
      return Promise.resolve();
    },
  };
  return store;
}

let ids = 0;
function submission(message = "hello", ts = "2026-11-22T14:03:09Z"): OutboxSubmission {
  return {
    id: `s${String(++ids).padStart(7, "0")}`,
    ts,
    name: "Ann",
    contact: "",
    message,
    ip: "203.0.113.7",
  };
}

const OK: BotApiResult = { ok: true, result: { message_id: 1 } };
const fail = (errorCode: number, error: string, parameters?: object): BotApiResult => ({
  ok: false,
  error,
  errorCode,
  ...(parameters === undefined ? {} : { parameters }),
});

/** A queue on a fake clock whose API answers with `reply` (default: accepted). */
function setup(options: {
  chatId?: number;
  reply?: (text: string, now: number) => BotApiResult;
  maxAgeMs?: number;
} = {}) {
  const clock = fakeClock(1_000_000);
  const store = memoryStore();
  const sent: Array<{ at: number; text: string; ok: boolean }> = [];
  const logs: Array<{ level: LogLevel } & LogFields> = [];
  const state = { reply: options.reply ?? (() => OK) };
  const queue = new DeliveryQueue({
    chatId: options.chatId ?? PRIVATE_CHAT,
    send: (text) => {
      const result = state.reply(text, clock.now());
      sent.push({ at: clock.now(), text, ok: result.ok });
      return Promise.resolve(result);
    },
    store,
    pacer: new Pacer(),
    clock,
    random: () => 0.5,
    log: (level, fields) => logs.push({ level, ...fields }),
    waitMs: WAIT_MS,
    maxAgeMs: options.maxAgeMs ?? 7 * DAY,
  });
  /** Submits like lib/http/accept.ts: in the outbox first, then to the queue. */
  const submit = (s: OutboxSubmission) => {
    store.add(s);
    const outcome: { value?: DeliveryOutcome } = {};
    queue.submit(s, true).then((value) => (outcome.value = value));
    return outcome;
  };
  return { clock, store, sent, logs, queue, state, submit };
}

Deno.test("the queue sends a waiting caller's notification at once and answers delivered", async () => {
  const { clock, sent, queue, submit, store } = setup();
  queue.start();
  const outcome = submit(submission("hi there"));
  await clock.settle();
  assert.deepEqual(outcome.value, { ok: true });
  assert.equal(sent.length, 1);
  assert.match(sent[0]!.text, /^New contact message #s\d+\n/);
  assert.equal([...store.entries()].length, 0);
  queue.close();
});

Deno.test("a burst of 30 to one chat is paced: a burst of 3, then one a second, in order, never tripping the limit", async () => {
  const { clock, sent, queue, submit } = setup();
  queue.start();
  const start = clock.now();
  const outcomes = Array.from({ length: 30 }, (_, i) => submit(submission(`message ${i}`)));
  await clock.advance(40_000);
  assert.equal(sent.length, 30);
  assert.deepEqual(
    sent.map((s) => Number(/message (\d+)/.exec(s.text)![1])),
    Array.from({ length: 30 }, (_, i) => i),
  );
  const times = sent.map((s) => s.at - start);
  assert.deepEqual(times.slice(0, 3), [0, 0, 0]);
  for (let i = 3; i < 30; i++) assert.ok(times[i]! - times[i - 1]! >= 1000, `gap before ${i}`);
  // All delivered in the time the limits allow (27 s after a burst of 3), not more.
  assert.ok(times[29]! <= 27_000 + 50, `last at ${times[29]}`);
  // Senders whose turn came within the wait were told "delivered"; the others "saved, later",
  // at once rather than after waiting 10 s for a known outcome.
  const delivered = outcomes.filter((o) => o.value?.ok === true).length;
  assert.ok(delivered >= 12 && delivered <= 13, `${delivered} answered delivered`);
  const queued = outcomes.filter((o) => o.value?.ok === false);
  assert.equal(delivered + queued.length, 30);
  queue.close();
});

Deno.test("callers who cannot be sent within the wait are answered at once, not after it", async () => {
  const { clock, queue, submit } = setup();
  queue.start();
  const outcomes = Array.from({ length: 20 }, () => submit(submission()));
  await clock.settle(); // no time has passed
  const early = outcomes.filter((o) => o.value !== undefined && !o.value.ok);
  assert.equal(early.length, 20 - 13);
  assert.match((early[0]!.value as { error: string }).error, /^queued: \d+ messages ahead$/);
  queue.close();
});

Deno.test("a group chat gets at most 20 messages in any minute", async () => {
  const { clock, sent, queue, submit } = setup({ chatId: GROUP_CHAT });
  queue.start();
  for (let i = 0; i < 25; i++) submit(submission());
  await clock.advance(120_000);
  assert.equal(sent.length, 25);
  for (let i = 20; i < 25; i++) {
    assert.ok(
      sent[i]!.at - sent[i - 20]!.at >= 60_000,
      `message ${i} within a minute of ${i - 20}`,
    );
  }
  queue.close();
});

Deno.test("each part of a split message counts as a message for the pacer", async () => {
  const { clock, sent, queue, submit } = setup();
  queue.start();
  submit(submission("x".repeat(4000) + "🙂".repeat(2000).slice(0, 0) + "y".repeat(0)));
  submit(submission("z".repeat(4000)));
  submit(submission("short"));
  await clock.advance(10_000);
  // Two parts each for the long ones, then the short one: the burst of 3 is spent by the
  // first message's two parts and the second's first part.
  assert.equal(sent.length, 5);
  const t0 = sent[0]!.at;
  assert.deepEqual(sent.map((s) => s.at - t0), [0, 0, 0, 1000, 2000]);
  assert.match(sent[1]!.text, /^\(2\/2\) #s\d+\n/);
  queue.close();
});

Deno.test("a 429 pauses the whole queue for its retry_after; the same part goes again after it", async () => {
  let floods = 1;
  const { clock, sent, queue, submit, logs } = setup({
    reply: () =>
      floods-- > 0 ? fail(429, "429 Too Many Requests: retry after 4", { retry_after: 4 }) : OK,
  });
  queue.start();
  const first = submit(submission("first"));
  const second = submit(submission("second"));
  await clock.advance(3_900);
  assert.equal(sent.length, 1); // nothing during the pause
  await clock.advance(200);
  // At the pause's end the bucket is full again: the first message, then the second.
  assert.equal(sent.length, 3);
  assert.match(sent[1]!.text, /first/);
  assert.match(sent[2]!.text, /second/);
  assert.deepEqual([first.value, second.value], [{ ok: true }, { ok: true }]);
  assert.ok(logs.some((l) => l.event === "delivery_paused" && l.retry_after_s === 4));
  queue.close();
});

Deno.test("a 429 longer than the wait answers the waiting callers at once, and new ones too", async () => {
  let floods = 1;
  const { clock, sent, queue, submit } = setup({
    reply: () => floods-- > 0 ? fail(429, "429 Too Many Requests", { retry_after: 120 }) : OK,
  });
  queue.start();
  const waiting = submit(submission());
  await clock.settle();
  assert.deepEqual(waiting.value, { ok: false, error: "queued: flood control, retry after 120 s" });
  const later = submit(submission());
  await clock.settle();
  assert.equal(later.value?.ok, false); // answered without waiting
  await clock.advance(119_000);
  assert.equal(sent.length, 1);
  await clock.advance(5_000);
  assert.equal(sent.length, 3); // both delivered from the backlog once the pause is over
  queue.close();
});

Deno.test("a long retry_after pauses for an hour at most, an absurd or missing one for 5 s, each logged", async () => {
  const cases = [[{ retry_after: 7200 }, 3600], [{ retry_after: 1e300 }, 5], [
    undefined,
    5,
  ]] as const;
  for (const [parameters, pause] of cases) {
    let floods = 1;
    const { clock, sent, queue, submit, logs } = setup({
      reply: () => floods-- > 0 ? fail(429, "429 Too Many Requests", parameters) : OK,
    });
    queue.start();
    submit(submission());
    await clock.advance(pause * 1000 - 100);
    assert.equal(sent.length, 1);
    await clock.advance(200);
    assert.equal(sent.length, 2, `resumed after ${pause} s`);
    assert.ok(logs.some((l) => l.event === "retry_after_adjusted" && l.pause_s === pause));
    queue.close();
  }
});

Deno.test("a failed delivery is retried in the background with back-off, then arrives marked late", async () => {
  let down = true;
  const { clock, sent, queue, submit, logs, store } = setup({
    reply: () => down ? fail(502, "502 bad gateway (non-JSON reply)") : OK,
  });
  queue.start();
  const outcome = submit(submission("important"));
  await clock.settle();
  assert.deepEqual(outcome.value, { ok: false, error: "502 bad gateway (non-JSON reply)" });
  await clock.advance(30_000);
  const tries = sent.length;
  assert.ok(tries >= 3 && tries <= 6, `${tries} tries in 30 s`);
  // Back-off grows: each gap at least as long as the one before (jitter fixed at 0.5 here).
  const gaps = sent.slice(1).map((s, i) => s.at - sent[i]!.at);
  for (let i = 1; i < gaps.length; i++) assert.ok(gaps[i]! >= gaps[i - 1]!, `gaps ${gaps}`);
  down = false;
  await clock.advance(60_000);
  const last = sent.at(-1)!;
  assert.ok(last.ok);
  assert.match(
    last.text,
    /\nDelivered late: first attempt failed: 502 bad gateway \(non-JSON reply\); the sender was told/,
  );
  assert.equal([...store.entries()].length, 0);
  assert.ok(logs.some((l) => l.event === "delivery_retry" && l.attempts === 1));
  assert.ok(logs.some((l) => l.event === "delivered" && l.late === true));
  queue.close();
});

Deno.test("during an outage the backlog is tried now and then, not once per submission", async () => {
  let down = true;
  const { clock, sent, queue, store } = setup({
    reply: () => down ? fail(0, "network error: connection refused") : OK,
  });
  for (let i = 0; i < 50; i++) store.add(submission(`old ${i}`), { status: 502 });
  queue.start();
  await clock.advance(10 * 60_000);
  // Tries at about 1, 2, 4, … seconds into the outage: a handful, not one per submission (50).
  assert.ok(sent.length <= 16, `${sent.length} calls in 10 minutes of outage`);
  down = false;
  await clock.advance(11 * 60_000); // the next try comes within the back-off's cap
  assert.equal([...store.entries()].length, 0);
  const delivered = sent.filter((s) => s.ok).map((s) => Number(/old (\d+)/.exec(s.text)![1]));
  assert.deepEqual(delivered, Array.from({ length: 50 }, (_, i) => i)); // oldest first
  queue.close();
});

Deno.test("a settings error pauses the backlog with one log line and a hint; new submissions still try, and a success resumes it", async () => {
  let token = "revoked";
  const { clock, sent, queue, submit, store, logs } = setup({
    reply: () => token === "revoked" ? fail(401, "401 Unauthorized") : OK,
  });
  for (let i = 0; i < 3; i++) store.add(submission(`old ${i}`), { status: 502 });
  queue.start();
  await clock.advance(30 * 60_000);
  assert.equal(sent.length, 1); // the backlog stopped at the first 401
  const paused = logs.filter((l) => l.event === "delivery_paused");
  assert.equal(paused.length, 1);
  assert.match(String(paused[0]!.hint), /MESSENGER_BOT_TOKEN/);
  const fresh = submit(submission("new one"));
  await clock.settle();
  assert.equal(sent.length, 2); // a new submission tries once
  assert.equal(fresh.value?.ok, false);
  token = "fixed";
  const next = submit(submission("after the fix"));
  await clock.advance(20_000);
  assert.deepEqual(next.value, { ok: true });
  assert.ok(logs.some((l) => l.event === "delivery_resumed"));
  assert.equal([...store.entries()].length, 0); // the backlog drained, "new one" included
  queue.close();
});

Deno.test("a 400 chat not found and a 403 from a blocked bot pause the backlog too", async () => {
  for (
    const reply of [
      fail(400, "400 Bad Request: chat not found"),
      fail(403, "403 Forbidden: bot was blocked by the user"),
    ]
  ) {
    const { clock, sent, queue, store, logs } = setup({ reply: () => reply });
    for (let i = 0; i < 3; i++) store.add(submission(), { status: 502 });
    queue.start();
    await clock.advance(60 * 60_000);
    assert.equal(sent.length, 1, reply.ok ? "" : reply.error);
    assert.equal(logs.filter((l) => l.event === "delivery_paused").length, 1);
    queue.close();
  }
});

Deno.test("a migrated group is named in a chat_migrated hint", async () => {
  const { clock, queue, submit, logs } = setup({
    reply: () =>
      fail(400, "400 Bad Request: group chat was upgraded to a supergroup chat", {
        migrate_to_chat_id: -100987,
      }),
  });
  queue.start();
  submit(submission());
  await clock.settle();
  assert.ok(logs.some((l) => l.event === "chat_migrated" && l.new_chat_id === -100987));
  queue.close();
});

Deno.test("submissions older than the maximum age are given up with a log line naming them", async () => {
  const { clock, sent, queue, store, logs } = setup({ maxAgeMs: DAY });
  const old = submission("ancient", "2026-11-20T14:03:09Z");
  store.add(old, { status: 502, attempts: 40, lastError: "timeout" });
  store.add(submission("recent", "2026-11-22T13:00:00Z"), { status: 502 });
  queue.start();
  await clock.advance(5_000);
  assert.deepEqual(store.given, [old.id]);
  assert.equal(sent.length, 1);
  assert.match(sent[0]!.text, /recent/);
  const line = logs.find((l) => l.event === "delivery_given_up");
  assert.equal(line?.id, old.id);
  assert.equal(line?.attempts, 40);
  queue.close();
});

Deno.test("while callers keep arriving, every fourth send is an old one: the backlog never starves", async () => {
  const { clock, sent, queue, submit, store } = setup();
  for (let i = 0; i < 100; i++) store.add(submission(`old ${i}`), { status: 502 });
  queue.start();
  await clock.settle();
  sent.length = 0;
  const outcomes = [];
  for (let second = 0; second < 20; second++) {
    outcomes.push(submit(submission(`new ${second}`)));
    await clock.advance(1_000);
  }
  const old = sent.filter((s) => s.text.includes("old ")).length;
  assert.ok(old >= 4 && old <= 6, `${old} backlog sends in 20 s`);
  await clock.advance(10_000);
  assert.ok(
    outcomes.every((o) => o.value?.ok === true),
    JSON.stringify(outcomes.map((o) => o.value)),
  );
  queue.close();
});

Deno.test("the backlog's share never sends a newer message before a waiting caller", async () => {
  const { clock, sent, queue, submit } = setup();
  queue.start();
  for (let i = 0; i < 30; i++) submit(submission(`message ${i}`));
  await clock.advance(40_000);
  assert.deepEqual(
    sent.map((s) => Number(/message (\d+)/.exec(s.text)![1])),
    Array.from({ length: 30 }, (_, i) => i),
  );
  queue.close();
});

Deno.test("close answers every waiting caller 'queued' and sends nothing more", async () => {
  const { clock, sent, queue, submit, store } = setup();
  queue.start();
  const outcomes = Array.from({ length: 6 }, () => submit(submission()));
  await clock.settle();
  queue.close();
  await clock.settle();
  assert.equal(sent.length, 3);
  const stopped = outcomes.filter((o) => o.value?.ok === false);
  assert.ok(stopped.some((o) => !o.value!.ok && o.value!.error === "queued: contactd is stopping"));
  assert.equal(outcomes.filter((o) => o.value === undefined).length, 0);
  await clock.advance(60_000);
  assert.equal(sent.length, 3);
  assert.equal([...store.entries()].length, 3); // left in the outbox for the next start
  assert.deepEqual(await queue.submit(submission(), true), {
    ok: false,
    error: "queued: contactd is stopping",
  });
});

Deno.test("one failure does not hold back the next caller (a blip is not an outage); the failed one follows from the backlog", async () => {
  let slow = true;
  const { clock, sent, queue, submit, store } = setup({
    reply: () => slow ? fail(500, "500 Internal Server Error") : OK,
  });
  queue.start();
  submit(submission("first"));
  await clock.settle(); // fails, backs the backlog off
  slow = false;
  const outcome = submit(submission("second"));
  await clock.settle();
  assert.deepEqual(outcome.value, { ok: true }); // callers do not wait for the backlog's back-off
  await clock.advance(10_000);
  assert.equal([...store.entries()].length, 0);
  assert.equal(sent.filter((s) => s.ok).length, 2);
  queue.close();
});

Deno.test("a message not in the outbox is tried once and never redelivered", async () => {
  const { clock, sent, queue } = setup({ reply: () => fail(502, "502 Bad Gateway") });
  queue.start();
  const outcome = await queue.submit(submission(), false);
  assert.deepEqual(outcome, { ok: false, error: "502 Bad Gateway" });
  await clock.advance(30 * 60_000);
  assert.equal(sent.length, 1);
  queue.close();
});

Deno.test("during an outage new senders are told at once, not after the wait, and their messages follow once it is over", async () => {
  let down = true;
  const { clock, sent, queue, submit, store } = setup({
    reply: () => down ? fail(502, "502 bad gateway (non-JSON reply)") : OK,
  });
  queue.start();
  const first = [submit(submission("first")), submit(submission("second"))];
  await clock.settle();
  for (const outcome of first) {
    assert.deepEqual(outcome.value, { ok: false, error: "502 bad gateway (non-JSON reply)" });
  }
  // Two failures in a row: the next senders are answered without waiting or a call.
  const calls = sent.length;
  const later = Array.from({ length: 5 }, (_, i) => submit(submission(`later ${i}`)));
  await clock.settle();
  for (const outcome of later) {
    assert.equal(outcome.value?.ok, false);
    assert.match(
      outcome.value?.ok === false ? outcome.value.error : "",
      /^queued: 502 bad gateway \(non-JSON reply\), next try in \d+ s$/,
    );
  }
  assert.equal(sent.length, calls);
  down = false;
  await clock.advance(60_000);
  assert.equal([...store.entries()].length, 0, "all seven delivered after the outage");
  const delivered = sent.filter((s) => s.ok).map((s) =>
    /(first|second|later \d)$/.exec(s.text)![1]
  );
  assert.deepEqual(delivered, [
    "first",
    "second",
    "later 0",
    "later 1",
    "later 2",
    "later 3",
    "later 4",
  ]);
  queue.close();
});

Deno.test("an entry whose text cannot be read back is given up with a log line, and the backlog goes on", async () => {
  const { clock, sent, queue, store, logs } = setup();
  const [broken, fine] = [submission("broken"), submission("fine")];
  store.add(broken, { status: 502 });
  store.add(fine, { status: 502 });
  const read = store.read;
  store.read = (id) => id === broken.id ? Promise.reject(new Error("unreadable")) : read(id);
  queue.start();
  await clock.advance(5_000);
  assert.deepEqual(sent.map((s) => s.text.split("\n").at(-1)), ["fine"]);
  assert.ok(
    logs.some((l) =>
      l.event === "delivery_given_up" && l.id === broken.id && l.reason === "unreadable"
    ),
  );
  assert.equal([...store.entries()].length, 0);
  queue.close();
});

Deno.test("a sender is answered even when the outbox cannot note the failed attempt", async () => {
  const { clock, queue, submit, store, logs } = setup({
    reply: () => fail(500, "500 Internal Server Error"),
  });
  store.failed = () => Promise.reject(new Error("disk full"));
  queue.start();
  const outcome = submit(submission());
  await clock.settle();
  assert.deepEqual(outcome.value, { ok: false, error: "500 Internal Server Error" });
  assert.ok(logs.some((l) => l.event === "outbox_write_failed"));
  queue.close();
});
