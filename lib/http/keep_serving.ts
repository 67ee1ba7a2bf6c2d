/**
 * Serving that outlives its accept loop failing (out of file descriptors): listen again.
 *
 * @module
 */
import { describeError, type Logger } from "../log/logger.ts";

/** What {@linkcode keepServing} needs of a server: the shape of `Deno.HttpServer`. */
export interface Serving {
  /** Resolves after a shutdown; rejects when the accept loop fails (e.g. `EMFILE`). */
  readonly finished: Promise<void>;
  /** Stops accepting and resolves `finished` once in-flight requests are answered. */
  shutdown(): Promise<void>;
}

/** The I/O {@linkcode keepServing} is given. */
export interface KeepServingDeps {
  /** The server already listening (start-up reports its own listen errors). */
  readonly first: Serving;
  /** Listens again on the same address; throws when it cannot (still out of descriptors). */
  readonly start: () => Serving;
  readonly log: Logger;
  /** A monotonic clock in milliseconds (`performance.now`). */
  readonly now: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts (see {@linkcode pause}). */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** The first pause before listening again; doubled per failure up to {@linkcode RETRY_MAX_MS}. */
export const RETRY_MIN_MS = 100;
/** The longest pause between two attempts to listen again. */
export const RETRY_MAX_MS = 5_000;
/** At most one `serve_failed` line per this many milliseconds; the rest are counted in it. */
export const LOG_EVERY_MS = 60_000;

/** A running {@linkcode keepServing}. */
export interface KeptServing {
  /** Resolves once shut down; never rejects for an accept or listen failure. */
  readonly finished: Promise<void>;
  /** Stops serving: the current server drains, a pending attempt to listen is dropped. */
  shutdown(): void;
}

/**
 * Keeps a server listening. `Deno.serve` ends its accept loop on the first accept error (with
 * every descriptor taken by open connections, `accept` fails with `EMFILE`), closing the
 * listener and rejecting `finished`; unhandled, that ends the process. Here such a failure is
 * logged (`serve_failed`, at most once per {@linkcode LOG_EVERY_MS}, later ones counted in
 * `repeats`) and the address is listened on again after a pause that grows from
 * {@linkcode RETRY_MIN_MS} to {@linkcode RETRY_MAX_MS} while attempts keep failing. Whatever
 * the process holds in memory (rate limits, the delivery queue) is kept.
 */
export function keepServing(deps: KeepServingDeps): KeptServing {
  const stop = new AbortController();
  let current: Serving | undefined = deps.first;
  let lastLog = -Infinity;
  let repeats = 0;

  const report = (stage: "accept" | "listen", error: unknown) => {
    const now = deps.now();
    if (now - lastLog < LOG_EVERY_MS) {
      repeats++;
      return;
    }
    deps.log("error", {
      event: "serve_failed",
      stage,
      error: describeError(error),
      ...(repeats > 0 ? { repeats } : {}),
      hint: "listening again; out of file descriptors? raise LimitNOFILE (ulimit -n)",
    });
    lastLog = now;
    repeats = 0;
  };

  const run = async () => {
    let delay = RETRY_MIN_MS;
    let startedAt = deps.now();
    while (true) {
      if (current !== undefined) {
        try {
          await current.finished;
          return; // shut down
        } catch (error) {
          current = undefined;
          if (stop.signal.aborted) return;
          report("accept", error);
          // A server that ran a while failed anew: start again from the shortest pause.
          if (deps.now() - startedAt >= RETRY_MAX_MS) delay = RETRY_MIN_MS;
        }
      }
      await deps.sleep(delay, stop.signal);
      if (stop.signal.aborted) return;
      delay = Math.min(delay * 2, RETRY_MAX_MS);
      try {
        current = deps.start();
        startedAt = deps.now();
      } catch (error) {
        report("listen", error);
      }
    }
  };

  return {
    finished: run(),
    shutdown() {
      stop.abort();
      // Once stopping, a failed accept loop no longer shows as `serve_failed` (nothing is
      // listened again): the failed shutdown says so itself.
      current?.shutdown().catch((error) =>
        deps.log("error", { event: "serve_shutdown_failed", error: describeError(error) })
      );
    },
  };
}

/** `setTimeout` as a promise that resolves early, and clears its timer, when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}
