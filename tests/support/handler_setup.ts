/**
 * Test helpers: the request handler with every dependency faked, and request builders.
 *
 * @module
 */
import type { ChallengeGate } from "../../lib/challenge/altcha.ts";
import type { DeliveryOutcome } from "../../lib/delivery/queue.ts";
import type { RealIpHeader } from "../../lib/config/config.ts";
import { createHandler, type Handler, type HandlerDeps } from "../../lib/http/handler.ts";
import { parseCidr } from "../../lib/common/ip.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";
import { notificationParts } from "../../lib/bot/notification.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import type { Store } from "../../lib/storage/store.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { postBudget } from "../../lib/http/budgets.ts";
import { parseConfig } from "../../lib/config/config.ts";

/** A fake delivery: what the queue made of a submission's notification text. */
export type FakeDeliver = (text: string) => Promise<DeliveryOutcome>;

/** A handler with every dependency faked; the clock is a field tests move. */
export function setup(options: {
  /** The queue's outcome for each notification (default: delivered); or no messenger at all. */
  deliver?: FakeDeliver | "unconfigured";
  /** The backup file's append (default: kept in `state.lines`). */
  append?: (line: string) => Promise<void>;
  /** The outbox's add (default: kept in `state.outbox`). */
  store?: (submission: OutboxSubmission) => Promise<void>;
  allowedOrigins?: readonly string[];
  /** `FORMS` (default: none). */
  forms?: HandlerDeps["forms"];
  examplePage?: Uint8Array;
  bodyDeadline?: (nowMs: number) => AbortSignal;
  /** Aborts when the service stops (lib/http/drain.ts `Drain.signal`; default: never). */
  stopping?: AbortSignal;
  /** Called before each log line is kept; a throw here is the logger failing. */
  onLog?: (fields: LogFields) => void;
  /** `REAL_IP_HEADER` (default: X-Forwarded-For, as in production). */
  realIpHeader?: RealIpHeader;
  /** `CHALLENGE` (default: none) and the budget of `GET /api/challenge`. */
  challenge?: ChallengeGate;
  challengeLimiter?: RateLimiter;
  /** The queue's state and pending count for health (default: none given). */
  deliveryStatus?: HandlerDeps["deliveryStatus"];
  /** The case pages (default: none) and the budget of their reads. */
  cases?: HandlerDeps["cases"];
  /**
   * Where what is written with a submission's outbox row (its case, its lesson, its files) is
   * committed (default: nowhere): a real store, for the case pages' tests.
   */
  commitWith?: Pick<Store, "transaction">;
  caseLimiter?: RateLimiter;
  /** Files sent with forms (`ATTACHMENTS`, default: none) and where accepted ones are kept. */
  attachments?: HandlerDeps["attachments"];
  keepingFiles?: HandlerDeps["keepingFiles"];
  /** The spam block list (default: none). */
  blocks?: HandlerDeps["blocks"];
} = {}) {
  const state = {
    now: new Date("2026-11-22T14:03:09.500Z"),
    texts: [] as string[],
    lines: [] as string[],
    outbox: [] as OutboxSubmission[],
    /** What the outbox was told the senders were answered, by id. */
    answered: new Map<string, number | null>(),
    logs: [] as Array<{ level: LogLevel } & LogFields>,
  };
  const { deliver } = options;
  let ids = 0;
  const handler: Handler = createHandler({
    now: () => state.now.getTime(),
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    ...(options.realIpHeader ? { realIpHeader: options.realIpHeader } : {}),
    limiter: new RateLimiter(postBudget(parseConfig({}).rateLimit)), // RATE_LIMIT unset
    queue: deliver === "unconfigured" ? undefined : {
      async submit(submission) {
        const text = notificationParts(submission).join("\n");
        state.texts.push(text);
        return deliver ? await deliver(text) : { ok: true };
      },
    },
    outbox: {
      // Kept once committed, as the outbox keeps a row: a refused commit keeps nothing.
      add: options.store ?? (async (submission, also = []) => {
        if (also.length > 0) await options.commitWith?.transaction(also);
        state.outbox.push(submission);
      }),
      recordedSoon: (id, status) => (state.answered.set(id, status), Promise.resolve()),
    },
    newId: () => `id${String(++ids).padStart(6, "0")}`,
    append: options.append ?? ((line) => (state.lines.push(line), Promise.resolve())),
    log: (level, fields) => {
      options.onLog?.(fields);
      state.logs.push({ level, ...fields });
    },
    allowedOrigins: options.allowedOrigins ?? [],
    ...(options.forms ? { forms: options.forms } : {}),
    examplePage: options.examplePage,
    ...(options.bodyDeadline ? { bodyDeadline: options.bodyDeadline } : {}),
    ...(options.stopping ? { stopping: options.stopping } : {}),
    challenge: options.challenge,
    challengeLimiter: options.challengeLimiter,
    ...(options.deliveryStatus ? { deliveryStatus: options.deliveryStatus } : {}),
    ...(options.cases ? { cases: options.cases } : {}),
    ...(options.caseLimiter ? { caseLimiter: options.caseLimiter } : {}),
    ...(options.attachments ? { attachments: options.attachments } : {}),
    ...(options.keepingFiles ? { keepingFiles: options.keepingFiles } : {}),
    ...(options.blocks ? { blocks: options.blocks } : {}),
  });
  return { state, handler };
}

/** A `POST /api/contact` with a JSON body (a string is sent as is) from a forwarded client. */
export function post(body: unknown, headers: Record<string, string> = {}, ip = "198.51.100.1") {
  return new Request("http://localhost/api/contact", {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": ip, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** `POST /api/contact` with a urlencoded body, as a browser without JavaScript sends it. */
export function postForm(
  fields: Record<string, string> | string,
  headers: Record<string, string> = {},
  ip = "198.51.100.1",
) {
  return post(typeof fields === "string" ? fields : new URLSearchParams(fields).toString(), {
    "content-type": "application/x-www-form-urlencoded",
    ...headers,
  }, ip);
}

/** A trusted proxy as the TCP peer, so `X-Forwarded-For` names the client. */
export const PEER = { remoteAddr: { hostname: "127.0.0.1" } };
