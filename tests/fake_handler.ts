/**
 * The pure handler with every dependency faked, for the hostile-input and fuzz tests: deliveries
 * and appends are counted, either can be made to fail, and the limiter key of each request is
 * captured.
 *
 * @module
 */
import { createHandler, type Handler } from "../lib/handler.ts";
import { parseCidr } from "../lib/ip.ts";
import type { LogFields, LogLevel } from "../lib/log.ts";
import { RateLimiter } from "../lib/rate_limit.ts";

/** What the faked dependencies saw. */
export interface FakeState {
  /** Notification texts handed to `deliver`. */
  readonly texts: string[];
  /** Lines handed to `append` (also the failed ones). */
  readonly lines: string[];
  readonly logs: Array<{ level: LogLevel } & LogFields>;
  /** Keys the limiter was asked about. */
  readonly keys: string[];
  deliverFails: boolean;
  appendFails: boolean;
}

/** A fresh handler trusting 127.0.0.1/8 as proxy, with the real limit of 5 per minute. */
export function fakeHandler(limit = 5): { handler: Handler; state: FakeState } {
  const state: FakeState = {
    texts: [],
    lines: [],
    logs: [],
    keys: [],
    deliverFails: false,
    appendFails: false,
  };
  const limiter = new RateLimiter({ limit, windowMs: 60_000, maxEntries: 10_000 });
  const take = limiter.take.bind(limiter);
  limiter.take = (key, now) => (state.keys.push(key), take(key, now));
  const handler = createHandler({
    now: () => new Date("2026-11-22T14:03:09Z"),
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    limiter,
    deliver: (text) => {
      state.texts.push(text);
      return Promise.resolve(
        state.deliverFails
          ? { ok: false, error: "500 Internal Server Error" }
          : { ok: true, parts: 1 },
      );
    },
    append: (line) => {
      state.lines.push(line);
      return state.appendFails ? Promise.reject(new Error("ENOSPC")) : Promise.resolve();
    },
    log: (level, fields) => state.logs.push({ level, ...fields }),
    // The deadline never fires here: every test body is complete.
    bodyDeadline: () => new AbortController().signal,
  });
  return { handler, state };
}

/** The peer every request comes from: the trusted local proxy. */
export const PROXY = { remoteAddr: { hostname: "127.0.0.1" } };
