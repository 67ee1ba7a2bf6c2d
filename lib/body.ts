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
 * Reads a request body of at most `limit` bytes. A `Content-Length` over the limit is refused
 * unread; a chunked body is refused as soon as it passes the limit, so at most the limit plus
 * one chunk is ever buffered. Once `deadline` aborts, reading stops with reason `timeout`
 * (the deadline covers the whole body, so a trickle of one byte a second cannot stretch it).
 */
export async function readBody(
  request: Request,
  limit = BODY_LIMIT,
  deadline?: AbortSignal,
): Promise<BodyResult> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) return { ok: false, reason: "too_large" };
  if (declared !== null) {
    // Fast path: the HTTP layer delivers exactly the declared length (no more), in one op, and
    // `request.body` is never touched (its getter builds a ReadableStream, costly per request).
    const reading = request.arrayBuffer();
    if (deadline === undefined) return { ok: true, bytes: new Uint8Array(await reading) };
    const expiry = whenAborted(deadline);
    const next = await Promise.race([reading, expiry.promise]).finally(expiry.cancel);
    if (next === "timeout") {
      // At most the declared length (within the limit) stays buffered until the connection,
      // answered with `Connection: close`, ends.
      reading.catch(() => {});
      return { ok: false, reason: "timeout" };
    }
    return { ok: true, bytes: new Uint8Array(next) };
  }
  if (request.body === null) return { ok: true, bytes: new Uint8Array() };

  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  const expiry = deadline === undefined ? undefined : whenAborted(deadline);
  const expired = expiry?.promise;
  try {
    while (true) {
      const next = await (expired ? Promise.race([reader.read(), expired]) : reader.read());
      if (next === "timeout") {
        // Not awaited: a stalled client must not stall the answer.
        reader.cancel().catch(() => {});
        return { ok: false, reason: "timeout" };
      }
      const { done, value } = next;
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return { ok: false, reason: "too_large" };
      }
      chunks.push(value);
    }
  } finally {
    expiry?.cancel();
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

/**
 * Resolves `"timeout"` once `signal` aborts (at once if it already has); `cancel` removes the
 * listener, since a deadline signal may be shared by many requests and outlive this one.
 */
function whenAborted(signal: AbortSignal): { promise: Promise<"timeout">; cancel: () => void } {
  let cancel = () => {};
  const promise = new Promise<"timeout">((resolve) => {
    if (signal.aborted) return resolve("timeout");
    const onAbort = () => resolve("timeout");
    signal.addEventListener("abort", onAbort, { once: true });
    cancel = () => signal.removeEventListener("abort", onAbort);
  });
  return { promise, cancel };
}
