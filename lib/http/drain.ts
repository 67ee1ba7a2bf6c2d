/**
 * The stop's drain: the requests in flight counted, their bodies ended at the stop, and the wait
 * for the server's connections bounded.
 *
 * @module
 */
import type { Handler } from "./handler.ts";
import type { Logger } from "../log/logger.ts";

/**
 * How long the stop waits for the server's connections once every request in flight has been
 * answered, in milliseconds. What is left then is only a client holding its connection open
 * (an answer it does not read, a body refused unread that it goes on sending): the server is
 * not waited for any longer.
 */
export const DRAIN_GRACE_MS = 5_000;

/**
 * The longest the stop waits for the server, whatever the requests in flight do, in
 * milliseconds: longer than a Bot API call in flight is waited for (lib/delivery/queue.ts
 * `STOP_WAIT_CAP_MS`, 30 s), well inside systemd's `TimeoutStopSec=75s`.
 */
export const DRAIN_CAP_MS = 45_000;

/** What the drain needs of the world: timers (the service's clock's) and the log. */
export interface DrainDeps {
  setTimer(fn: () => void, ms: number): unknown;
  clearTimer(handle: unknown): void;
  readonly log: Logger;
  /** Default {@linkcode DRAIN_GRACE_MS}. */
  readonly graceMs?: number;
  /** Default {@linkcode DRAIN_CAP_MS}. */
  readonly capMs?: number;
}

/**
 * How the server's wait ended: it `closed` by itself, or it was cut, `idle` (every request
 * answered, {@linkcode DRAIN_GRACE_MS} passed) or at the `cap` with `running` requests unanswered.
 */
export type DrainEnd =
  | { readonly kind: "closed" }
  | { readonly kind: "cut"; readonly after: "idle" | "cap"; readonly running: number };

const CLOSED: DrainEnd = Object.freeze({ kind: "closed" });

/**
 * Counts the requests in flight ({@linkcode Drain.track}) and bounds the stop. At
 * {@linkcode Drain.stop}, {@linkcode Drain.signal} aborts: the bodies still arriving end (their
 * files removed, answered `503 stopping`, lib/http/contact.ts). The server's graceful shutdown
 * waits for every connection, including one whose client keeps it open after its answer; so
 * {@linkcode Drain.bounded} waits for the server to close, for at most
 * {@linkcode DRAIN_GRACE_MS} once no request is in flight, and at most {@linkcode DRAIN_CAP_MS}
 * after the stop; then the stop goes on without it (`connections_cut`), and the process's exit
 * ends those connections. The timers run only while both the stop and the wait have begun.
 */
export class Drain {
  readonly #deps: DrainDeps;
  readonly #stop = new AbortController();
  readonly #cut = Promise.withResolvers<DrainEnd>();
  #running = 0;
  #waiting = false;
  #ended = false;
  #idleTimer: unknown;
  #capTimer: unknown;
  readonly #done = () => {
    this.#running--;
    this.#armIdle();
  };

  constructor(deps: DrainDeps) {
    this.#deps = deps;
  }

  /** Aborts at the stop: the signal the bodies still arriving end on. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** How many requests are in flight: handed to the handler and not answered yet. */
  get running(): number {
    return this.#running;
  }

  /** `handler`, each request counted from its call until its answer (or its failure). */
  track(handler: Handler): Handler {
    return (request, info) => {
      this.#running++;
      this.#clearIdle();
      let answer: ReturnType<Handler>;
      try {
        answer = handler(request, info);
      } catch (error) {
        this.#done();
        throw error;
      }
      if (answer instanceof Promise) answer.then(this.#done, this.#done);
      else this.#done();
      return answer;
    };
  }

  /** Stops (once; later calls do nothing): the signal aborts, the bound starts if waited on. */
  stop(): void {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    this.#arm();
  }

  /**
   * Resolves with `closed` once `finished` (the server's) does, or with `cut` once the bound has
   * passed after the stop, whichever first; a cut is logged `connections_cut` (a warning when
   * requests were still unanswered). The timers are cleared either way.
   */
  bounded(finished: Promise<void>): Promise<DrainEnd> {
    this.#waiting = true;
    this.#arm();
    return Promise.race([finished.then(() => CLOSED), this.#cut.promise]).finally(() => {
      this.#ended = true;
      this.#clearIdle();
      this.#deps.clearTimer(this.#capTimer);
    });
  }

  /** Both the stop and the wait have begun: the cap runs, and the idle bound if none runs. */
  #arm(): void {
    if (!this.#waiting || !this.#stop.signal.aborted || this.#capTimer !== undefined) return;
    this.#capTimer = this.#deps.setTimer(
      () => this.#end("cap"),
      this.#deps.capMs ?? DRAIN_CAP_MS,
    );
    this.#armIdle();
  }

  #armIdle(): void {
    if (this.#running > 0 || this.#capTimer === undefined || this.#ended) return;
    if (this.#idleTimer !== undefined) return;
    this.#idleTimer = this.#deps.setTimer(
      () => this.#end("idle"),
      this.#deps.graceMs ?? DRAIN_GRACE_MS,
    );
  }

  #clearIdle(): void {
    if (this.#idleTimer === undefined) return;
    this.#deps.clearTimer(this.#idleTimer);
    this.#idleTimer = undefined;
  }

  #end(after: "idle" | "cap"): void {
    if (this.#ended) return;
    this.#ended = true;
    const running = this.#running;
    this.#deps.log(running > 0 ? "warn" : "info", { event: "connections_cut", after, running });
    this.#cut.resolve({ kind: "cut", after, running });
  }
}
