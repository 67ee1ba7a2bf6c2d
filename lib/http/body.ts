/**
 * Bounded request-body reading.
 *
 * @module
 */
import { type CappedRead, readCapped } from "../common/capped_read.ts";

/** The largest body accepted, in bytes (the reverse proxy enforces the same). */
export const BODY_LIMIT = 16_384;

/**
 * How long a whole request body may take to arrive, in milliseconds. A form post of at most
 * 16 KiB takes well under a second on any real connection; a body still trickling in after
 * 10 s is a slow-loris client holding a connection and a buffer.
 */
export const BODY_TIMEOUT_MS = 10_000;

/** The bytes of a body, or why they were refused. */
export type BodyResult = CappedRead;

/**
 * Reads a request body of at most `limit` bytes and hands the result to `onBody`; the promise
 * settles with what `onBody` returns (or the promise it returns settles with). A
 * `Content-Length` over the limit is refused unread; a chunked body is refused as soon as it
 * passes the limit, so at most the limit plus one chunk is ever buffered. Once `deadline`
 * aborts, the answer is reason `timeout` (the deadline covers the whole body, so a trickle of
 * one byte a second cannot stretch it); a chunked read is cancelled, a declared-length one is
 * left to end unheard, a chunked one is cancelled without waiting (a failed cancel goes to
 * `onCancelFailed`). A failed read, or an exception thrown by `onBody`, goes to `onError`.
 *
 * Why a callback rather than a promise to await: this is every POST's path, and handing the
 * body straight to the rules leaves, besides the read's own, one promise per request (the one
 * returned), with no async function and no wrapper promise in between (each cost a few hundred
 * nanoseconds of a refusal).
 */
export function withBody<T>(
  request: Request,
  limit: number,
  deadline: AbortSignal,
  onBody: (body: BodyResult) => T | PromiseLike<T>,
  onError: (error: unknown) => T | PromiseLike<T>,
  onCancelFailed: (error: unknown) => void,
): Promise<T> {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  const fail = (error: unknown) => {
    try {
      resolve(onError(error));
    } catch (thrown) {
      reject(thrown);
    }
  };
  const settle = (body: BodyResult) => {
    try {
      resolve(onBody(body));
    } catch (error) {
      fail(error);
    }
  };
  const declared = request.headers.get("content-length");
  if (declared === null) {
    readStream(request, limit, deadline, onCancelFailed).then(settle, fail);
    return promise;
  }
  if (Number(declared) > limit) {
    settle(TOO_LARGE);
    return promise;
  }
  // Fast path: the HTTP layer delivers exactly the declared length (no more), in one op, and
  // `request.body` is never touched (its getter builds a ReadableStream, costly per request).
  // bytes(), not arrayBuffer(): the body as it arrived, without a copy into a new buffer.
  const reading = request.bytes();
  // `settle` itself waits on the deadline (or is answered `timeout` at once if it has passed:
  // at most the declared length then stays buffered until the connection, answered with
  // `Connection: close`, ends). Whichever of the read and the deadline comes second finds it
  // gone from the set and does nothing.
  const reads = waitFor(deadline, settle);
  reading.then((bytes) => {
    if (reads?.delete(settle)) settle({ ok: true, bytes });
  }, (error) => {
    if (reads?.delete(settle)) fail(error);
  });
  return promise;
}

/** The chunked (or length-less) case of {@linkcode withBody}: the one capped reader's job. */
async function readStream(
  request: Request,
  limit: number,
  deadline: AbortSignal,
  onCancelFailed: (error: unknown) => void,
): Promise<BodyResult> {
  let expire = () => {};
  const expired = new Promise<void>((resolve) => (expire = resolve));
  const reads = waitFor(deadline, expire);
  try {
    return await readCapped(request, limit, { expired, onCancelFailed });
  } finally {
    reads?.delete(expire);
  }
}

const TIMEOUT: BodyResult = Object.freeze({ ok: false, reason: "timeout" });
const TOO_LARGE: BodyResult = Object.freeze({ ok: false, reason: "too_large" });

/** What waits on a deadline: called with `timeout` when it passes. */
type Waiter = (result: BodyResult) => void;

// A deadline signal is shared by every request of its slot (lib/http/deadline.ts), and slots only
// move forward: remember the current one and the reads waiting on it. Each signal gets one
// listener, which answers the reads still waiting (adding and removing a listener per request
// costs more than the rest of a refusal's rules).
let lastSignal: AbortSignal | undefined;
let lastReads: Set<Waiter> | undefined; // `undefined` once lastSignal has aborted

/**
 * Adds `waiter` to the reads waiting on `signal` and returns their set (delete it from there once
 * it need not wait); if `signal` has aborted already, calls it at once and returns `undefined`.
 */
function waitFor(signal: AbortSignal, waiter: Waiter): Set<Waiter> | undefined {
  if (signal !== lastSignal) {
    lastSignal = signal;
    lastReads = signal.aborted ? undefined : listenOn(signal);
  }
  if (lastReads === undefined) waiter(TIMEOUT);
  else lastReads.add(waiter);
  return lastReads;
}

function listenOn(signal: AbortSignal): Set<Waiter> {
  const reads = new Set<Waiter>();
  signal.addEventListener("abort", () => {
    if (lastSignal === signal) lastReads = undefined;
    for (const waiter of reads) waiter(TIMEOUT);
    reads.clear();
  }, { once: true });
  return reads;
}
