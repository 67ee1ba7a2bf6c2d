/**
 * Bounded request-body reading.
 *
 * @module
 */

/** The largest body accepted, in bytes (the reverse proxy enforces the same). */
export const BODY_LIMIT = 16_384;

/**
 * How long a whole request body may take to arrive, in milliseconds. A form post of at most
 * 16 KiB takes well under a second on any real connection; a body still trickling in after
 * 10 s is a slow-loris client holding a connection and a buffer.
 */
export const BODY_TIMEOUT_MS = 10_000;

/** The bytes of a body, or why they were refused. */
export type BodyResult =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly reason: "too_large" | "timeout" };

/**
 * Reads a request body of at most `limit` bytes and hands the result to `onBody`; the promise
 * settles with what `onBody` returns (or the promise it returns settles with). A
 * `Content-Length` over the limit is refused unread; a chunked body is refused as soon as it
 * passes the limit, so at most the limit plus one chunk is ever buffered. Once `deadline`
 * aborts, reading stops with reason `timeout` (the deadline covers the whole body, so a trickle
 * of one byte a second cannot stretch it). A failed read, or an exception thrown by `onBody`,
 * goes to `onError` instead.
 *
 * Why a callback rather than a promise to await: this is every POST's path, and handing the
 * body straight to the rules leaves one promise per request (the one returned), with no async
 * function and no promise in between (each cost a few hundred nanoseconds of a refusal's ~14 µs).
 */
export function withBody<T>(
  request: Request,
  limit: number,
  deadline: AbortSignal | undefined,
  onBody: (body: BodyResult) => T | PromiseLike<T>,
  onError: (error: unknown) => T | PromiseLike<T>,
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
    readStream(request, limit, deadline).then(settle, fail);
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
  const reads = deadline === undefined ? undefined : waitingOn(deadline);
  if (deadline !== undefined && reads === undefined) {
    // At most the declared length (within the limit) stays buffered until the connection,
    // answered with `Connection: close`, ends.
    reading.catch(() => {});
    settle(TIMEOUT);
    return promise;
  }
  // `settle` itself waits in the deadline's set. Whichever of the read and the deadline comes
  // second finds it gone from the set (the deadline empties it) and does nothing.
  reads?.add(settle);
  reading.then((bytes) => {
    if (reads === undefined || reads.delete(settle)) settle({ ok: true, bytes });
  }, (error) => {
    if (reads === undefined || reads.delete(settle)) fail(error);
  });
  return promise;
}

/** The chunked (or length-less) case of {@linkcode withBody}. */
async function readStream(
  request: Request,
  limit: number,
  deadline: AbortSignal | undefined,
): Promise<BodyResult> {
  if (request.body === null) return { ok: true, bytes: new Uint8Array() };

  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  let expire: ((value: "timeout") => void) | undefined;
  const expired = deadline === undefined
    ? undefined
    : new Promise<"timeout">((resolve) => (expire = resolve));
  const cancel = deadline === undefined
    ? undefined
    : whenAborted(deadline, () => expire!("timeout"));
  try {
    while (true) {
      const next = await (expired ? Promise.race([reader.read(), expired]) : reader.read());
      if (next === "timeout") {
        // Not awaited: a stalled client must not stall the answer.
        reader.cancel().catch(() => {});
        return TIMEOUT;
      }
      const { done, value } = next;
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return TOO_LARGE;
      }
      chunks.push(value);
    }
  } finally {
    cancel?.();
    reader.releaseLock();
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { ok: true, bytes };
}

const TIMEOUT: BodyResult = Object.freeze({ ok: false, reason: "timeout" });
const TOO_LARGE: BodyResult = Object.freeze({ ok: false, reason: "too_large" });

// A deadline signal is shared by every request of its slot: it gets one listener, which
// answers the reads still waiting (adding and removing a listener per request costs more than
// the rest of a refusal's rules).
const waiting = new WeakMap<AbortSignal, Set<(result: BodyResult) => void>>();

// Every POST of a second shares one signal: remember the last one and its set (`undefined`
// once it has aborted), so most calls skip the WeakMap and the `aborted` getter.
let lastSignal: AbortSignal | undefined;
let lastReads: Set<(result: BodyResult) => void> | undefined;

/** The reads waiting on `signal`, or `undefined` once it has aborted. */
function waitingOn(signal: AbortSignal): Set<(result: BodyResult) => void> | undefined {
  if (signal === lastSignal) return lastReads;
  lastSignal = signal;
  lastReads = undefined;
  if (signal.aborted) return undefined;
  let reads = waiting.get(signal);
  if (reads === undefined) {
    const all = new Set<(result: BodyResult) => void>();
    signal.addEventListener("abort", () => {
      if (lastSignal === signal) lastReads = undefined;
      for (const resolve of all) resolve(TIMEOUT);
      all.clear();
    }, { once: true });
    waiting.set(signal, all);
    reads = all;
  }
  return lastReads = reads;
}

/** Calls `onAbort` once `signal` aborts (at once if it already has); returns the canceller. */
function whenAborted(signal: AbortSignal, onAbort: () => void): () => void {
  const reads = waitingOn(signal);
  if (reads === undefined) {
    onAbort();
    return () => {};
  }
  reads.add(onAbort);
  return () => reads.delete(onAbort);
}
