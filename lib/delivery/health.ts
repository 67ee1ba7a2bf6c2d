/**
 * The send queue's health as a small state machine, apart from the send path (the shape of
 * denoland/std's `async/unstable_circuit_breaker.ts`: a tagged union and named transitions):
 *
 * - **ok**: the last send that reached a verdict was accepted (or nothing failed yet).
 * - **outage**: sends have failed since the last success (timeouts, network errors, `5xx`, odd
 *   replies). The backlog as a whole waits until `resumeAt`, as long as the outage has lasted so
 *   far (lib/common/retry_schedule.ts `outageDelayMs`); from the second failure in a row new
 *   senders are answered at once until then.
 * - **paused**: a failure only the operator can fix (lib/bot/api.ts `failureKind` "settings": the
 *   token, the chat, the bot's place in it). The backlog waits, tried once every
 *   {@linkcode PAUSE_PROBE_MS} (so a fix made without a restart, a bot added back to its group, is
 *   found by itself), until a send succeeds or contactd restarts; new submissions still try once
 *   each.
 *
 * Transitions: {@linkcode afterSuccess} (any state to ok) and {@linkcode afterFailure} (ok or
 * outage to outage or paused; paused stays paused). A refused token (`401`/`404`) seen by any Bot
 * API call, one made outside the queue included (the start-up `getMe`, the chat's `getUpdates`),
 * pauses at once ({@linkcode afterTokenRefused}), and such a pause ends as soon as a call is
 * answered with the token again ({@linkcode afterTokenAccepted}). A failure that belongs to one message (its
 * `400`) and flood control (`429`, lib/delivery/pacer.ts) are not the API's health: they change
 * nothing here. Times are milliseconds on the caller's monotonic clock; nothing here reads a
 * clock.
 *
 * @module
 */
import { outageDelayMs } from "../common/retry_schedule.ts";

/** While paused, the backlog is tried once this often: a fix needs no restart to be seen. */
export const PAUSE_PROBE_MS = 10 * 60_000;

/** Failed sends in a row that make new senders be answered at once (one may be a blip). */
export const OUTAGE_AFTER_FAILURES = 2;

/** The queue's health; see the module documentation. */
export type DeliveryHealth =
  | { readonly state: "ok" }
  | {
    readonly state: "outage";
    /** When the first failure of this run of failures happened. */
    readonly since: number;
    /** Failed sends in a row. */
    readonly failures: number;
    /** The last failure's reason (one short line, lib/bot/api.ts), for the senders' answers. */
    readonly lastError: string;
    /** When the backlog may be tried again. */
    readonly resumeAt: number;
  }
  | {
    readonly state: "paused";
    /** The failure that paused it, e.g. `"401 Unauthorized"`. */
    readonly reason: string;
    /** When it was paused. */
    readonly since: number;
    /** When the backlog is tried again, to find out whether the operator fixed it. */
    readonly probeAt: number;
    /** Paused because the token was refused: any call answered with it ends the pause. */
    readonly token?: true;
  };

/** What the health endpoint reads of it (`GET /api/health`). */
export interface DeliveryStatus {
  readonly state: "ok" | "outage" | "paused";
  /** Why delivery is paused (a settings problem); only when `state` is `"paused"`. */
  readonly reason?: string;
}

/** A failed send, as the health sees it. */
export interface SendFailure {
  /** When it failed (monotonic ms). */
  readonly now: number;
  /** Its reason, one short line. */
  readonly error: string;
  /** A settings problem (lib/bot/api.ts `failureKind` "settings"). */
  readonly settings: boolean;
  /** The token itself refused (lib/bot/api.ts `isTokenRefused`): the pause ends with any answer. */
  readonly token?: boolean;
  /** A number in [0, 1), for the back-off's jitter. */
  readonly random: () => number;
}

/** The state a queue starts in. */
export const HEALTHY: DeliveryHealth = { state: "ok" };

/**
 * A Bot API call (any, inside the queue or not) had the token refused: delivery pauses now, with
 * that reason, rather than when a submission next fails. Already paused, it stays as it was.
 */
export function afterTokenRefused(
  health: DeliveryHealth,
  refusal: { readonly now: number; readonly error: string },
): DeliveryHealth {
  if (health.state === "paused") return health;
  const { now, error } = refusal;
  return { state: "paused", reason: error, since: now, probeAt: now + PAUSE_PROBE_MS, token: true };
}

/**
 * A Bot API call was answered with the token (the chat's `getUpdates`): a pause for a refused
 * token is over (the backlog goes at once); any other state, or a pause for another reason (the
 * chat), stays.
 */
export function afterTokenAccepted(health: DeliveryHealth): DeliveryHealth {
  return health.state === "paused" && health.token === true ? HEALTHY : health;
}

/** A send was accepted: whatever the state, delivery works. */
export function afterSuccess(_health: DeliveryHealth): DeliveryHealth {
  return HEALTHY;
}

/**
 * A send failed for a reason that is not the message's own nor flood control: a settings problem
 * pauses (a pause lasts until a success, whatever fails meanwhile, probed every
 * {@linkcode PAUSE_PROBE_MS}); anything else starts or
 * extends an outage, backing the backlog off for as long as the outage has lasted.
 */
export function afterFailure(health: DeliveryHealth, failure: SendFailure): DeliveryHealth {
  const { now, error, settings, random } = failure;
  // A failed probe (or a new submission's try) puts the next probe off; the first reason stays.
  if (health.state === "paused") return { ...health, probeAt: now + PAUSE_PROBE_MS };
  if (settings) {
    return {
      state: "paused",
      reason: error,
      since: now,
      probeAt: now + PAUSE_PROBE_MS,
      ...(failure.token === true ? { token: true as const } : {}),
    };
  }
  const since = health.state === "outage" ? health.since : now;
  const failures = health.state === "outage" ? health.failures + 1 : 1;
  return {
    state: "outage",
    since,
    failures,
    lastError: error,
    resumeAt: now + outageDelayMs(now - since, random),
  };
}

/** When the backlog may be tried again: now (`-Infinity`), after an outage's wait, or a probe's. */
export function backlogResumesAt(health: DeliveryHealth): number {
  if (health.state === "ok") return -Infinity;
  return health.state === "outage" ? health.resumeAt : health.probeAt;
}

/**
 * Until when new senders are answered at once instead of being tried (`undefined` when they are
 * tried): during an outage of {@linkcode OUTAGE_AFTER_FAILURES} failures in a row, until the
 * backlog's next try. A pause for the settings is not one: new submissions still try once each.
 */
export function answersAtOnceUntil(health: DeliveryHealth, now: number): number | undefined {
  if (health.state !== "outage" || health.failures < OUTAGE_AFTER_FAILURES) return undefined;
  return now < health.resumeAt ? health.resumeAt : undefined;
}

/** The health as the health endpoint reports it. */
export function deliveryStatus(health: DeliveryHealth): DeliveryStatus {
  return health.state === "paused"
    ? { state: "paused", reason: health.reason }
    : { state: health.state };
}
