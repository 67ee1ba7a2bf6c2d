/**
 * The bot's one send queue: every notification goes through it, paced under Telegram's limits
 * (lib/delivery/pacer.ts), one message at a time. Two lanes share it:
 *
 * - **callers**: new submissions whose sender waits for the answer (at most `waitMs`; each a
 *   waiting/answered state, lib/delivery/_waiter.ts). They go first, in arrival order, so a
 *   sender never waits behind a backlog.
 * - **backlog**: everything else in the outbox that is not delivered yet (it failed before, its
 *   sender was already answered, or it was left by an earlier run), oldest first. While callers
 *   wait, every fourth send is still a backlog one, so old submissions never starve.
 *
 * What a failure means is decided apart from the send loop:
 *
 * - a `429` pauses everything for its `retry_after` (at most an hour; the pacer keeps it);
 * - a `400` that belongs to the message (lib/bot/api.ts `failureKind` "message": too long, empty,
 *   entities) is that message's alone: its next try is a short notice without the sender's text
 *   (lib/bot/notification.ts `refusedNotice`), and if that is refused too it is given up; the
 *   others go on as if nothing happened;
 * - anything else changes the queue's health (lib/delivery/health.ts: an outage backs the backlog
 *   off as a whole, a settings problem pauses it until a send succeeds), and schedules the
 *   submission's next try with exponential back-off and jitter (lib/common/retry_schedule.ts).
 *
 * Submissions older than `maxAgeMs` are given up; their ages survive clock steps
 * (lib/delivery/_ages.ts). {@linkcode DeliveryQueue.close} answers the waiting senders and waits,
 * for a bounded time, for a call already in flight, so its real outcome is answered and recorded.
 *
 * @module
 */
import { formSettingName } from "../config/config.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { notificationParts, refusedNotice } from "../bot/notification.ts";
import { looksLikeSpam } from "../learn/classifier.ts";
import { type OutboxEntry, OutboxEntryDamaged, type OutboxSubmission } from "../storage/outbox.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import type { Pacer } from "./pacer.ts";
import { retryDelayMs } from "../common/retry_schedule.ts";
import {
  type BotApiResult,
  failureKind,
  floodPause,
  isTokenRefused,
  messageIdOf,
  TOKEN_REFUSED_HINT,
} from "../bot/api.ts";
import {
  afterFailure,
  afterSuccess,
  afterTokenAccepted,
  afterTokenRefused,
  answersAtOnceUntil,
  backlogResumesAt,
  type DeliveryHealth,
  type DeliveryStatus,
  deliveryStatus,
  HEALTHY,
} from "./health.ts";
import { Waiter } from "./_waiter.ts";
import { EntryAges } from "./_ages.ts";

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
  /** A monotonic clock in milliseconds (`performance.now`): pacing, deadlines, back-off, ages. */
  now(): number;
  /** The wall clock in milliseconds since the epoch (`Date.now`): timestamps, ages at first sight. */
  wallNow(): number;
  /** Calls `fn` after `ms`; returns a handle for {@linkcode DeliveryClock.clearTimer}. */
  setTimer(fn: () => void, ms: number): unknown;
  /** Cancels a timer of {@linkcode DeliveryClock.setTimer} (one that fired already is fine). */
  clearTimer(handle: unknown): void;
}

/** Where a form's notifications go (a form of `FORMS`, lib/config/config.ts `FormConfig`). */
export interface Destination {
  /** The form's id (`FORMS`), for the log. */
  readonly form: string;
  readonly chatId: number;
  /** Its forum topic (`message_thread_id`), if any. */
  readonly topicId?: number | undefined;
  /** Shown in the header (`Form: …`); absent: none (the default form's follow-up). */
  readonly title?: string | undefined;
  /** The message this one answers (`reply_parameters`): a follow-up's case notification. */
  readonly replyTo?: number | undefined;
  /** The case a follow-up belongs to (its first submission's id), named in its header. */
  readonly followUpOf?: string | undefined;
}

/** What a {@linkcode DeliveryQueue} works with. */
export interface DeliveryDeps {
  /** The default form's chat (negative for groups). */
  readonly chatId: number;
  /**
   * One `sendMessage` of `text` (lib/bot/api.ts `sendMessage`): to the default form's chat and
   * topic, or to `to`, a form's; `silent` (a notification that looks like spam): without sound.
   */
  readonly send: (
    text: string,
    to?: Destination,
    markup?: unknown,
    silent?: boolean,
  ) => Promise<BotApiResult>;
  /**
   * The buttons of a notification's first part for submission `id` (lib/bot/keyboard.ts), sent
   * as its `reply_markup`, `marked` when it looks like spam; absent (`CHAT_ACTIONS=0`): none.
   */
  readonly markup?: (id: string, marked: boolean) => unknown;
  /**
   * Told of every part that reached the chat, once it did (the chat ledger, lib/storage/ledger.ts):
   * awaited before the submission is noted delivered. A failure is logged, not retried.
   */
  readonly onSent?: (part: SentPart) => Promise<void>;
  /**
   * Where the submissions of form `form` go, by its settings now; `undefined` when `FORMS` no
   * longer names it (it then goes to the default form's chat, with a `form_removed` line).
   */
  readonly destination?: (form: string) => Destination | undefined;
  /**
   * Where `submission` goes when it is a follow-up written on a case page (lib/cases/): its
   * case's chat and topic, as a reply to its notification; `undefined` for any other submission.
   */
  readonly followUp?: (submission: OutboxSubmission) => Destination | undefined;
  /** The outbox. */
  readonly store: DeliveryStore;
  /** Telegram's limits (lib/delivery/pacer.ts). */
  readonly pacer: Pacer;
  /** Time. */
  readonly clock: DeliveryClock;
  /** A number in [0, 1), for the back-off's jitter. */
  readonly random: () => number;
  /** Where the queue's log lines go. */
  readonly log: Logger;
  /** How long a sender waits for its own delivery (`DELIVERY_WAIT_MS`). */
  readonly waitMs: number;
  /** Submissions older than this are given up (`DELIVERY_MAX_AGE`). */
  readonly maxAgeMs: number;
  /**
   * How long {@linkcode DeliveryQueue.close} waits for a call in flight (default
   * {@linkcode stopWaitMs} of the default 10 s call limit: 11 s).
   */
  readonly stopWaitMs?: number;
  /**
   * Ids `contactd forget` erased while the service runs (lib/storage/erasure.ts): checked right
   * before each send, so none is sent afterwards; its waiting sender is answered as stored.
   */
  readonly forgotten?: { has(id: string): boolean };
}

/** One part of a notification that reached the chat. */
export interface SentPart {
  readonly submission: OutboxSubmission;
  readonly chat: number;
  /** Its `message_id`; `undefined` when the API's answer did not say (a broken API). */
  readonly messageId: number | undefined;
  /** The first part: the one with the buttons. */
  readonly first: boolean;
}

/** A Bot API call of the chat actions (an edit, a toast, an answer), paced with the notifications. */
export type PacedCall = () => Promise<BotApiResult>;

/** A {@linkcode PacedCall} tried this often when Telegram answers `429`, then given up. */
export const CALL_FLOOD_TRIES = 3;

/** A sender's delivery, as far as it got within the wait. */
export type DeliveryOutcome =
  | { readonly ok: true }
  | {
    readonly ok: false;
    /** Short reason for the record's `messenger_error`, without secrets. */
    readonly error: string;
  };

/** The longest a stop waits for a call in flight: well inside systemd's `TimeoutStopSec=75s`. */
export const STOP_WAIT_CAP_MS = 30_000;

/**
 * How long a stop waits for a Bot API call in flight, for calls limited to `callTimeoutMs`
 * (`MESSENGER_TIMEOUT_MS`): the call's own limit and a second for its outcome to be written, at
 * most {@linkcode STOP_WAIT_CAP_MS}.
 */
export function stopWaitMs(callTimeoutMs: number): number {
  return Math.min(callTimeoutMs + 1000, STOP_WAIT_CAP_MS);
}

/**
 * At most this many `"now"` calls wait for one chat; one more is answered {@linkcode CALLS_FULL}
 * at once, without being made (the chat's answers never pile up without bound).
 */
export const CALLS_WAITING_PER_CHAT = 20;

/** The error of a call refused because {@linkcode CALLS_WAITING_PER_CHAT} wait for its chat. */
export const CALLS_FULL = "not made: too many calls wait for this chat";

/** While callers wait, this many of their sends go before one backlog send. */
const CALLER_SENDS_PER_BACKLOG_SEND = 3;

const STOPPING = "queued: contactd is stopping";

/** What a sender whose submission `contactd forget` erased meanwhile is told (not sent). */
export const FORGOTTEN = "queued: erased by contactd forget before it was sent";

/** A new submission and its waiting sender. */
interface CallerJob {
  readonly submission: OutboxSubmission;
  /** Its form's destination; `undefined`: the default form's. */
  readonly to: Destination | undefined;
  /** In the outbox (redelivered if it fails); otherwise it is tried once and forgotten. */
  readonly durable: boolean;
  readonly parts: readonly string[];
  sent: number;
  readonly deadline: number;
  readonly waiter: Waiter<DeliveryOutcome>;
}

/** A backlog submission partly sent in this run: its parts, and how many went. */
interface Progress {
  readonly submission: OutboxSubmission;
  readonly parts: readonly string[];
  sent: number;
  readonly to: Destination | undefined;
}

/** A chat action's call waiting for its turn. */
interface CallJob {
  /** The chat it is paced as (toasts: their own, `0`). */
  readonly chat: number;
  readonly fn: PacedCall;
  readonly resolve: (result: BotApiResult) => void;
  tries: number;
  /** `now`: an owner is looking; `later`: when nothing else is due. */
  readonly lane: "now" | "later";
}

/** What to send next, or until when there is nothing to send. */
type NextSend =
  | { readonly kind: "caller"; readonly job: CallerJob }
  | { readonly kind: "call"; readonly job: CallJob }
  | { readonly kind: "backlog"; readonly entry: OutboxEntry }
  | { readonly kind: "wait"; readonly until: number };

/** The queue; see the module documentation. */
export class DeliveryQueue {
  readonly #deps: DeliveryDeps;
  #callers: CallerJob[] = [];
  #calls: CallJob[] = [];
  readonly #callerIds = new Set<string>();
  readonly #progress = new Map<string, Progress>();
  /** Per backlog submission that failed in this run: the earliest time to try it again. */
  readonly #nextAt = new Map<string, number>();
  /** Submissions whose text Telegram refused in this run (its reason): a notice goes instead. */
  readonly #refused = new Map<string, string>();
  readonly #ages: EntryAges;
  #health: DeliveryHealth = HEALTHY;
  #inFlight: string | undefined;
  /** The destination of the last send (a form's), for the lines about its failure. */
  #lastTo: Destination | undefined;
  #callerStreak = 0;
  #closed = false;
  #closing: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;

  /** A queue over `deps`; call {@linkcode DeliveryQueue.start} to begin sending. */
  constructor(deps: DeliveryDeps) {
    this.#deps = deps;
    this.#ages = new EntryAges(deps.clock.now(), deps.clock.wallNow());
  }

  /** Starts the send loop (the backlog of earlier runs is sent from now on). */
  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * A Bot API call made outside the queue (the start-up `getMe`, the chat's `getUpdates`) had the
   * token refused (`error`, e.g. `"401 Unauthorized"`): delivery pauses now and health shows it,
   * as when a send is refused for the token (lib/delivery/health.ts `afterTokenRefused`).
   */
  tokenRefused(error: string): void {
    const { clock, log } = this.#deps;
    const before = this.#health;
    this.#health = afterTokenRefused(before, { now: clock.now(), error });
    if (before.state !== "paused") {
      log("error", { event: "delivery_paused", reason: error, hint: TOKEN_REFUSED_HINT });
      this.#reviewCallers(clock.now());
    }
  }

  /** A call outside the queue was answered with the token: a pause for the token ends. */
  tokenAccepted(): void {
    const before = this.#health;
    this.#health = afterTokenAccepted(before);
    if (this.#health !== before) {
      this.#deps.log("info", { event: "delivery_resumed" });
      this.#wake?.();
    }
  }

  /** Delivery's health for `GET /api/health`: ok, an outage, or paused (with its reason). */
  status(): DeliveryStatus {
    return deliveryStatus(this.#health);
  }

  /**
   * Makes a chat action's Bot API call (`fn`: an edit, a toast, a command's answer) in its turn,
   * within `chat`'s share for calls (lib/delivery/pacer.ts `callShare`: notifications always
   * keep the rest of the chat's budget). `"now"` calls (an owner is looking) share the turns
   * with the waiting senders' notifications, one after every
   * {@linkcode CALLER_SENDS_PER_BACKLOG_SEND} of theirs, and go before the backlog, so they never
   * wait for it to drain; with nothing else waiting, only while the chat keeps room for one more
   * message, so a sender who comes next waits at most one slot. At most
   * {@linkcode CALLS_WAITING_PER_CHAT} wait per chat. `"later"` calls (deleting erased messages)
   * go when nothing else is due. A call whose chat has no room yet does not hold up the calls of
   * other chats. A `429`
   * pauses everything, as for a notification, and the call goes again after it (at most
   * {@linkcode CALL_FLOOD_TRIES} times). Resolves with the call's result; never rejects (a
   * closed queue answers "stopping" without calling).
   */
  call(chat: number, fn: PacedCall, lane: "now" | "later" = "now"): Promise<BotApiResult> {
    if (this.#closed) return Promise.resolve({ ok: false, error: "contactd is stopping" });
    if (lane === "now") {
      let waiting = 0;
      for (const job of this.#calls) if (job.chat === chat && job.lane === "now") waiting++;
      if (waiting >= CALLS_WAITING_PER_CHAT) {
        return Promise.resolve({ ok: false, error: CALLS_FULL });
      }
    }
    return new Promise((resolve) => {
      this.#calls.push({ chat, fn, resolve, tries: 0, lane });
      this.#wake?.();
    });
  }

  /**
   * Queues a new submission and resolves with its outcome within `waitMs`: delivered, or why not
   * (failed, or still queued at the deadline: then it stays queued if `durable`). When the queue
   * can tell at once that it cannot be sent in time (a pause, or too many ahead), it answers at
   * once.
   */
  submit(submission: OutboxSubmission, durable: boolean): Promise<DeliveryOutcome> {
    if (this.#closed) return Promise.resolve({ ok: false, error: STOPPING });
    const { clock, waitMs } = this.#deps;
    const now = clock.now();
    const to = this.#destinationOf(submission);
    return new Promise<DeliveryOutcome>((resolve) => {
      const job: CallerJob = {
        submission,
        to,
        durable,
        parts: notificationParts({
          ...submission,
          title: _titleOf(submission, to),
          followUpOf: to?.followUpOf,
          buttons: this.#deps.markup !== undefined,
        }),
        sent: 0,
        deadline: now + waitMs,
        waiter: new Waiter(resolve),
      };
      this.#callers.push(job);
      if (durable) {
        this.#callerIds.add(submission.id);
        // First seen now: from here on it ages by the monotonic clock.
        this.#ages.age(submission.id, submission.ts, now, clock.wallNow());
      }
      const timer = clock.setTimer(() => {
        this.#release(job, `queued: not sent within ${Math.round(waitMs / 1000)} s`);
      }, waitMs);
      job.waiter.onAnswer(() => clock.clearTimer(timer));
      this.#reviewCallers(now);
      this.#wake?.();
    });
  }

  /**
   * Stops: answers every waiting sender (their submissions stay in the outbox for the next start)
   * except the one whose call is in flight, and ends the send loop once that call has returned and
   * its outcome is answered and noted, waiting at most `stopWaitMs`. Later calls return the same
   * promise; it never rejects.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const { clock, log } = this.#deps;
    this.#closed = true;
    for (const job of [...this.#callers]) {
      if (job.submission.id !== this.#inFlight) this.#release(job, STOPPING);
    }
    this.#wake?.();
    if (this.#loop !== undefined) {
      const waitMs = this.#deps.stopWaitMs ?? stopWaitMs(10_000);
      let timer: unknown;
      const bound = new Promise<"timeout">((resolve) => {
        timer = clock.setTimer(() => resolve("timeout"), waitMs);
      });
      const ended = await Promise.race([this.#loop, bound]);
      clock.clearTimer(timer);
      if (ended === "timeout") {
        // Its outcome is unknown: it stays in the outbox and the next start sends it (again).
        log("warn", {
          event: "delivery_stop_timeout",
          id: this.#inFlight ?? null,
          wait_ms: waitMs,
        });
      }
    }
    for (const job of [...this.#callers]) this.#release(job, STOPPING);
    this.#callers = [];
    for (const job of this.#calls) job.resolve({ ok: false, error: "contactd is stopping" });
    this.#calls = [];
  }

  async #run(): Promise<void> {
    const { clock, pacer, log } = this.#deps;
    while (!this.#closed) {
      try {
        const now = clock.now();
        const next = this.#next(now);
        if (next.kind === "wait") {
          await this.#sleep(next.until);
          continue;
        }
        // Pacing is per chat: the next send's (forms that share a chat share its pace).
        // (A call is chosen only when its chat has room: #dueCall.) The backlog goes evenly, never
        // in bursts that fill a group's minute: an owner's call or a sender who comes next finds
        // the chat's next slot a few seconds away at most.
        const chat = next.kind === "call" ? 0 : this.#chatOfNext(next);
        const ready = next.kind === "call"
          ? now
          : next.kind === "backlog"
          ? Math.max(pacer.readyAt(chat, now), pacer.evenAt(chat, now))
          : pacer.readyAt(chat, now);
        if (ready > now) {
          await this.#sleep(ready);
          continue;
        }
        if (next.kind === "caller") {
          this.#callerStreak++;
          await this.#sendCaller(next.job);
        } else if (next.kind === "call") {
          this.#callerStreak = 0;
          await this.#sendCall(next.job);
        } else {
          this.#callerStreak = 0;
          await this.#sendBacklog(next.entry);
        }
      } catch (error) {
        // A bug or a failing outbox: say so, and do not spin.
        log("error", { event: "delivery_error", error: describeError(error) });
        await this.#sleep(clock.now() + 1000);
      }
    }
  }

  #next(now: number): NextSend {
    const first = this.#callers[0];
    if (first !== undefined && this.#callerStreak < CALLER_SENDS_PER_BACKLOG_SEND) {
      return { kind: "caller", job: first };
    }
    // The backlog's share while callers wait goes to submissions older than theirs.
    const backlog = this.#dueBacklog(now, first?.submission.id);
    // Chat actions' calls an owner waits for go before the backlog, within their chat's share
    // for calls (the pacer's), so they never wait for a backlog to drain: while anything else
    // waits, at the chat's next slot (a sender who waits: after every few of theirs); otherwise
    // only while the chat keeps one more slot free for a sender who comes next.
    const busy = first !== undefined || "entry" in backlog;
    const call = this.#dueCall(now, "now", busy ? 1 : 2);
    if ("job" in call) return { kind: "call", job: call.job };
    if ("entry" in backlog) return { kind: "backlog", entry: backlog.entry };
    if (first !== undefined) return { kind: "caller", job: first };
    const later = this.#dueCall(now, "later", 2);
    if ("job" in later) return { kind: "call", job: later.job };
    return { kind: "wait", until: Math.min(backlog.until, call.until, later.until) };
  }

  /**
   * The first call of `lane` whose chat has room for `room` messages now (the call, and one
   * more for a sender when `room` is 2), or when the first of them will.
   */
  #dueCall(
    now: number,
    lane: "now" | "later",
    room: 1 | 2,
  ): { job: CallJob } | { until: number } {
    let until = Infinity;
    const { pacer } = this.#deps;
    for (const job of this.#calls) {
      if (job.lane !== lane) continue;
      const ready = Math.max(
        pacer.readyAfter(job.chat, room, now),
        pacer.callReadyAt(job.chat, now),
      );
      if (ready <= now) return { job };
      until = Math.min(until, ready);
    }
    return { until };
  }

  /** The oldest backlog entry due now (received before `stopAt`), or when the next one is. */
  #dueBacklog(now: number, stopAt?: string): { entry: OutboxEntry } | { until: number } {
    const resumeAt = backlogResumesAt(this.#health);
    if (now < resumeAt) return { until: resumeAt };
    let until = Infinity;
    for (const entry of this.#deps.store.entries()) {
      if (entry.id === stopAt) break;
      if (entry.done || this.#callerIds.has(entry.id) || entry.id === this.#inFlight) continue;
      if (this.#deps.forgotten?.has(entry.id) === true) continue;
      const at = this.#nextAt.get(entry.id) ?? -Infinity;
      if (at <= now) return { entry };
      until = Math.min(until, at);
    }
    return { until };
  }

  async #sendCall(job: CallJob): Promise<void> {
    const { pacer, clock } = this.#deps;
    pacer.sent(job.chat, clock.now(), true);
    job.tries++;
    let result: BotApiResult;
    try {
      result = await job.fn();
    } catch (error) {
      result = { ok: false, error: describeError(error) };
    }
    if (!result.ok && failureKind(result) === "flood") {
      this.#flood(result);
      if (job.tries < CALL_FLOOD_TRIES) return; // stays in line: it goes again after the pause
    }
    // An edit or a toast says as much about the token as a notification does.
    if (result.ok) this.tokenAccepted();
    else if (isTokenRefused(result)) this.tokenRefused(result.error);
    const index = this.#calls.indexOf(job);
    if (index >= 0) this.#calls.splice(index, 1);
    job.resolve(result);
  }

  async #sendCaller(job: CallerJob): Promise<void> {
    const { id } = job.submission;
    if (this.#deps.forgotten?.has(id) === true) {
      // Erased while it waited: nothing is sent, and the outbox has it given up already.
      this.#removeCaller(job);
      this.#forget(id);
      job.waiter.answer({ ok: false, error: FORGOTTEN });
      return;
    }
    const result = await this.#sendPart(
      job.submission,
      job.parts[job.sent]!,
      job.to,
      job.sent === 0,
    );
    if (result.ok) {
      job.sent++;
      if (job.sent < job.parts.length) {
        // The next part in the next turn; a sender answered meanwhile leaves the callers' lane.
        if (!job.waiter.waiting) this.#toBacklog(job);
        return;
      }
      this.#removeCaller(job);
      // The sender first: the outbox's note may follow (a crash in between sends it again).
      job.waiter.answer({ ok: true });
      if (job.durable) await this.#done(id, "delivered");
      return;
    }
    const kind = failureKind(result);
    if (kind === "flood") {
      this.#flood(result);
      // The same part goes again once the pause is over.
      if (!job.waiter.waiting) this.#toBacklog(job);
      return;
    }
    this.#removeCaller(job);
    // The sender first: noting the failure writes to the outbox, which may fail too.
    job.waiter.answer({ ok: false, error: result.error });
    if (!job.durable) {
      this.#noteFailure(result);
      this.#deps.log("warn", { event: "delivery_failed", id, error: result.error });
      return;
    }
    if (kind === "message") this.#refused.set(id, result.error);
    else if (job.sent > 0) {
      this.#progress.set(id, {
        submission: job.submission,
        parts: job.parts,
        sent: job.sent,
        to: job.to,
      });
    }
    await this.#failed(id, result, 1);
  }

  async #sendBacklog(entry: OutboxEntry): Promise<void> {
    const { store, clock, maxAgeMs, log } = this.#deps;
    const id = entry.id;
    const age = this.#ages.age(id, entry.ts, clock.now(), clock.wallNow());
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
        if (!(error instanceof OutboxEntryDamaged)) {
          // An I/O error is no verdict on the data: try again later (DELIVERY_MAX_AGE still
          // applies), and the API's health is not the outbox's business.
          const { clock, random } = this.#deps;
          this.#nextAt.set(id, clock.now() + retryDelayMs(entry.attempts + 1, random));
          log("error", { event: "outbox_read_failed", id, error: describeError(error) });
          return;
        }
        // Its line is damaged (kept aside by the outbox): nothing to send, and retrying it would
        // hold up everything behind it.
        await this.#done(id, "given_up");
        log("error", {
          event: "delivery_given_up",
          id,
          attempts: entry.attempts,
          reason: "unreadable",
          error: describeError(error),
        });
        return;
      }
      const to = this.#destinationOf(submission);
      const input = {
        ...submission,
        title: _titleOf(submission, to),
        followUpOf: to?.followUpOf,
        buttons: this.#deps.markup !== undefined,
        // No status yet: its sender was answered by this run (502), the record is on its way.
        late: {
          firstError: entry.firstError,
          answered: entry.status === undefined ? 502 : entry.status,
        },
      };
      const refusal = this.#refused.get(id);
      const parts = refusal === undefined
        ? notificationParts(input)
        : [refusedNotice(input, refusal)];
      progress = { submission, parts, sent: 0, to };
      this.#progress.set(id, progress);
    }
    const result = await this.#sendPart(
      progress.submission,
      progress.parts[progress.sent]!,
      progress.to,
      progress.sent === 0,
    );
    // This attempt counts: a first-attempt delivery says 1.
    const attempts = entry.attempts + 1;
    if (result.ok) {
      progress.sent++;
      if (progress.sent < progress.parts.length) return;
      const fallback = this.#refused.has(id);
      await this.#done(id, "delivered");
      log("info", {
        event: "delivered",
        id,
        attempts,
        late: true,
        ...(fallback ? { fallback } : {}),
      });
      return;
    }
    const kind = failureKind(result);
    if (kind === "flood") {
      this.#flood(result);
      return;
    }
    if (kind === "message") {
      if (this.#refused.has(id)) {
        // Even the notice without the sender's text was refused: there is nothing left to try.
        await this.#done(id, "given_up");
        log("warn", {
          event: "delivery_given_up",
          id,
          attempts,
          reason: "refused",
          error: result.error,
        });
        return;
      }
      // Its next try is the notice without the sender's text.
      this.#refused.set(id, result.error);
      this.#progress.delete(id);
    }
    await this.#failed(id, result, attempts);
  }

  /**
   * Sends one part, counting it with the pacer (the first with the buttons); a success ends an
   * outage or a settings pause, and is told to `onSent` (the chat ledger).
   */
  async #sendPart(
    submission: OutboxSubmission,
    text: string,
    to: Destination | undefined,
    first: boolean,
  ): Promise<BotApiResult> {
    const { pacer, chatId, clock, send, log, markup, onSent } = this.#deps;
    const id = submission.id;
    const chat = to?.chatId ?? chatId;
    this.#inFlight = id;
    this.#lastTo = to;
    pacer.sent(chat, clock.now());
    let result: BotApiResult;
    try {
      // Looks like spam (lib/learn/classifier.ts): every part without sound, marked buttons.
      const marked = looksLikeSpam(submission.spamScore);
      const buttons = first ? markup?.(id, marked) : undefined;
      result = await (marked
        ? send(text, to, buttons, true)
        : to === undefined && buttons === undefined
        ? send(text)
        : send(text, to, ...(buttons === undefined ? [] : [buttons])));
    } finally {
      this.#inFlight = undefined;
    }
    if (result.ok) {
      const before = this.#health;
      this.#health = afterSuccess(before);
      if (before.state === "paused") log("info", { event: "delivery_resumed" });
      if (onSent !== undefined) {
        try {
          await onSent({ submission, chat, messageId: messageIdOf(result), first });
        } catch (error) {
          // Delivered all the same: only the chat actions on this part are lost.
          log("error", { event: "ledger_write_failed", id, error: describeError(error) });
        }
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
    const nextAt = now + retryDelayMs(attempts, random);
    this.#nextAt.set(id, nextAt);
    this.#noteFailure(result);
    const resumeAt = backlogResumesAt(this.#health);
    log("warn", {
      event: "delivery_retry",
      id,
      attempts,
      error: result.error,
      retry_in_s: resumeAt === Infinity
        ? null
        : Math.ceil((Math.max(nextAt, resumeAt) - now) / 1000),
    });
    try {
      await this.#deps.store.failed(id, formatTimestamp(new Date(clock.wallNow())), result.error);
    } catch (error) {
      // Only the count of attempts is lost: the submission stays pending.
      log("error", { event: "outbox_write_failed", id, error: describeError(error) });
    }
  }

  /**
   * What a failed send says about the API (lib/delivery/health.ts): a failure that belongs to the
   * message says nothing; anything else starts or extends an outage, or pauses for the settings.
   */
  #noteFailure(result: BotApiResult & { ok: false }): void {
    const kind = failureKind(result);
    if (kind === "message") return;
    const { clock, random, log } = this.#deps;
    const now = clock.now();
    // A form's chat or topic: its lines name the form and its own settings too.
    const form = this.#lastTo?.form;
    const formHint = form === undefined
      ? ""
      : ` (form ${form}: ${formSettingName(form, "CHAT_ID")}, ${
        formSettingName(form, "TOPIC_ID")
      } where set)`;
    const about = form === undefined ? {} : { form };
    const migrated = result.parameters?.migrate_to_chat_id;
    if (migrated !== undefined) {
      log("warn", {
        event: "chat_migrated",
        ...about,
        hint: `set MESSENGER_CHAT_ID to new_chat_id${formHint}`,
        new_chat_id: migrated,
      });
    }
    const before = this.#health;
    this.#health = afterFailure(before, {
      now,
      error: result.error,
      settings: kind === "settings",
      token: isTokenRefused(result),
      random,
    });
    if (this.#health.state === "paused" && before.state !== "paused") {
      log("error", {
        event: "delivery_paused",
        ...about,
        reason: result.error,
        hint: settingsHint(result) + formHint,
      });
    }
    this.#reviewCallers(now);
  }

  /**
   * Answers senders whose submission cannot go before their deadline (behind an outage or a
   * `429`, or too many ahead): waiting would only delay a known outcome. Their submissions join
   * the backlog.
   */
  #reviewCallers(now: number): void {
    const { pacer, chatId } = this.#deps;
    // Callers of every chat count as ahead: an upper bound when forms have chats of their own.
    const health = this.#health;
    const outage = answersAtOnceUntil(health, now);
    let ahead = 0;
    for (const job of [...this.#callers]) {
      if (outage !== undefined && health.state === "outage") {
        // Behind failing tries a sender would only wait for the same failure.
        if (!job.waiter.waiting || this.#inFlight === job.submission.id) continue;
        const seconds = Math.ceil((outage - now) / 1000);
        // (lib/bot/api.ts keeps every error reason on one short line.)
        this.#release(job, `queued: ${health.lastError}, next try in ${seconds} s`);
        continue;
      }
      const remaining = job.parts.length - job.sent;
      const at = pacer.readyAfter(job.to?.chatId ?? chatId, ahead + remaining, now);
      if (at > job.deadline && job.waiter.waiting) {
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
    // A part in flight finishes: the job leaves the callers' lane when that call returns.
    if (this.#inFlight !== job.submission.id) this.#toBacklog(job);
    job.waiter.answer({ ok: false, error });
  }

  /** A caller job whose sender was answered: a durable one goes on in the backlog. */
  #toBacklog(job: CallerJob): void {
    this.#removeCaller(job);
    if (job.durable && job.sent > 0) {
      this.#progress.set(job.submission.id, {
        submission: job.submission,
        parts: job.parts,
        sent: job.sent,
        to: job.to,
      });
    }
  }

  #removeCaller(job: CallerJob): void {
    const index = this.#callers.indexOf(job);
    if (index >= 0) this.#callers.splice(index, 1);
    this.#callerIds.delete(job.submission.id);
  }

  async #done(id: string, result: "delivered" | "given_up"): Promise<void> {
    this.#forget(id);
    try {
      await this.#deps.store.done(
        id,
        formatTimestamp(new Date(this.#deps.clock.wallNow())),
        result,
      );
    } catch (error) {
      // Delivered, but the outbox could not say so: the next start sends it again (at least once).
      this.#deps.log("error", { event: "outbox_write_failed", id, error: describeError(error) });
    }
  }

  #forget(id: string): void {
    this.#progress.delete(id);
    this.#nextAt.delete(id);
    this.#refused.delete(id);
    this.#ages.forget(id);
  }

  /**
   * Where `submission` goes: its form's destination now, `undefined` for the default form. A form
   * that `FORMS` no longer names goes to the default form's chat, said once per submission.
   */
  #destinationOf(submission: OutboxSubmission): Destination | undefined {
    const followUp = this.#deps.followUp?.(submission);
    if (followUp !== undefined) return followUp;
    const { form, id } = submission;
    if (form === undefined) return undefined;
    const to = this.#deps.destination?.(form);
    if (to === undefined) {
      this.#deps.log("warn", {
        event: "form_removed",
        id,
        form,
        chat: this.#deps.chatId,
        hint: "FORMS no longer names its form: it goes to the default form's chat",
      });
    }
    return to;
  }

  /** The chat the next send goes to, for pacing (a backlog entry's from its form, as now). */
  #chatOfNext(next: NextSend & { kind: "caller" | "backlog" }): number {
    const { chatId, destination } = this.#deps;
    if (next.kind === "caller") return next.job.to?.chatId ?? chatId;
    const to = this.#progress.get(next.entry.id)?.to;
    if (to !== undefined) return to.chatId;
    const form = next.entry.form;
    return (form === undefined ? undefined : destination?.(form)?.chatId) ?? chatId;
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
  if (/thread not found/i.test(result.error)) {
    return "the forum topic does not exist (deleted, or not this chat's): check MESSENGER_TOPIC_ID, or unset it to post to General";
  }
  if (/rights|write_forbidden|topic_/i.test(result.error)) {
    return "the bot may not post there: give it the right to send messages (an administrator in a channel)";
  }
  return "check MESSENGER_CHAT_ID (contactd chat-id lists the chats that wrote to the bot)";
}

/**
 * The `Form: …` of a notification: its form's title, nothing for the default form, and
 * `<id> (removed)` for a form `FORMS` no longer names (it goes to the default form's chat).
 */
function _titleOf(submission: OutboxSubmission, to: Destination | undefined): string | undefined {
  if (to !== undefined) return to.title;
  return submission.form === undefined ? undefined : `${submission.form} (removed)`;
}
