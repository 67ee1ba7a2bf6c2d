/**
 * The bot's one send queue: every notification goes through it, paced under Telegram's limits
 * (lib/delivery/pacer.ts), one message at a time. Two lanes share it:
 *
 * - **callers**: new submissions whose sender waits for the answer (at most `waitMs`). They go
 *   first, in arrival order, so a sender never waits behind a backlog.
 * - **backlog**: everything else in the outbox that is not delivered yet (it failed before, its
 *   sender was already answered, or it was left by an earlier run), oldest first. While callers
 *   wait, every fourth send is still a backlog one, so old submissions never starve.
 *
 * A `429` pauses everything for its `retry_after` (at most an hour). Any other failure schedules
 * the submission's next try with exponential back-off and jitter (lib/delivery/retry_schedule.ts), and
 * backs the queue off as a whole for as long as the failures have lasted (an outage is tried now
 * and then, not once per submission); the first success ends that. Once two sends in a row have
 * failed, new senders are answered at once ("queued") while it is backed off: their submissions
 * join the backlog, oldest first.
 * Failures that only the operator can fix (lib/bot/api.ts `failureKind` "settings") pause the
 * backlog until a send succeeds or contactd restarts; new submissions still try once each.
 * Submissions older than `maxAgeMs` are given up.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import { notificationParts } from "../bot/notification.ts";
import type { OutboxEntry, OutboxSubmission } from "../storage/outbox.ts";
import type { Pacer } from "./pacer.ts";
import { outageDelayMs, retryDelayMs } from "./retry_schedule.ts";
import { type BotApiResult, failureKind, floodPause } from "../bot/api.ts";

/** What the queue needs of the outbox (lib/storage/outbox.ts). */
export interface DeliveryStore {
  /** Entries that are pending or lack their backup record, oldest first. */
  entries(): IterableIterator<OutboxEntry>;
  /** The submission's text. */
  read(id: string): Promise<OutboxSubmission>;
  /** Notes a failed attempt (updates the entry's `attempts`, `firstError`, `lastError`). */
  failed(id: string, ts: string, error: string): Promise<void>;
  /** Notes that it reached the chat or was given up; it is pending no more at once. */
  done(id: string, ts: string, result: "delivered" | "given_up"): Promise<void>;
}

/** Time, as the queue reads and waits for it. */
export interface DeliveryClock {
  /** A monotonic clock in milliseconds (`performance.now`): pacing, deadlines, back-off. */
  now(): number;
  /** The wall clock in milliseconds since the epoch (`Date.now`): ages and timestamps. */
  wallNow(): number;
  /** Calls `fn` after `ms`; returns a handle for {@linkcode DeliveryClock.clearTimer}. */
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
}

/** What a {@linkcode DeliveryQueue} works with. */
export interface DeliveryDeps {
  /** The chat every notification goes to (negative for groups). */
  readonly chatId: number;
  /** One `sendMessage` of `text` to the chat (lib/bot/api.ts `sendMessage`). */
  readonly send: (text: string) => Promise<BotApiResult>;
  readonly store: DeliveryStore;
  readonly pacer: Pacer;
  readonly clock: DeliveryClock;
  /** A number in [0, 1), for the back-off's jitter. */
  readonly random: () => number;
  readonly log: Logger;
  /** How long a sender waits for its own delivery (`DELIVERY_WAIT_MS`). */
  readonly waitMs: number;
  /** Submissions older than this are given up (`DELIVERY_MAX_AGE`). */
  readonly maxAgeMs: number;
}

/** A sender's delivery, as far as it got within the wait. */
export type DeliveryOutcome =
  | { readonly ok: true }
  | {
    readonly ok: false;
    /** Short reason for the record's `messenger_error`, without secrets. */
    readonly error: string;
  };

/** While callers wait, this many of their sends go before one backlog send. */
const CALLER_SENDS_PER_BACKLOG_SEND = 3;

/** Failed sends in a row that make an outage: new senders are then answered at once. */
const OUTAGE_AFTER_FAILURES = 2;

/** A new submission and its waiting sender. */
interface CallerJob {
  readonly submission: OutboxSubmission;
  /** In the outbox (redelivered if it fails); otherwise it is tried once and forgotten. */
  readonly durable: boolean;
  readonly parts: string[];
  sent: number;
  readonly deadline: number;
  /** Answers the sender; `undefined` once answered. */
  answer: ((outcome: DeliveryOutcome) => void) | undefined;
  timer: unknown;
}

/** A backlog submission partly sent in this run: its parts, and how many went. */
interface Progress {
  readonly parts: string[];
  sent: number;
}

/** What to send next, or until when there is nothing to send. */
type Pick =
  | { readonly kind: "caller"; readonly job: CallerJob }
  | { readonly kind: "backlog"; readonly entry: OutboxEntry }
  | { readonly kind: "wait"; readonly until: number };

/** The queue; see the module documentation. */
export class DeliveryQueue {
  readonly #deps: DeliveryDeps;
  #callers: CallerJob[] = [];
  readonly #callerIds = new Set<string>();
  readonly #progress = new Map<string, Progress>();
  /** Per backlog submission that failed in this run: the earliest time to try it again. */
  readonly #nextAt = new Map<string, number>();
  /** When the current run of failures began (`undefined` after a success). */
  #outageSince: number | undefined;
  #backlogResumeAt = -Infinity;
  /** Why the backlog is paused until a send succeeds (a settings problem), if it is. */
  #settingsProblem: string | undefined;
  /** The last failure's reason, and how many sends failed in a row. */
  #lastError = "";
  #failuresInRow = 0;
  #inFlight: string | undefined;
  #callerStreak = 0;
  #closed = false;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  /** A queue over `deps`; call {@linkcode DeliveryQueue.start} to begin sending. */
  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
  }

  /** Starts the send loop (the backlog of earlier runs is sent from now on). */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Resolves once the send loop has ended after {@linkcode DeliveryQueue.close}. */
  get stopped(): Promise<void> {
    return this.#loop ?? Promise.resolve();
  }

  /** Whether the backlog is paused by a settings problem (its reason), for tests and logs. */
  get settingsProblem(): string | undefined {
    return this.#settingsProblem;
  }

  /**
   * Queues a new submission and resolves with its outcome within `waitMs`: delivered, or why not
   * (failed, or still queued at the deadline: then it stays queued if `durable`). When the queue
   * can tell at once that it cannot be sent in time (a pause, or too many ahead), it answers at
   * once.
   */
  submit(submission: OutboxSubmission, durable: boolean): Promise<DeliveryOutcome> {
    if (this.#closed) return Promise.resolve({ ok: false, error: "queued: contactd is stopping" });
    const now = this.#deps.clock.now();
    return new Promise<DeliveryOutcome>((resolve) => {
      const job: CallerJob = {
        submission,
        durable,
        parts: notificationParts(submission),
        sent: 0,
        deadline: now + this.#deps.waitMs,
        answer: resolve,
        timer: undefined,
      };
      this.#callers.push(job);
      if (durable) this.#callerIds.add(submission.id);
      job.timer = this.#deps.clock.setTimer(() => {
        job.timer = undefined;
        const seconds = Math.round(this.#deps.waitMs / 1000);
        this.#release(job, `queued: not sent within ${seconds} s`);
      }, this.#deps.waitMs);
      this.#reviewCallers(now);
      this.#wake?.();
    });
  }

  /**
   * Answers every waiting sender (their submissions stay in the outbox for the next start) and
   * ends the send loop without waiting for a call in flight.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const job of [...this.#callers]) this.#release(job, "queued: contactd is stopping");
    this.#callers = [];
    this.#wake?.();
  }

  async #run(): Promise<void> {
    const { clock, pacer, chatId, log } = this.#deps;
    while (!this.#closed) {
      try {
        const now = clock.now();
        const pick = this.#pick(now);
        if (pick.kind === "wait") {
          await this.#sleep(pick.until);
          continue;
        }
        const ready = pacer.readyAt(chatId, now);
        if (ready > now) {
          await this.#sleep(ready);
          continue;
        }
        if (pick.kind === "caller") {
          this.#callerStreak++;
          await this.#sendCaller(pick.job);
        } else {
          this.#callerStreak = 0;
          await this.#sendBacklog(pick.entry);
        }
      } catch (error) {
        // A bug or a failing outbox: say so, and do not spin.
        log("error", { event: "delivery_error", error: String(error).slice(0, 200) });
        await this.#sleep(clock.now() + 1000);
      }
    }
  }

  #pick(now: number): Pick {
    const first = this.#callers[0];
    if (first !== undefined && this.#callerStreak < CALLER_SENDS_PER_BACKLOG_SEND) {
      return { kind: "caller", job: first };
    }
    // The backlog's share while callers wait goes to submissions older than theirs.
    const backlog = this.#dueBacklog(now, first?.submission.id);
    if ("entry" in backlog) return { kind: "backlog", entry: backlog.entry };
    if (first !== undefined) return { kind: "caller", job: first };
    return { kind: "wait", until: backlog.until };
  }

  /** The oldest backlog entry due now (received before `stopAt`), or when the next one is. */
  #dueBacklog(now: number, stopAt?: string): { entry: OutboxEntry } | { until: number } {
    if (this.#settingsProblem !== undefined) return { until: Infinity };
    if (now < this.#backlogResumeAt) return { until: this.#backlogResumeAt };
    let until = Infinity;
    for (const entry of this.#deps.store.entries()) {
      if (entry.id === stopAt) break;
      if (entry.done || this.#callerIds.has(entry.id) || entry.id === this.#inFlight) continue;
      const at = this.#nextAt.get(entry.id) ?? -Infinity;
      if (at <= now) return { entry };
      until = Math.min(until, at);
    }
    return { until };
  }

  async #sendCaller(job: CallerJob): Promise<void> {
    const result = await this.#sendPart(job.submission.id, job.parts[job.sent]!);
    if (result.ok) {
      job.sent++;
      if (job.sent < job.parts.length) {
        // The next part in the next turn; a sender answered meanwhile leaves the callers' lane.
        if (job.answer === undefined) this.#toBacklog(job);
        return;
      }
      this.#removeCaller(job);
      // The sender first: the outbox's note may follow (a crash in between sends it again).
      job.answer?.({ ok: true });
      job.answer = undefined;
      if (job.durable) await this.#done(job.submission.id, "delivered");
      return;
    }
    if (this.#closed) return;
    if (failureKind(result) === "flood") {
      this.#flood(result);
      // The same part goes again once the pause is over.
      if (job.answer === undefined) this.#toBacklog(job);
      return;
    }
    const error = result.error;
    this.#removeCaller(job);
    // The sender first: noting the failure writes to the outbox, which may fail too.
    job.answer?.({ ok: false, error });
    job.answer = undefined;
    if (job.durable) {
      if (job.sent > 0) this.#progress.set(job.submission.id, { parts: job.parts, sent: job.sent });
      await this.#failed(job.submission.id, result, 1);
    } else {
      this.#afterFailure(result);
      this.#deps.log("warn", { event: "delivery_failed", id: job.submission.id, error });
    }
  }

  async #sendBacklog(entry: OutboxEntry): Promise<void> {
    const { store, clock, maxAgeMs, log } = this.#deps;
    const id = entry.id;
    const age = clock.wallNow() - Date.parse(entry.ts);
    if (age > maxAgeMs) {
      await this.#done(id, "given_up");
      log("warn", {
        event: "delivery_given_up",
        id,
        attempts: entry.attempts,
        age_s: Math.round(age / 1000),
        last_error: entry.lastError,
      });
      return;
    }
    let progress = this.#progress.get(id);
    if (progress === undefined) {
      let submission: OutboxSubmission;
      try {
        submission = await store.read(id);
      } catch (error) {
        // Its line cannot be read back (a damaged file): nothing to send, and retrying it would
        // hold up everything behind it.
        await this.#done(id, "given_up");
        log("error", {
          event: "delivery_given_up",
          id,
          attempts: entry.attempts,
          reason: "unreadable",
          error: String(error).slice(0, 200),
        });
        return;
      }
      progress = {
        parts: notificationParts({
          ...submission,
          // No status yet: its sender was answered by this run (502), the record is on its way.
          late: {
            firstError: entry.firstError,
            answered: entry.status === undefined ? 502 : entry.status,
          },
        }),
        sent: 0,
      };
      this.#progress.set(id, progress);
    }
    const result = await this.#sendPart(id, progress.parts[progress.sent]!);
    if (result.ok) {
      progress.sent++;
      if (progress.sent < progress.parts.length) return;
      this.#forget(id);
      await this.#done(id, "delivered");
      log("info", { event: "delivered", id, attempts: entry.attempts, late: true });
      return;
    }
    if (this.#closed) return;
    if (failureKind(result) === "flood") {
      this.#flood(result);
      return;
    }
    await this.#failed(id, result, entry.attempts + 1);
  }

  /** Sends one part, counting it with the pacer; a success lifts back-off and settings pause. */
  async #sendPart(id: string, text: string): Promise<BotApiResult> {
    const { pacer, chatId, clock, send, log } = this.#deps;
    this.#inFlight = id;
    pacer.sent(chatId, clock.now());
    let result: BotApiResult;
    try {
      result = await send(text);
    } finally {
      this.#inFlight = undefined;
    }
    if (result.ok) {
      this.#outageSince = undefined;
      this.#lastError = "";
      this.#failuresInRow = 0;
      this.#backlogResumeAt = -Infinity;
      if (this.#settingsProblem !== undefined) {
        this.#settingsProblem = undefined;
        log("info", { event: "delivery_resumed" });
      }
    }
    return result;
  }

  /** A `429`: nothing goes before its `retry_after`; senders who cannot wait that long are answered. */
  #flood(result: BotApiResult & { ok: false }): void {
    const { pacer, clock, log } = this.#deps;
    const now = clock.now();
    const { seconds, adjusted } = floodPause(result.parameters);
    if (adjusted !== undefined) {
      log("warn", {
        event: "retry_after_adjusted",
        reason: {
          capped: "longer than an hour",
          absurd: "longer than a day",
          missing: "missing or malformed",
        }[adjusted],
        pause_s: seconds,
      });
    }
    const until = now + seconds * 1000;
    if (until > pacer.pausedUntil) {
      log("warn", { event: "delivery_paused", reason: "flood control", retry_after_s: seconds });
    }
    pacer.pause(until);
    this.#reviewCallers(now);
  }

  /** A failed attempt of a submission in the outbox: noted, and its next try scheduled. */
  async #failed(id: string, result: BotApiResult & { ok: false }, attempts: number): Promise<void> {
    const { clock, random, log } = this.#deps;
    const now = clock.now();
    this.#nextAt.set(id, now + retryDelayMs(attempts, random));
    this.#afterFailure(result);
    const retryIn = Math.max(this.#nextAt.get(id)!, this.#backlogResumeAt) - now;
    log("warn", {
      event: "delivery_retry",
      id,
      attempts,
      error: result.error,
      retry_in_s: this.#settingsProblem === undefined ? Math.ceil(retryIn / 1000) : null,
    });
    try {
      await this.#deps.store.failed(id, this.#wallTs(), result.error);
    } catch (error) {
      // Only the count of attempts is lost: the submission stays pending.
      log("error", { event: "outbox_write_failed", id, error: String(error).slice(0, 200) });
    }
  }

  /** The backlog's back-off and pause after any failed attempt. */
  #afterFailure(result: BotApiResult & { ok: false }): void {
    const { clock, random, log } = this.#deps;
    const now = clock.now();
    this.#outageSince ??= now;
    this.#backlogResumeAt = now + outageDelayMs(now - this.#outageSince, random);
    this.#lastError = result.error;
    this.#failuresInRow++;
    const migrated = result.parameters?.migrate_to_chat_id;
    if (migrated !== undefined) {
      log("warn", {
        event: "chat_migrated",
        hint: "set MESSENGER_CHAT_ID to new_chat_id",
        new_chat_id: migrated,
      });
    }
    if (failureKind(result) === "settings" && this.#settingsProblem === undefined) {
      this.#settingsProblem = result.error;
      log("error", {
        event: "delivery_paused",
        reason: result.error,
        hint: settingsHint(result),
      });
    }
    this.#reviewCallers(now);
  }

  /**
   * Until when an outage backs everything off (`undefined` when none does now). One failure may
   * be a blip: the next sender is still tried; after two in a row it is an outage. A settings
   * problem is not one: new submissions still try once each then.
   */
  #outageUntil(now: number): number | undefined {
    const outage = this.#failuresInRow >= OUTAGE_AFTER_FAILURES && now < this.#backlogResumeAt;
    return outage && this.#settingsProblem === undefined ? this.#backlogResumeAt : undefined;
  }

  /**
   * Answers senders whose submission cannot go before their deadline (behind a pause, or too
   * many ahead): waiting would only delay a known outcome. Their submissions join the backlog.
   */
  #reviewCallers(now: number): void {
    const { pacer, chatId } = this.#deps;
    const outage = this.#outageUntil(now);
    let ahead = 0;
    for (const job of [...this.#callers]) {
      if (outage !== undefined) {
        // Behind failing tries a sender would only wait for the same failure.
        if (job.answer === undefined || this.#inFlight === job.submission.id) continue;
        const seconds = Math.ceil((outage - now) / 1000);
        // (lib/bot/api.ts keeps every error reason on one short line.)
        this.#release(job, `queued: ${this.#lastError}, next try in ${seconds} s`);
        continue;
      }
      const remaining = job.parts.length - job.sent;
      const at = pacer.readyAfter(chatId, ahead + remaining, now);
      if (at > job.deadline && job.answer !== undefined) {
        const paused = pacer.pausedUntil > now;
        this.#release(
          job,
          paused
            ? `queued: flood control, retry after ${Math.ceil((pacer.pausedUntil - now) / 1000)} s`
            : `queued: ${this.#callers.indexOf(job)} messages ahead`,
        );
        continue;
      }
      ahead += remaining;
    }
  }

  /** Answers a waiting sender with "queued"; a durable submission moves to the backlog. */
  #release(job: CallerJob, error: string): void {
    if (job.timer !== undefined) this.#deps.clock.clearTimer(job.timer);
    job.timer = undefined;
    const answer = job.answer;
    job.answer = undefined;
    // A part in flight finishes: the job leaves the callers' lane when that call returns.
    if (this.#inFlight !== job.submission.id) this.#toBacklog(job);
    answer?.({ ok: false, error });
  }

  /** A caller job whose sender was answered: a durable one goes on in the backlog. */
  #toBacklog(job: CallerJob): void {
    this.#removeCaller(job);
    if (job.durable && job.sent > 0) {
      this.#progress.set(job.submission.id, { parts: job.parts, sent: job.sent });
    }
  }

  #removeCaller(job: CallerJob): void {
    const index = this.#callers.indexOf(job);
    if (index >= 0) this.#callers.splice(index, 1);
    this.#callerIds.delete(job.submission.id);
    if (job.timer !== undefined) this.#deps.clock.clearTimer(job.timer);
    job.timer = undefined;
  }

  async #done(id: string, result: "delivered" | "given_up"): Promise<void> {
    this.#forget(id);
    try {
      await this.#deps.store.done(id, this.#wallTs(), result);
    } catch (error) {
      // Delivered, but the outbox could not say so: the next start sends it again (at least once).
      this.#deps.log("error", { event: "outbox_write_failed", error: String(error).slice(0, 200) });
    }
  }

  #forget(id: string): void {
    this.#progress.delete(id);
    this.#nextAt.delete(id);
  }

  #wallTs(): string {
    return new Date(this.#deps.clock.wallNow()).toISOString().slice(0, 19) + "Z";
  }

  /** Waits until `until` (monotonic) or until woken (a new submission, close). */
  #sleep(until: number): Promise<void> {
    const { clock } = this.#deps;
    return new Promise<void>((resolve) => {
      let timer: unknown;
      const wake = () => {
        if (timer !== undefined) clock.clearTimer(timer);
        this.#wake = undefined;
        resolve();
      };
      this.#wake = wake;
      if (this.#closed) return wake();
      if (until !== Infinity) timer = clock.setTimer(wake, Math.max(0, until - clock.now()));
    });
  }
}

/** What the operator should do about a settings problem. */
function settingsHint(result: BotApiResult & { ok: false }): string {
  const code = result.errorCode;
  if (code === 401 || code === 404) {
    return "the bot token is wrong or revoked: set MESSENGER_BOT_TOKEN (ask @BotFather)";
  }
  if (code === 403) {
    return "the bot may not write to the chat (blocked, or removed from the group): unblock or re-add it";
  }
  if (result.parameters?.migrate_to_chat_id !== undefined) {
    return "the group became a supergroup: set MESSENGER_CHAT_ID to new_chat_id";
  }
  return "check MESSENGER_CHAT_ID (contactd chat-id lists the chats that wrote to the bot)";
}
