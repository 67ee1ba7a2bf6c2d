import assert from "node:assert/strict";
import type { BotApiFailure, GetUpdatesResult } from "../../lib/bot/api.ts";
import { parseUpdates } from "../../lib/bot/updates.ts";
import {
  afterPoll,
  afterPollFailure,
  CONFLICT_RETRY_MS,
  IDLE_POLL_MS,
  NOT_SAVED_RETRY_MS,
  type OffsetStore,
  POLL_RETRY_CAP_MS,
  type PollHealth,
  POLLING,
  UpdateNotSaved,
  UpdatePoller,
} from "../../lib/inbox/poller.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";

type Failure = BotApiFailure;

const WEBHOOK: Failure = {
  ok: false,
  error:
    "409 Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
  errorCode: 409,
};
const OTHER_POLLER: Failure = {
  ok: false,
  error:
    "409 Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
  errorCode: 409,
};
const DOWN: Failure = { ok: false, error: "502 Bad Gateway", errorCode: 502 };
const TIMEOUT: Failure = { ok: false, error: "timeout" };

function ok(updates: unknown[]): GetUpdatesResult {
  return { ok: true, updates };
}

/** A `/status` command update, as Telegram sends it. */
function command(updateId: number): unknown {
  return {
    update_id: updateId,
    message: {
      message_id: 10 + updateId,
      chat: { id: -100123, type: "supergroup" },
      from: { id: 42, is_bot: false, first_name: "Olga" },
      date: 1_764_000_000,
      text: "/status",
    },
  };
}

interface Options {
  /** The poll's answers, in order; once they run out, a poll waits until it is aborted. */
  script: GetUpdatesResult[];
  load?: () => Promise<number | undefined>;
  save?: (offset: number) => Promise<void>;
  handle?: (update: { readonly updateId: number }) => Promise<void>;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  random?: () => number;
  answered?: (result: GetUpdatesResult) => void;
}

/** A poller on fakes: scripted polls, an offset store in memory, sleeps that take no time. */
function harness(options: Options) {
  const polls: (number | undefined)[] = [];
  const signals: AbortSignal[] = [];
  const sleeps: number[] = [];
  const handled: number[] = [];
  const saves: number[] = [];
  const lines: { level: LogLevel; fields: LogFields }[] = [];
  let reached = () => {};
  /** Resolves when a poll finds the script used up (the loop then waits in that poll). */
  const waiting = new Promise<void>((resolve) => (reached = resolve));
  const offsets: OffsetStore = {
    load: options.load ?? (() => Promise.resolve(undefined)),
    async save(offset) {
      saves.push(offset);
      await options.save?.(offset);
    },
  };
  const poller = new UpdatePoller({
    poll(offset, signal) {
      polls.push(offset);
      signals.push(signal);
      const next = options.script.shift();
      if (next !== undefined) return Promise.resolve(next);
      reached();
      return new Promise((resolve) => {
        const aborted = () => resolve({ ok: false, error: "aborted" });
        if (signal.aborted) aborted();
        else signal.addEventListener("abort", aborted, { once: true });
      });
    },
    parse: (result) => parseUpdates(result),
    async handle(update) {
      handled.push(update.updateId);
      await options.handle?.(update);
    },
    offsets,
    sleep(ms, signal) {
      sleeps.push(ms);
      return options.sleep?.(ms, signal) ?? Promise.resolve();
    },
    random: options.random ?? (() => 1),
    log: (level, fields) => lines.push({ level, fields }),
    ...(options.answered === undefined ? {} : { answered: options.answered }),
  });
  const events = () => lines.map((line) => line.fields.event);
  return { poller, polls, signals, sleeps, handled, saves, lines, events, waiting };
}

Deno.test("updates are handled in order and the offset moves past every one, junk included", async () => {
  const h = harness({
    script: [
      ok([
        command(10),
        { update_id: 11, edited_message: { text: "hello" } },
        { update_id: 12, callback_query: "junk" },
        { update_id: 13 },
      ]),
      ok([command(14)]),
    ],
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [10, 11, 12, 13, 14]);
  assert.deepEqual(h.saves, [11, 12, 13, 14, 15]);
  assert.deepEqual(h.polls, [undefined, 14, 15], "each poll confirms what was handled");
  assert.deepEqual(h.sleeps, [], "an answered poll is followed by the next at once");
  assert.deepEqual(h.lines, []);
  await h.poller.close();
});

Deno.test("polling starts at the saved offset", async () => {
  const h = harness({ script: [], load: () => Promise.resolve(40) });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.polls, [40]);
  await h.poller.close();
});

Deno.test("an update below the saved offset is skipped: it was handled before the restart", async () => {
  const h = harness({
    script: [ok([command(38), command(39), command(40), command(41)])],
    load: () => Promise.resolve(40),
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [40, 41]);
  assert.deepEqual(h.saves, [41, 42]);
  assert.deepEqual(h.polls, [40, 42]);
  await h.poller.close();
});

Deno.test("an update repeated in a later answer is not handled twice", async () => {
  const h = harness({ script: [ok([command(5)]), ok([command(5), command(6)])] });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [5, 6]);
  assert.deepEqual(h.saves, [6, 7]);
  await h.poller.close();
});

Deno.test("a handler that throws is logged update_failed and the offset still moves past it", async () => {
  const h = harness({
    script: [ok([command(10), command(11)])],
    handle(update) {
      if (update.updateId === 10) return Promise.reject(new Error("ledger write failed"));
      return Promise.resolve();
    },
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [10, 11]);
  assert.deepEqual(h.saves, [11, 12]);
  assert.deepEqual(h.polls, [undefined, 12]);
  assert.equal(h.lines.length, 1);
  assert.equal(h.lines[0]!.level, "error");
  assert.equal(h.lines[0]!.fields.event, "update_failed");
  assert.equal(h.lines[0]!.fields.update_id, 10);
  assert.match(String(h.lines[0]!.fields.error), /ledger write failed/);
  await h.poller.close();
});

Deno.test("a failure to save the offset is logged and polling goes on from the offset reached", async () => {
  const h = harness({
    script: [ok([command(10)]), ok([command(11)])],
    save: () => Promise.reject(new Deno.errors.PermissionDenied("read-only")),
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [10, 11]);
  assert.deepEqual(h.polls, [undefined, 11, 12], "the next poll confirms it to Telegram anyway");
  assert.deepEqual(h.events(), ["updates_offset_write_failed", "updates_offset_write_failed"]);
  assert.equal(h.lines[0]!.level, "error");
  await h.poller.close();
});

Deno.test("an offset that cannot be read is logged and polling starts without one", async () => {
  const h = harness({
    script: [ok([command(3)])],
    load: () => Promise.reject(new Deno.errors.PermissionDenied("no")),
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.polls, [undefined, 4]);
  assert.deepEqual(h.events(), ["updates_offset_read_failed"]);
  await h.poller.close();
});

Deno.test("a 409 from a webhook is said once with its fix, retried every CONFLICT_RETRY_MS, then resumes", async () => {
  const h = harness({ script: [WEBHOOK, WEBHOOK, WEBHOOK, ok([command(1)])] });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.sleeps, [CONFLICT_RETRY_MS, CONFLICT_RETRY_MS, CONFLICT_RETRY_MS]);
  assert.deepEqual(h.events(), ["updates_conflict", "updates_resumed"]);
  const conflict = h.lines[0]!;
  assert.equal(conflict.level, "error");
  assert.match(String(conflict.fields.hint), /deleteWebhook/);
  assert.match(String(conflict.fields.hint), /notifications still go out/);
  assert.doesNotMatch(JSON.stringify(conflict), /bot\d+:/, "no token in the hint");
  assert.deepEqual(h.lines[1], {
    level: "info",
    fields: { event: "updates_resumed", after: "conflict" },
  });
  assert.deepEqual(h.handled, [1]);
  assert.deepEqual(h.poller.health, POLLING);
  await h.poller.close();
});

Deno.test("a 409 from another poller names the other process, not the webhook", () => {
  const step = afterPollFailure(POLLING, OTHER_POLLER, () => 0.5);
  assert.deepEqual(step.health, { state: "conflict", cause: "poller" });
  assert.equal(step.waitMs, CONFLICT_RETRY_MS);
  assert.equal(step.log?.fields.event, "updates_conflict");
  assert.match(String(step.log?.fields.hint), /another process/);
  assert.doesNotMatch(String(step.log?.fields.hint), /deleteWebhook/);
  // The same conflict again is not said again; the other cause is.
  assert.equal(afterPollFailure(step.health, OTHER_POLLER, () => 0.5).log, undefined);
  const switched = afterPollFailure(step.health, WEBHOOK, () => 0.5);
  assert.deepEqual(switched.health, { state: "conflict", cause: "webhook" });
  assert.equal(switched.log?.fields.event, "updates_conflict");
});

Deno.test("the poll's health is conflict while the 409 lasts", async () => {
  const h = harness({ script: [WEBHOOK] });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.poller.health, { state: "conflict", cause: "webhook" });
  await h.poller.close();
});

Deno.test("other failures back off from 1 s, doubling to the cap, with jitter", () => {
  let health: PollHealth = POLLING;
  const waits: number[] = [];
  for (let i = 0; i < 10; i++) {
    const step = afterPollFailure(health, DOWN, () => 1);
    health = step.health;
    waits.push(step.waitMs);
  }
  assert.deepEqual(waits, [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000]);
  assert.deepEqual(health, { state: "failing", failures: 10 });
  assert.equal(POLL_RETRY_CAP_MS, 60000);
  // Jitter: between half the step and the whole of it.
  assert.equal(afterPollFailure(POLLING, DOWN, () => 0).waitMs, 500);
  assert.equal(afterPollFailure({ state: "failing", failures: 40 }, DOWN, () => 0).waitMs, 30000);
  assert.equal(
    afterPollFailure({ state: "failing", failures: 1000 }, DOWN, () => 1).waitMs,
    POLL_RETRY_CAP_MS,
  );
  const jittered = afterPollFailure({ state: "failing", failures: 2 }, DOWN, () => 0.5).waitMs;
  assert.equal(jittered, 3000);
});

Deno.test("a failing poll is said at the first failure and every tenth, not at each", () => {
  let health: PollHealth = POLLING;
  const said: number[] = [];
  for (let i = 1; i <= 25; i++) {
    const step = afterPollFailure(health, TIMEOUT, () => 0.5);
    health = step.health;
    if (step.log !== undefined) {
      said.push(i);
      assert.equal(step.log.level, "warn");
      assert.equal(step.log.fields.event, "updates_failed");
      assert.equal(step.log.fields.failures, i);
      assert.equal(step.log.fields.error, "timeout");
      assert.equal(step.log.fields.retry_in_s, Math.ceil(step.waitMs / 1000));
    }
  }
  assert.deepEqual(said, [1, 10, 20]);
});

Deno.test("failed polls back off in the loop, and a poll answered resets the back-off", async () => {
  const h = harness({ script: [DOWN, TIMEOUT, DOWN, ok([]), DOWN] });
  h.poller.start();
  await h.waiting;
  // (The answered poll brought nothing: it waits IDLE_POLL_MS before the next.)
  assert.deepEqual(h.sleeps, [1000, 2000, 4000, IDLE_POLL_MS, 1000]);
  assert.deepEqual(h.events(), ["updates_failed", "updates_resumed", "updates_failed"]);
  assert.deepEqual(h.lines[1]!.fields, { event: "updates_resumed", after: "failing" });
  assert.deepEqual(h.poller.health, { state: "failing", failures: 1 });
  assert.equal(h.polls.length, 6);
  await h.poller.close();
});

Deno.test("an answered poll while polling changes nothing and says nothing", () => {
  assert.deepEqual(afterPoll(POLLING), { health: POLLING, waitMs: 0 });
});

Deno.test("close() ends a poll in flight at once and the loop ends", async () => {
  const h = harness({ script: [ok([command(1)])] });
  h.poller.start();
  await h.waiting;
  const signal = h.signals.at(-1)!;
  assert.equal(signal.aborted, false);
  await h.poller.close();
  assert.equal(signal.aborted, true);
  assert.equal(h.polls.length, 2, "no poll after close");
  assert.deepEqual(h.sleeps, [], "no back-off for the aborted poll");
  assert.deepEqual(h.lines, [], "an aborted poll is not a failure");
  await h.poller.close(); // twice is fine
});

Deno.test("close() ends a back-off wait at once", async () => {
  let waitingSleep = () => {};
  const inSleep = new Promise<void>((resolve) => (waitingSleep = resolve));
  const h = harness({
    script: [DOWN, ok([command(1)])],
    sleep: (_ms, signal) =>
      new Promise<void>((resolve) => {
        waitingSleep();
        signal.addEventListener("abort", () => resolve(), { once: true });
      }),
  });
  h.poller.start();
  await inSleep;
  await h.poller.close();
  assert.deepEqual(h.polls, [undefined], "no poll after the wait was ended");
  assert.deepEqual(h.handled, []);
});

Deno.test("a close while an update is handled waits for it, handles no more, and confirms none of them: the next start handles it again", async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let entered = () => {};
  const inHandler = new Promise<void>((resolve) => (entered = resolve));
  const h = harness({
    script: [ok([command(7), command(8)])],
    handle: async (update) => {
      if (update.updateId === 7) {
        entered();
        await held;
      }
    },
  });
  h.poller.start();
  await inHandler;
  let closed = false;
  const closing = h.poller.close().then(() => (closed = true));
  await new Promise((resolve) => setTimeout(resolve, 0)); // every pending callback runs
  assert.equal(closed, false, "close waits for the update being handled");
  release();
  await closing;
  assert.deepEqual(h.handled, [7], "update 8 is left for the next run");
  // Its answers may not have gone out (the queue was closing): handled again at the next start.
  assert.deepEqual(h.saves, [], "update 7 is not confirmed");
  assert.deepEqual(h.polls, [undefined]);
});

Deno.test("a poller closed before it starts never polls", async () => {
  const h = harness({ script: [ok([command(1)])] });
  await h.poller.close();
  h.poller.start();
  await new Promise((resolve) => setTimeout(resolve, 0)); // every pending callback runs
  assert.deepEqual(h.polls, []);
  assert.deepEqual(h.handled, []);
});

Deno.test("a poll answered at once with nothing new waits before the next: never a busy loop", async () => {
  // A broken proxy or a hostile API answering every getUpdates at once, with nothing, with junk
  // ids (skipped by the reader), or with updates handled before.
  const h = harness({
    script: [
      ok([]),
      ok([{ update_id: -5 }, { update_id: 2 ** 60 }]),
      ok([command(3)]),
      ok([command(3)]),
    ],
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [3]);
  assert.deepEqual(h.sleeps, [IDLE_POLL_MS, IDLE_POLL_MS, IDLE_POLL_MS]);
  await h.poller.close();
});

Deno.test("update ids that start again lower (Telegram after a week without updates) are handled, said once", async () => {
  const h = harness({ script: [ok([command(900_000_001)]), ok([command(12_345)])] });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [900_000_001, 12_345]);
  assert.deepEqual(h.saves, [900_000_002, 12_346]);
  assert.deepEqual(h.events(), ["updates_offset_reset"]);
  await h.poller.close();
});

Deno.test("an update whose effect could not be saved is not confirmed: the offset stays before it, and it and the ones after are handled again", async () => {
  let failures = 1;
  const h = harness({
    script: [ok([command(10), command(11), command(12)]), ok([command(11), command(12)])],
    handle(update) {
      if (update.updateId === 11 && failures-- > 0) {
        return Promise.reject(new UpdateNotSaved(11, new Error("ENOSPC")));
      }
      return Promise.resolve();
    },
  });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(h.handled, [10, 11, 11, 12], "12 waits for 11, which is handled again");
  assert.deepEqual(h.saves, [11, 12, 13], "never past 11 before it was saved");
  assert.deepEqual(h.polls, [undefined, 11, 13]);
  assert.deepEqual(h.sleeps, [NOT_SAVED_RETRY_MS], "not at once: a full disk needs a moment");
  assert.deepEqual(h.events(), ["update_not_saved"]);
  await h.poller.close();
});

Deno.test("each poll's answer is told as it comes, a refused token included (delivery's health hears it at once)", async () => {
  const REFUSED: Failure = { ok: false, error: "401 Unauthorized", errorCode: 401 };
  const told: GetUpdatesResult[] = [];
  const h = harness({ script: [REFUSED, ok([command(5)]), DOWN], answered: (r) => told.push(r) });
  h.poller.start();
  await h.waiting;
  assert.deepEqual(told.map((result) => result.ok ? "ok" : result.error), [
    "401 Unauthorized",
    "ok",
    "502 Bad Gateway",
  ]);
  await h.poller.close();
  // The poll a close aborted is not told.
  assert.equal(told.length, 3);
});
