/**
 * Sends the waiting replies, one at a time, oldest due first: a small state machine (`idle`,
 * `sending` one reply, `waiting` for the next try's timer, `closed`) on an injected clock and
 * an injected transport. A failed try is retried with back-off (lib/common/retry_schedule.ts),
 * across restarts (the store keeps the replies); a recipient or message refused for good (5xx) is
 * given up at once, and any reply still unsent `maxAgeMs` (`DELIVERY_MAX_AGE`) after it was
 * accepted is given up. Each outcome is told once to `onOutcome` (the chat's answer): `sent`,
 * `waiting` (the first failure only), `given_up`. Logs: `reply_sent`, `reply_retry`,
 * `reply_given_up`, with reply and submission ids only.
 *
 * @module
 */
import { retryDelayMs } from "../common/retry_schedule.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { describeError, type Logger } from "../log/logger.ts";
import type { SendMailOptions } from "nodemailer";
import { composeReply, type ReplySettings } from "./message.ts";
import { maskAddress } from "./recipient.ts";
import type { PendingReply, ReplyStore } from "./reply_store.ts";
import { classifySendError } from "./send_error.ts";

/** The clock and timers (the shape of lib/delivery/queue.ts's `DeliveryClock`). */
export interface MailClock {
  /** Monotonic milliseconds: back-off. */
  now(): number;
  /** Wall-clock milliseconds since the epoch: ages, timestamps. */
  wallNow(): number;
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** Sends one message; rejects on failure (ideally with a `MailSendError`). */
export interface MailTransport {
  send(message: SendMailOptions): Promise<void>;
}

/** What became of a reply, for the chat. */
export type ReplyOutcome =
  | { readonly kind: "sent"; readonly to: string }
  | { readonly kind: "waiting"; readonly reason: string }
  | { readonly kind: "given_up"; readonly reason: string };

/** The reason given when a reply was not sent within `DELIVERY_MAX_AGE`. */
export const TOO_OLD_REASON = "not sent within DELIVERY_MAX_AGE";

/** How long {@linkcode ReplySender.close} waits at most for a send under way (ms). */
export const CLOSE_WAIT_MS = 15_000;

/** What {@linkcode startReplySender} needs. */
export interface ReplySenderOptions {
  readonly store: Pick<ReplyStore, "pending" | "failed" | "done">;
  readonly transport: MailTransport;
  readonly settings: ReplySettings;
  readonly clock: MailClock;
  /** In [0, 1): the back-off's jitter. */
  readonly random: () => number;
  /** `DELIVERY_MAX_AGE` in ms. */
  readonly maxAgeMs: number;
  readonly log: Logger;
  /** Told each outcome once; must not throw (a throw is logged). */
  readonly onOutcome: (reply: PendingReply, outcome: ReplyOutcome) => void;
}

/** The sender's state. */
export type ReplySenderState =
  | { readonly kind: "idle" }
  | { readonly kind: "sending"; readonly id: string; readonly done: Promise<void> }
  | { readonly kind: "waiting"; readonly until: number; readonly timer: unknown }
  | { readonly kind: "closed" };

/** The running sender. */
export interface ReplySender {
  /** Looks at the store again now (after an `add`). */
  wake(): void;
  /** Its state, for tests and `/status`. */
  state(): ReplySenderState["kind"];
  /** Stops: no new try; waits for a send under way at most {@linkcode CLOSE_WAIT_MS}. Later calls wait too. */
  close(): Promise<void>;
}

/** Starts sending the store's waiting replies (those left from before a restart first). */
export function startReplySender(options: ReplySenderOptions): ReplySender {
  const { store, clock, log } = options;
  /** Monotonic time of each reply's next try (absent: due now). */
  const nextTry = new Map<string, number>();
  /** Sent or given up, though the store could not record it: never tried again by this run. */
  const finished = new Set<string>();
  let state: ReplySenderState = { kind: "idle" };

  const tell = (reply: PendingReply, outcome: ReplyOutcome) => _tell(options, reply, outcome);
  const record = (what: string, reply: PendingReply, write: () => Promise<void>) =>
    _record(log, what, reply, write);

  const giveUp = async (reply: PendingReply, reason: string) => {
    finished.add(reply.id);
    nextTry.delete(reply.id);
    log("warn", {
      event: "reply_given_up",
      reply: reply.id,
      submission: reply.submission,
      attempts: reply.attempts,
      reason,
    });
    await record("done", reply, () => store.done(reply.id, _ts(clock), "given_up", reason));
    tell(reply, { kind: "given_up", reason });
  };

  const attempt = async (reply: PendingReply) => {
    try {
      await options.transport.send(composeReply(options.settings, reply.draft));
    } catch (thrown) {
      const error = classifySendError(thrown);
      if (error.kind === "permanent") return await giveUp(reply, error.reason);
      const attempts = reply.attempts + 1;
      const delayMs = Math.round(retryDelayMs(attempts, options.random));
      nextTry.set(reply.id, clock.now() + delayMs);
      log("warn", {
        event: "reply_retry",
        reply: reply.id,
        submission: reply.submission,
        attempts,
        delay_ms: delayMs,
        reason: error.reason,
      });
      await record("failed", reply, () => store.failed(reply.id, _ts(clock), error.reason));
      if (reply.attempts === 0) tell(reply, { kind: "waiting", reason: error.reason });
      return;
    }
    finished.add(reply.id);
    nextTry.delete(reply.id);
    log("info", {
      event: "reply_sent",
      reply: reply.id,
      submission: reply.submission,
      attempts: reply.attempts + 1,
    });
    await record("done", reply, () => store.done(reply.id, _ts(clock), "sent"));
    tell(reply, { kind: "sent", to: maskAddress(reply.draft.to) });
  };

  const pump = async (): Promise<void> => {
    while (state.kind === "idle") {
      const waiting = store.pending().filter((reply) => !finished.has(reply.id));
      const now = clock.now();
      const step = nextStep(waiting, nextTry, now, clock.wallNow(), options.maxAgeMs);
      if (step.kind === "give_up") {
        await giveUp(step.reply, TOO_OLD_REASON);
        continue;
      }
      if (step.kind === "none") return;
      if (step.kind === "wait") {
        const { until } = step;
        const timer = clock.setTimer(() => {
          if (state.kind !== "waiting") return;
          state = { kind: "idle" };
          run();
        }, until - now);
        state = { kind: "waiting", until, timer };
        return;
      }
      const done = attempt(step.reply);
      state = { kind: "sending", id: step.reply.id, done };
      await done;
      // close() may have run meanwhile.
      if ((state as ReplySenderState).kind === "closed") return;
      state = { kind: "idle" };
    }
  };

  const run = () => {
    pump().catch((error) => {
      log("error", { event: "reply_sender_failed", error: describeError(error) });
      if (state.kind !== "closed") state = { kind: "idle" };
    });
  };

  run();
  let closing: Promise<void> | undefined;
  return {
    wake() {
      if (state.kind === "waiting") {
        clock.clearTimer(state.timer);
        state = { kind: "idle" };
      }
      if (state.kind === "idle") run();
    },
    state: () => state.kind,
    close() {
      // Once: a second close waits for the same send as the first.
      closing ??= (async () => {
        const before = state;
        state = { kind: "closed" };
        if (before.kind === "waiting") clock.clearTimer(before.timer);
        if (before.kind === "sending") await _atMost(clock, before.done, CLOSE_WAIT_MS);
      })();
      return closing;
    },
  };
}

/** What the sender does next with the replies `waiting`. */
export type NextStep =
  | { readonly kind: "give_up"; readonly reply: PendingReply }
  | { readonly kind: "send"; readonly reply: PendingReply }
  | { readonly kind: "wait"; readonly until: number }
  | { readonly kind: "none" };

/**
 * The sender's next step: give up a reply older than `maxAgeMs` (by its `ts` at `wallNow`), send
 * one whose next try (`nextTry`, monotonic; absent: due) has come, else wait until the next try
 * or the moment a reply becomes too old, whichever is first; nothing when none waits.
 */
export function nextStep(
  waiting: readonly PendingReply[],
  nextTry: ReadonlyMap<string, number>,
  now: number,
  wallNow: number,
  maxAgeMs: number,
): NextStep {
  const old = waiting.find((reply) => wallNow - Date.parse(reply.ts) > maxAgeMs);
  if (old !== undefined) return { kind: "give_up", reply: old };
  const due = waiting.find((reply) => (nextTry.get(reply.id) ?? now) <= now);
  if (due !== undefined) return { kind: "send", reply: due };
  if (waiting.length === 0) return { kind: "none" };
  const times = waiting.flatMap((reply) => [
    nextTry.get(reply.id)!,
    now + Date.parse(reply.ts) + maxAgeMs - wallNow + 1,
  ]);
  return { kind: "wait", until: Math.min(...times) };
}

/** Tells `onOutcome`; a throw is logged (`reply_outcome_failed`). */
function _tell(options: ReplySenderOptions, reply: PendingReply, outcome: ReplyOutcome): void {
  try {
    options.onOutcome(reply, outcome);
  } catch (error) {
    options.log("error", {
      event: "reply_outcome_failed",
      reply: reply.id,
      error: describeError(error),
    });
  }
}

/** Runs a store write; a failure is logged (`reply_store_failed`), never thrown. */
async function _record(
  log: ReplySenderOptions["log"],
  what: string,
  reply: PendingReply,
  write: () => Promise<void>,
): Promise<void> {
  try {
    await write();
  } catch (error) {
    log("error", {
      event: "reply_store_failed",
      reply: reply.id,
      submission: reply.submission,
      op: what,
      error: describeError(error),
    });
  }
}

/** Waits for `done`, at most `ms`. */
async function _atMost(clock: MailClock, done: Promise<void>, ms: number): Promise<void> {
  let timer: unknown;
  const bound = new Promise<void>((resolve) => {
    timer = clock.setTimer(resolve, ms);
  });
  await Promise.race([done, bound]);
  clock.clearTimer(timer);
}

function _ts(clock: MailClock): string {
  return formatTimestamp(new Date(clock.wallNow()));
}
