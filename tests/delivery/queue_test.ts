import assert from "node:assert/strict";
import {
  type DeliveryOutcome,
  DeliveryQueue,
  type Destination,
  FORGOTTEN,
} from "../../lib/delivery/queue.ts";
import { ForgottenIds } from "../../lib/storage/erasure.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";
import { OutboxEntryDamaged, type OutboxSubmission } from "../../lib/storage/outbox.ts";
import { Pacer } from "../../lib/delivery/pacer.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";
import { PAUSE_PROBE_MS } from "../../lib/delivery/health.ts";
import { fakeClock } from "../support/fake_clock.ts";
import { memoryOutbox } from "../support/memory_outbox.ts";
import { formatTimestamp } from "../../lib/common/timestamp.ts";

const PRIVATE_CHAT = 4242;
const GROUP_CHAT = -1001234;
const WAIT_MS = 10_000;
const DAY = 86_400_000;

/**
 * An in-memory outbox with the real one's rules: its window and its one `applyOp`
 * (tests/support/memory_outbox.ts).
 */
const memoryStore = memoryOutbox;

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

/**
 * A queue on a fake clock whose API answers with `reply` (default: accepted), after `delayMs` of
 * fake time (default at once). `wall.step` moves the wall clock alone (a clock step).
 */
function setup(options: {
  chatId?: number;
  reply?: (text: string, now: number) => BotApiResult;
  maxAgeMs?: number;
  delayMs?: number;
  stopWaitMs?: number;
  wallStep?: number;
  destination?: (form: string) => Destination | undefined;
  forgotten?: { has(id: string): boolean };
} = {}) {
  const clock = fakeClock(1_000_000);
  const wall = { step: options.wallStep ?? 0 };
  const store = memoryStore();
  const sent: Array<{ at: number; text: string; ok: boolean; to?: Destination }> = [];
  const logs: Array<{ level: LogLevel } & LogFields> = [];
  const state = { reply: options.reply ?? (() => OK) };
  const queue = new DeliveryQueue({
    chatId: options.chatId ?? PRIVATE_CHAT,
    send: (text, to) => {
      const at = clock.now();
      const answer = () => {
        const result = state.reply(text, clock.now());
        sent.push({ at, text, ok: result.ok, ...(to === undefined ? {} : { to }) });
        return result;
      };
      const delayMs = options.delayMs ?? 0;
      if (delayMs === 0) return Promise.resolve(answer());
      return new Promise((resolve) => clock.setTimer(() => resolve(answer()), delayMs));
    },
    store,
    pacer: new Pacer(),
    clock: { ...clock, wallNow: () => clock.wallNow() + wall.step },
    random: () => 0.5,
    log: (level, fields) => logs.push({ level, ...fields }),
    waitMs: WAIT_MS,
    maxAgeMs: options.maxAgeMs ?? 7 * DAY,
    ...(options.stopWaitMs === undefined ? {} : { stopWaitMs: options.stopWaitMs }),
    ...(options.destination === undefined ? {} : { destination: options.destination }),
    ...(options.forgotten === undefined ? {} : { forgotten: options.forgotten }),
  });
  /** Submits like lib/http/accept.ts: in the outbox first, then to the queue. */
  const submit = (s: OutboxSubmission) => {
    store.add(s);
    const outcome: { value?: DeliveryOutcome } = {};
    queue.submit(s, true).then((value) => (outcome.value = value));
    return outcome;
  };
  return { clock, wall, store, sent, logs, queue, state, submit };
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
  await clock.advance(PAUSE_PROBE_MS - 1_000);
  assert.equal(sent.length, 1); // the backlog stopped at the first 401 until its probe
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
    await clock.advance(PAUSE_PROBE_MS - 1_000);
    assert.equal(sent.length, 1, reply.ok ? "" : reply.error);
    await clock.advance(60 * 60_000);
    // One probe every 10 minutes, each a single send; still one line for the pause.
    assert.ok(sent.length >= 6 && sent.length <= 8, `${sent.length} sends in 70 minutes`);
    assert.equal(logs.filter((l) => l.event === "delivery_paused").length, 1);
    queue.close();
  }
});

Deno.test("a 400 message thread not found is a settings problem: paused, one line whose hint names MESSENGER_TOPIC_ID", async () => {
  const reply = fail(400, "400 Bad Request: message thread not found");
  const { clock, sent, queue, store, logs } = setup({ reply: () => reply });
  for (let i = 0; i < 3; i++) store.add(submission(), { status: 502 });
  queue.start();
  await clock.advance(PAUSE_PROBE_MS - 1_000);
  assert.equal(sent.length, 1);
  await clock.advance(30 * 60_000);
  assert.ok(sent.length <= 5, `${sent.length} sends in 30 minutes: probes only`);
  const paused = logs.filter((l) => l.event === "delivery_paused");
  assert.equal(paused.length, 1);
  assert.equal(paused[0]!.reason, reply.ok ? "" : reply.error);
  assert.match(String(paused[0]!.hint), /MESSENGER_TOPIC_ID/);
  queue.close();
});

Deno.test("a paused backlog is probed every 10 minutes: a fix made without a restart delivers it and ends the pause", async () => {
  let kicked = true;
  const { clock, sent, queue, store, logs } = setup({
    reply: () => kicked ? fail(403, "403 Forbidden: bot was kicked from the group chat") : OK,
  });
  store.add(submission("waiting"), { status: 502 });
  queue.start();
  await clock.advance(60_000);
  assert.equal(queue.status().state, "paused");
  kicked = false; // the operator adds the bot back; nobody submits anything
  await clock.advance(PAUSE_PROBE_MS);
  assert.equal([...store.entries()].length, 0);
  assert.equal(sent.filter((s) => s.ok).length, 1);
  assert.equal(queue.status().state, "ok");
  assert.ok(logs.some((l) => l.event === "delivery_resumed"));
  queue.close();
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

Deno.test("an entry whose line is damaged is given up with a log line, and the backlog goes on", async () => {
  const { clock, sent, queue, store, logs } = setup();
  const [broken, fine] = [submission("broken"), submission("fine")];
  store.add(broken, { status: 502 });
  store.add(fine, { status: 502 });
  const read = store.read;
  store.read = (id) => id === broken.id ? Promise.reject(new OutboxEntryDamaged(id)) : read(id);
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

Deno.test("an entry whose text cannot be read for now (an I/O error) is tried again later, never given up for it", async () => {
  const { clock, sent, queue, store, logs } = setup();
  const flaky = submission("flaky");
  store.add(flaky, { status: 502 });
  const read = store.read;
  let failures = 1;
  store.read = (id) =>
    failures-- > 0 ? Promise.reject(new Error("EMFILE: too many open files")) : read(id);
  queue.start();
  await clock.advance(1);
  assert.equal(sent.length, 0);
  assert.ok(logs.some((l) => l.event === "outbox_read_failed" && l.id === flaky.id));
  assert.equal(store.given.length, 0);
  await clock.advance(60_000);
  assert.deepEqual(sent.map((s) => s.text.split("\n").at(-1)), ["flaky"]);
  assert.ok(!logs.some((l) => l.event === "delivery_given_up"));
  assert.equal(queue.status().state, "ok");
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

/** The last line of a notification: the message, for the tests' one-line messages. */
const lastLine = (text: string) => text.split("\n").at(-1)!;

const TOO_LONG = "400 Bad Request: message is too long";

Deno.test("12 submissions Telegram refuses at the head of the backlog do not delay 3 good ones against a healthy API", async () => {
  const { clock, sent, queue, store, logs } = setup({
    reply: (text) => /^refused \d+$/.test(lastLine(text)) ? fail(400, TOO_LONG) : OK,
  });
  for (let i = 0; i < 12; i++) store.add(submission(`refused ${i}`), { status: 502 });
  for (let i = 0; i < 3; i++) store.add(submission(`good ${i}`), { status: 502 });
  const start = clock.now();
  queue.start();
  await clock.advance(30_000);
  const good = sent.filter((s) => s.ok && /^good \d$/.test(lastLine(s.text)));
  assert.equal(good.length, 3, "all three good ones delivered");
  // Only the pacer delays them: 12 refused tries and 12 notices go first, oldest first, evenly
  // one a second as a backlog goes (not the growing back-off of an outage, which a refusal is not).
  assert.ok(good.at(-1)!.at - start <= 26_000, `last good one after ${good.at(-1)!.at - start} ms`);
  assert.equal(logs.filter((l) => l.event === "delivery_paused").length, 0);
  assert.deepEqual(queue.status(), { state: "ok" });
  assert.equal([...store.entries()].length, 0);
});

Deno.test("a message Telegram refuses as written goes again as a notice without the sender's text, and is delivered as that", async () => {
  const { clock, sent, queue, submit, store, logs } = setup({
    reply: (text) => text.includes("<refused>") ? fail(400, TOO_LONG) : OK,
  });
  queue.start();
  const s = submission("<refused>");
  const outcome = submit(s);
  await clock.settle();
  assert.deepEqual(outcome.value, { ok: false, error: TOO_LONG });
  // Visible in `contactd pending` while it is pending: the outbox has the failed attempt.
  const entry = [...store.entries()].find((e) => e.id === s.id);
  assert.equal(entry?.lastError, TOO_LONG);
  await clock.advance(5_000);
  assert.equal(sent.length, 2);
  const notice = sent[1]!;
  assert.ok(notice.ok);
  assert.ok(notice.text.startsWith(`New contact message #${s.id}\n`));
  assert.match(
    notice.text,
    /\nNot shown: Telegram refused its text \(400 Bad Request: message is too long\);/,
  );
  assert.ok(
    !notice.text.includes("<refused>") && !notice.text.includes("Ann"),
    "no stranger's text",
  );
  assert.match(notice.text, /\nDelivered late: first attempt failed: 400 Bad Request/);
  assert.ok(logs.some((l) => l.event === "delivered" && l.id === s.id && l.fallback === true));
  assert.equal([...store.entries()].length, 0);
});

Deno.test("a message whose notice is refused too is given up with a log line naming it and the reason", async () => {
  const refused = submission("refused");
  const { clock, sent, queue, store, logs } = setup({
    reply: (text) => text.includes(`#${refused.id}`) ? fail(400, TOO_LONG) : OK,
  });
  store.add(refused, { status: 502 });
  store.add(submission("fine"), { status: 502 });
  queue.start();
  await clock.advance(5_000);
  assert.equal(
    sent.filter((s) => s.text.includes(`#${refused.id}`)).length,
    2,
    "once, then the notice",
  );
  assert.deepEqual(store.given, [refused.id]);
  const line = logs.find((l) => l.event === "delivery_given_up");
  assert.deepEqual(
    [line?.id, line?.reason, line?.error, line?.attempts],
    [refused.id, "refused", TOO_LONG, 2],
  );
  assert.ok(sent.some((s) => s.ok && lastLine(s.text) === "fine"));
});

Deno.test("a refused message is not an outage: the next sender is still tried and delivered", async () => {
  const { clock, queue, submit } = setup({
    reply: (text) => text.includes("<refused>") ? fail(400, TOO_LONG) : OK,
  });
  queue.start();
  const refused = [submit(submission("<refused>")), submit(submission("<refused>"))];
  await clock.settle();
  assert.ok(refused.every((o) => o.value?.ok === false));
  const next = submit(submission("fine"));
  await clock.settle();
  assert.deepEqual(next.value, { ok: true });
  assert.deepEqual(queue.status(), { state: "ok" });
});

Deno.test("status says outage after a failed send, paused with its reason after a settings failure, and ok after a success", async () => {
  let reply = fail(502, "502 Bad Gateway");
  const { clock, queue, submit } = setup({ reply: () => reply });
  queue.start();
  assert.deepEqual(queue.status(), { state: "ok" });
  submit(submission());
  await clock.settle();
  assert.deepEqual(queue.status(), { state: "outage" });
  reply = fail(401, "401 Unauthorized");
  submit(submission());
  await clock.settle();
  assert.deepEqual(queue.status(), { state: "paused", reason: "401 Unauthorized" });
  reply = OK;
  submit(submission());
  await clock.settle();
  assert.deepEqual(queue.status(), { state: "ok" });
});

Deno.test("a delivered line counts the attempt that delivered: 1 for a first attempt, 2 after one failure", async () => {
  const { clock, queue, store, logs } = setup();
  const [first, second] = [submission(), submission()];
  store.add(first, { status: 502 });
  store.add(second, { status: 502, attempts: 1, firstError: "timeout", lastError: "timeout" });
  queue.start();
  await clock.advance(2_000);
  const attempts = (id: string) =>
    logs.find((l) => l.event === "delivered" && l.id === id)?.attempts;
  assert.equal(attempts(first.id), 1);
  assert.equal(attempts(second.id), 2);
});

Deno.test("a wall clock stepped 8 days forward gives nothing up early, not even on the first attempt after the step", async () => {
  let down = true;
  const { clock, wall, queue, submit, store, logs } = setup({
    maxAgeMs: DAY,
    reply: () => down ? fail(502, "502 Bad Gateway") : OK,
  });
  queue.start();
  for (let i = 0; i < 3; i++) submit(submission(`m ${i}`));
  await clock.advance(60_000);
  wall.step = 8 * DAY; // the clock was 8 days behind, and is corrected
  await clock.advance(60_000);
  down = false;
  await clock.advance(10 * 60_000);
  assert.deepEqual(store.given, []);
  assert.equal(logs.filter((l) => l.event === "delivery_given_up").length, 0);
  assert.equal(logs.filter((l) => l.event === "delivered").length, 3);
});

Deno.test("a wall clock stepped 8 days back keeps nothing past its age: it is given up by the time that passed", async () => {
  // The clock runs 8 days ahead: submissions are stamped with it.
  const { clock, wall, queue, submit, store } = setup({
    maxAgeMs: DAY,
    wallStep: 8 * DAY,
    reply: () => fail(502, "502 Bad Gateway"),
  });
  const ts = formatTimestamp(new Date(clock.wallNow() + 8 * DAY));
  queue.start();
  const pending = [submission("a", ts), submission("b", ts)];
  for (const s of pending) submit(s);
  const ids = pending.map((s) => s.id);
  await clock.advance(60_000);
  wall.step = 0; // corrected
  await clock.advance(DAY - 2 * 60 * 60_000);
  assert.deepEqual(store.given, [], "younger than a day");
  await clock.advance(3 * 60 * 60_000);
  assert.deepEqual(store.given.sort(), ids.sort(), "a day old by the time that passed");
});

Deno.test("close waits for the call in flight: its sender gets the real outcome, the outbox notes it, the others are answered at once", async () => {
  const { clock, sent, queue, submit, store, logs } = setup({ delayMs: 1_500 });
  queue.start();
  const inFlight = submit(submission("in flight"));
  await clock.settle();
  const later = submission("waiting");
  const waiting = submit(later);
  await clock.settle();
  let closed = false;
  queue.close().then(() => (closed = true));
  await clock.settle();
  assert.deepEqual(waiting.value, { ok: false, error: "queued: contactd is stopping" });
  assert.equal(inFlight.value, undefined, "still waiting for its call");
  assert.equal(closed, false);
  await clock.advance(1_500);
  assert.deepEqual(inFlight.value, { ok: true });
  assert.equal(closed, true);
  assert.deepEqual(sent.map((s) => lastLine(s.text)), ["in flight"]);
  assert.deepEqual([...store.entries()].map((e) => e.id), [later.id], "only the waiting one left");
  assert.equal(logs.filter((l) => l.event === "delivery_stop_timeout").length, 0);
});

Deno.test("close records a call in flight that fails as a failed attempt, and answers its sender with the error", async () => {
  const { clock, queue, submit, store } = setup({
    delayMs: 1_500,
    reply: () => fail(502, "502 Bad Gateway"),
  });
  queue.start();
  const s = submission();
  const inFlight = submit(s);
  await clock.settle();
  const closing = queue.close();
  await clock.advance(1_500);
  await closing;
  assert.deepEqual(inFlight.value, { ok: false, error: "502 Bad Gateway" });
  const entry = [...store.entries()].find((e) => e.id === s.id);
  assert.deepEqual([entry?.attempts, entry?.lastError], [1, "502 Bad Gateway"]);
});

Deno.test("close stops waiting for a call in flight after stopWaitMs, answers its sender 'queued' and logs it", async () => {
  const { clock, queue, submit, store, logs } = setup({ delayMs: 60_000, stopWaitMs: 11_000 });
  queue.start();
  const s = submission();
  const inFlight = submit(s);
  await clock.settle();
  let closed = false;
  queue.close().then(() => (closed = true));
  await clock.advance(10_900);
  assert.equal(closed, false);
  await clock.advance(200);
  assert.equal(closed, true);
  // (Its own 10 s wait answered it first here; either way it is told "saved".)
  assert.equal(inFlight.value?.ok, false);
  assert.ok(logs.some((l) => l.event === "delivery_stop_timeout" && l.id === s.id));
  assert.equal([...store.entries()].length, 1, "left in the outbox for the next start");
});

const SALES: Destination = { form: "sales", chatId: -1005555, topicId: 9, title: "Sales" };

Deno.test("a form's notification goes to its form's chat and topic, with its title in the header", async () => {
  const { clock, sent, queue, submit } = setup({
    destination: (form) => form === "sales" ? SALES : undefined,
  });
  queue.start();
  const outcome = submit({ ...submission("quote"), form: "sales" });
  submit(submission("plain"));
  await clock.settle();
  assert.deepEqual(outcome.value, { ok: true });
  assert.deepEqual(sent.map((s) => s.to), [SALES, undefined]);
  assert.match(sent[0]!.text, /^New contact message #s\d+\nForm: Sales\n/);
  assert.doesNotMatch(sent[1]!.text, /\nForm: /);
  queue.close();
});

Deno.test("pacing is per chat: forms in two chats each get their own burst, forms in one chat share it", async () => {
  const other: Destination = { form: "other", chatId: 777, title: "other" };
  const { clock, sent, queue, submit } = setup({
    destination: (form) =>
      form === "other"
        ? other
        : form === "same"
        ? { form: "same", chatId: PRIVATE_CHAT, title: "same" }
        : undefined,
  });
  queue.start();
  for (let i = 0; i < 4; i++) {
    submit({ ...submission(`other ${i}`), form: "other" });
    submit(submission(`default ${i}`));
  }
  await clock.settle();
  // A burst of 3 per chat: 6 at once from two chats (one chat alone would allow 3).
  assert.equal(sent.length, 6, sent.map((s) => s.text.split("\n").at(-1)).join(", "));
  await clock.advance(5_000);
  assert.equal(sent.length, 8);

  const shared = setup({
    destination: (form) =>
      form === "same" ? { form: "same", chatId: PRIVATE_CHAT, title: "same" } : undefined,
  });
  shared.queue.start();
  for (let i = 0; i < 3; i++) {
    shared.submit({ ...submission(`same ${i}`), form: "same" });
    shared.submit(submission(`default ${i}`));
  }
  await shared.clock.settle();
  assert.equal(shared.sent.length, 3, "one chat, one burst");
  queue.close();
  shared.queue.close();
});

Deno.test("a pending message of a form FORMS no longer names goes to the default chat, with one form_removed line", async () => {
  const { clock, sent, queue, store, logs } = setup({ destination: () => undefined });
  store.add({ ...submission("orphan"), form: "gone" }, { status: 502 });
  queue.start();
  await clock.advance(1_000);
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.to, undefined);
  const removed = logs.filter((l) => l.event === "form_removed");
  assert.equal(removed.length, 1);
  assert.deepEqual([removed[0]!.form, removed[0]!.level], ["gone", "warn"]);
  queue.close();
});

Deno.test("a pending message of a removed form is labelled Form: <id> (removed), and form_removed names the chat", async () => {
  const { clock, sent, queue, store, logs } = setup({
    destination: () => undefined,
    chatId: GROUP_CHAT,
  });
  store.add({ ...submission("orphan"), form: "gone" }, { status: 502 });
  queue.start();
  await clock.advance(1_000);
  assert.equal(sent.length, 1);
  const header = sent[0]!.text.split("\n\n")[0]!.split("\n");
  assert.equal(header[1], "Form: gone (removed)");
  const removed = logs.filter((l) => l.event === "form_removed");
  assert.deepEqual([removed[0]!.form, removed[0]!.chat], ["gone", GROUP_CHAT]);
  queue.close();
});

Deno.test("a settings problem in a form's chat pauses with one line naming the form and its settings", async () => {
  const { clock, queue, submit, logs } = setup({
    destination: () => SALES,
    reply: () => fail(400, "400 Bad Request: chat not found"),
  });
  queue.start();
  submit({ ...submission("quote"), form: "sales" });
  await clock.settle();
  const paused = logs.filter((l) => l.event === "delivery_paused");
  assert.equal(paused.length, 1);
  assert.equal(paused[0]!.form, "sales");
  assert.match(String(paused[0]!.hint), /form sales: FORM_SALES_CHAT_ID, FORM_SALES_TOPIC_ID/);
  queue.close();
});

Deno.test("a submission forgotten while it waits in the paced callers' lane or the backlog is never sent, and its sender is answered as stored", async () => {
  const clock0 = fakeClock(0);
  const forgotten = new ForgottenIds(60_000, () => clock0.now());
  const { clock, sent, queue, submit, store } = setup({ forgotten });
  // One in the backlog, forgotten though the window does not have it done (beyond the window).
  const old = submission("old secret", "2026-11-22T13:00:00Z");
  store.add(old);
  forgotten.add(old.id);
  queue.start();
  const all = Array.from({ length: 10 }, (_, i) => submission(`secret ${i}`));
  const outcomes = all.map((s) => submit(s));
  await clock.settle();
  assert.equal(sent.length, 3); // a burst of 3, then one a second
  // forget runs now (lib/storage/erasure.ts): the ids first, then the entries given up.
  for (const s of all.slice(3)) {
    forgotten.add(s.id);
    await store.done(s.id, "2026-11-22T14:03:10Z", "given_up");
  }
  await clock.advance(40_000);
  assert.deepEqual(sent.map((s) => /secret \d+|old secret/.exec(s.text)![0]), [
    "secret 0",
    "secret 1",
    "secret 2",
  ]);
  for (const outcome of outcomes.slice(0, 3)) assert.deepEqual(outcome.value, { ok: true });
  for (const outcome of outcomes.slice(3)) {
    assert.deepEqual(outcome.value, { ok: false, error: FORGOTTEN });
  }
  await queue.close();
});

Deno.test("a token refused outside the queue (getMe, getUpdates) pauses delivery at once, and a call answered with the token ends the pause", async () => {
  const { clock, logs, queue } = setup();
  queue.start();
  assert.deepEqual(queue.status(), { state: "ok" });
  queue.tokenRefused("401 Unauthorized");
  assert.deepEqual(queue.status(), { state: "paused", reason: "401 Unauthorized" });
  const paused = logs.filter((line) => line.event === "delivery_paused");
  assert.equal(paused.length, 1);
  assert.match(String(paused[0]!.hint), /@BotFather/);
  // Said once: the poller's next refusals change nothing.
  queue.tokenRefused("401 Unauthorized");
  assert.equal(logs.filter((line) => line.event === "delivery_paused").length, 1);
  // A chat action's call refused for the token pauses as well; one answered ends the pause.
  queue.tokenAccepted();
  assert.deepEqual(queue.status(), { state: "ok" });
  assert.ok(logs.some((line) => line.event === "delivery_resumed"));
  const refused = queue.call(PRIVATE_CHAT, () => Promise.resolve(fail(401, "401 Unauthorized")));
  await clock.settle();
  assert.equal((await refused).ok, false);
  assert.deepEqual(queue.status(), { state: "paused", reason: "401 Unauthorized" });
  const answered = queue.call(PRIVATE_CHAT, () => Promise.resolve(OK));
  await clock.settle();
  assert.equal((await answered).ok, true);
  assert.deepEqual(queue.status(), { state: "ok" });
  await queue.close();
});
