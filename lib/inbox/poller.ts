/**
 * Reading the chat's updates by long polling (`getUpdates`), so contactd needs no inbound port
 * and no public URL. The poll's health is a small state machine with named transitions
 * (polling, failing with back-off, in conflict with a webhook or another poller); the loop
 * around it handles one update at a time and confirms it (the offset file) only once it is
 * handled, so a restart neither loses an update nor repeats one that was handled (handling is
 * idempotent for the window between the two). An update whose handling a stop overlapped is not
 * confirmed: its answers may not have gone out, and the next start handles it again.
 *
 * @module
 */
import type { BotApiFailure, GetUpdatesResult } from "../bot/api.ts";
import { retryDelayMs } from "../common/retry_schedule.ts";
import { describeError, type LogFields, type Logger } from "../log/logger.ts";

/** The long poll's own limit, in seconds: Telegram holds the request this long when idle. */
export const LONG_POLL_S = 25;

/** How often a poll in conflict is tried again. */
export const CONFLICT_RETRY_MS = 30_000;

/** The least time between two polls that brought nothing new (an idle long poll takes 25 s). */
export const IDLE_POLL_MS = 1000;

/** How many handled update ids the poller remembers, to tell a repeat from an id reset. */
const RECENT_IDS = 1000;

/** The longest back-off between failed polls. */
export const POLL_RETRY_CAP_MS = 60_000;

/** The poll's health. */
export type PollHealth =
  | { readonly state: "polling" }
  | { readonly state: "failing"; readonly failures: number }
  | { readonly state: "conflict"; readonly cause: "webhook" | "poller" };

/** The health at start. */
export const POLLING: PollHealth = { state: "polling" };

/** What a transition decided: the next health, how long to wait, and the line to log, if any. */
export interface PollStep {
  readonly health: PollHealth;
  readonly waitMs: number;
  readonly log?: { readonly level: "info" | "warn" | "error"; readonly fields: LogFields };
}

/** A poll answered: back to polling at once, saying so when it had been failing. */
export function afterPoll(health: PollHealth): PollStep {
  if (health.state === "polling") return { health, waitMs: 0 };
  return {
    health: POLLING,
    waitMs: 0,
    log: { level: "info", fields: { event: "updates_resumed", after: health.state } },
  };
}

/**
 * A poll failed. `409 Conflict` (a webhook is set, or another process polls this bot) is said
 * once with its fix and tried again every {@linkcode CONFLICT_RETRY_MS}; anything else backs
 * off exponentially (1 s, 2 s, … {@linkcode POLL_RETRY_CAP_MS}) with jitter, said at the first
 * failure and then every tenth.
 */
export function afterPollFailure(
  health: PollHealth,
  result: BotApiFailure,
  random: () => number,
): PollStep {
  if (result.errorCode === 409) {
    const cause = /webhook/i.test(result.error) ? "webhook" : "poller";
    const same = health.state === "conflict" && health.cause === cause;
    return {
      health: { state: "conflict", cause },
      waitMs: CONFLICT_RETRY_MS,
      ...(same ? {} : {
        log: {
          level: "error",
          fields: {
            event: "updates_conflict",
            error: result.error,
            hint: cause === "webhook"
              ? "a webhook is set for this bot: remove it (curl https://api.telegram.org/bot<token>/deleteWebhook); buttons, commands and replies wait until then, notifications still go out"
              : "another process reads this bot's updates (a second contactd, or another program with the same token): stop it; buttons, commands and replies wait until then, notifications still go out",
          },
        },
      }),
    };
  }
  const failures = health.state === "failing" ? health.failures + 1 : 1;
  const waitMs = Math.round(retryDelayMs(failures, random, POLL_RETRY_CAP_MS));
  return {
    health: { state: "failing", failures },
    waitMs,
    ...(failures === 1 || failures % 10 === 0
      ? {
        log: {
          level: "warn",
          fields: {
            event: "updates_failed",
            error: result.error,
            failures,
            retry_in_s: Math.ceil(waitMs / 1000),
          },
        },
      }
      : {}),
  };
}

/**
 * Thrown by a handler whose update's effect could not be saved (a full disk): the update is not
 * confirmed, so it is handled again after {@linkcode NOT_SAVED_RETRY_MS}, and so is every update
 * after it (they keep their order).
 */
export class UpdateNotSaved extends Error {
  /** The update's id. */
  readonly updateId: number;

  /** Update `updateId` could not be saved, for `cause`. */
  constructor(updateId: number, cause: unknown) {
    super(`update ${updateId} could not be saved`, { cause });
    this.name = "UpdateNotSaved";
    this.updateId = updateId;
  }
}

/** How long after an update that could not be saved it is handled again. */
export const NOT_SAVED_RETRY_MS = 5000;

/** Where the offset is kept between runs (`MESSAGES_FILE.updates`). */
export interface OffsetStore {
  /** The next update id to ask for; `undefined` when none was kept. */
  load(): Promise<number | undefined>;
  save(offset: number): Promise<void>;
}

/** What the poller works with; `U` is an update as `parse` reads it. */
export interface PollerDeps<U extends { readonly updateId: number }> {
  /** One `getUpdates` from `offset` (lib/bot/api.ts), ended at once by `signal`. */
  readonly poll: (offset: number | undefined, signal: AbortSignal) => Promise<GetUpdatesResult>;
  /** Splits a poll's result into update ids and what the handler needs (lib/bot/updates.ts). */
  readonly parse: (updates: readonly unknown[]) => readonly U[];
  /**
   * Handles one update; a throw is logged (`update_failed`) and the update counts as handled,
   * except {@linkcode UpdateNotSaved}: not confirmed, handled again.
   */
  readonly handle: (update: U) => Promise<void>;
  readonly offsets: OffsetStore;
  /** Waits `ms`, or less when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly random: () => number;
  readonly log: Logger;
  /**
   * Told each poll's answer, so a refused token (`401`/`404`) reaches delivery's health at once
   * and an answer with the token ends that pause (lib/delivery/queue.ts `tokenRefused`).
   */
  readonly answered?: (result: GetUpdatesResult) => void;
}

/** The long-poll loop: {@linkcode UpdatePoller.start}, then {@linkcode UpdatePoller.close}. */
export class UpdatePoller<U extends { readonly updateId: number }> {
  readonly #deps: PollerDeps<U>;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  #health: PollHealth = POLLING;

  /** A poller over `deps`. */
  constructor(deps: PollerDeps<U>) {
    this.#deps = deps;
  }

  /** The poll's health now (for `/status` and the tests). */
  get health(): PollHealth {
    return this.#health;
  }

  /** Starts polling. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Ends the long poll at once, and waits for an update being handled. Never rejects. */
  async close(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { offsets, log } = this.#deps;
    const signal = this.#stop.signal;
    let offset: number | undefined;
    /** The update ids handled lately, oldest first (a repeat of one is no id reset). */
    const recent = new Set<number>();
    try {
      offset = await offsets.load();
    } catch (error) {
      // Telegram keeps what is unconfirmed: starting without an offset only repeats handled ones.
      log("error", { event: "updates_offset_read_failed", error: describeError(error) });
    }
    while (!signal.aborted) {
      let result: GetUpdatesResult;
      try {
        result = await this.#deps.poll(offset, signal);
      } catch (error) {
        result = { ok: false, error: describeError(error) };
      }
      if (signal.aborted) break;
      this.#deps.answered?.(result);
      const step = result.ok
        ? afterPoll(this.#health)
        : afterPollFailure(this.#health, result, this.#deps.random);
      this.#health = step.health;
      if (step.log !== undefined) log(step.log.level, step.log.fields);
      if (!result.ok) {
        await this.#deps.sleep(step.waitMs, signal).catch(() => {});
        continue;
      }
      let updates: readonly U[] = [];
      try {
        updates = this.#deps.parse(result.updates);
      } catch (error) {
        log("error", { event: "update_failed", error: describeError(error) });
      }
      let fresh: readonly U[] = updates.filter((update) =>
        offset === undefined || update.updateId >= offset
      );
      if (
        fresh.length === 0 && offset !== undefined && updates.length > 0 &&
        updates.every((update) => !recent.has(update.updateId))
      ) {
        // Only ids below the offset, none handled lately, though the poll asked from the offset:
        // Telegram chose new ids (it does after a week without updates). Taken from scratch,
        // said once. (Ids handled lately, sent again by a broken API, are only skipped.)
        log("warn", { event: "updates_offset_reset", offset, update_id: updates[0]!.updateId });
        fresh = updates;
      }
      if (fresh.length === 0) {
        // Nothing new: a real long poll waited for it. One answered at once (a broken proxy, a
        // hostile API) must not become a busy loop.
        await this.#deps.sleep(IDLE_POLL_MS, signal).catch(() => {});
        continue;
      }
      let notSaved = false;
      for (const update of fresh) {
        try {
          await this.#deps.handle(update);
        } catch (error) {
          if (error instanceof UpdateNotSaved) {
            // Not confirmed: the next poll, from the same offset, brings it again.
            log("warn", {
              event: "update_not_saved",
              update_id: update.updateId,
              retry_in_s: NOT_SAVED_RETRY_MS / 1000,
            });
            notSaved = true;
            break;
          }
          log("error", {
            event: "update_failed",
            update_id: update.updateId,
            error: describeError(error),
          });
        }
        // Handled while the service stopped: its answers may not have gone out (the queue was
        // closing), so it is not confirmed, and the next start handles it again (idempotent).
        if (signal.aborted) break;
        offset = update.updateId + 1;
        recent.add(update.updateId);
        if (recent.size > RECENT_IDS) recent.delete(recent.values().next().value!);
        try {
          await offsets.save(offset);
        } catch (error) {
          // Confirmed to Telegram by the next poll all the same; only a restart may repeat it.
          log("error", { event: "updates_offset_write_failed", error: describeError(error) });
        }
        if (signal.aborted) break;
      }
      if (notSaved) await this.#deps.sleep(NOT_SAVED_RETRY_MS, signal).catch(() => {});
    }
  }
}
