/**
 * The HTTP side assembled: the spam challenge (ALTCHA or Turnstile, `CHALLENGE`) and the handler
 * with its rate limiters, over the state and the queue.
 *
 * @module
 */
import { Altcha, type ChallengeGate, REPLAY_CAPACITY } from "../challenge/altcha.ts";
import { isTurnstileTestSecret, Turnstile } from "../challenge/turnstile.ts";
import type { Config } from "../config/config.ts";
import type { DeliveryClock, DeliveryQueue } from "../delivery/queue.ts";
import { newSubmissionId } from "../form/submission_id.ts";
import { CHALLENGE_BUDGET, postBudget } from "../http/budgets.ts";
import { createHandler, type Handler } from "../http/handler.ts";
import type { Logger } from "../log/logger.ts";
import { RateLimiter } from "../net/rate_limit.ts";
import { CaseBook } from "../cases/case_book.ts";
import type { ForgottenIds } from "../storage/erasure.ts";
import type { ServiceState } from "./state.ts";
import type { SpamFilter } from "../spam/spam_filter.ts";
import { acceptSpam } from "./spam.ts";
import type { ServiceFiles } from "./files.ts";

/** What the HTTP side needs of the world. */
export interface FrontIO {
  readonly fetch: typeof fetch;
  readonly clock: DeliveryClock;
  /** Where the handler's lines go (tallied). */
  readonly log: Logger;
  /** Told of each POST held as spam or refused by the rate limiter (`/status`'s counts). */
  readonly count: (what: "held_spam" | "rate_limited") => void;
  /** Aborts at the stop: the bodies still arriving end (lib/http/drain.ts `Drain.signal`). */
  readonly stopping?: AbortSignal;
}

/** The challenge `config` asks for, if any; warns about Turnstile's test secrets. */
export function buildChallenge(config: Config, io: FrontIO): ChallengeGate | undefined {
  const { challenge } = config;
  if (challenge.kind === "altcha") {
    return new Altcha({
      secret: challenge.secret,
      clock: io.clock,
      onFull: () =>
        io.log("warn", { event: "challenge_replay_set_full", capacity: REPLAY_CAPACITY }),
    });
  }
  if (challenge.kind === "turnstile") {
    if (isTurnstileTestSecret(challenge.secret)) {
      io.log("warn", { event: "challenge_test_secret", setting: "CHALLENGE_SECRET" });
    }
    return new Turnstile({
      secret: challenge.secret,
      verifyUrl: challenge.verifyUrl,
      fetch: io.fetch,
      onOutage: (reason) => io.log("warn", { event: "challenge_unavailable", reason }),
    });
  }
  return undefined;
}

/** The handler for `config`, over `state` and the queue (`undefined`: no bot configured). */
export function buildHandler(
  config: Config,
  io: FrontIO,
  state: ServiceState,
  queue: DeliveryQueue | undefined,
  forgotten: ForgottenIds,
  examplePage: Uint8Array | undefined,
  spam?: SpamFilter,
  files?: ServiceFiles,
  cases: CaseBook = new CaseBook(state.store),
): Handler {
  const challenge = buildChallenge(config, io);
  const { outbox, backup, blocks } = state;
  return createHandler({
    now: () => io.clock.wallNow(),
    trustedProxies: config.trustedProxies,
    realIpHeader: config.realIpHeader,
    limiter: new RateLimiter(postBudget(config.rateLimit)),
    outbox,
    queue,
    newId: () => newSubmissionId(),
    forgotten,
    append: (line) => backup.append(line),
    log: io.log,
    count: io.count,
    ...(io.stopping === undefined ? {} : { stopping: io.stopping }),
    blocks,
    ...(spam === undefined ? {} : { spam: acceptSpam(config, spam) }),
    allowedOrigins: config.allowedOrigins,
    forms: config.forms,
    // Files sent with forms (issue 32): each form's ATTACHMENTS, kept with the submission.
    ...(files === undefined ? {} : { attachments: files.attachments, keepingFiles: files.keeping }),
    examplePage,
    challenge,
    challengeLimiter: challenge?.issue === undefined
      ? undefined
      : new RateLimiter(CHALLENGE_BUDGET),
    // Case pages (issue 33): each accepted submission opens one, at /api/case/<token>.
    cases,
    deliveryStatus: () => ({
      ...(queue?.status() ?? { state: "paused", reason: "not_configured" }),
      pending: outbox.pendingCount,
    }),
    databaseLost: state.store.isLost,
  });
}
