/**
 * Reading a body that may be hostile: whole into one buffer, but never more than a limit, and,
 * when asked, never past a deadline. The one capped stream reader of contactd (request bodies,
 * Bot API replies, Turnstile answers).
 *
 * @module
 */

/** The bytes of a body, or why it was not read whole. */
export type CappedRead =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly reason: "too_large" | "timeout" };

/** A body and its headers: a `Request` or a `Response`. */
export interface CappedBody {
  readonly headers: Headers;
  readonly body: ReadableStream<Uint8Array> | null;
}

/** A deadline for {@linkcode readCapped}. */
export interface ReadExpiry {
  /** Settles when the time is up; the read then ends with reason `timeout`. */
  readonly expired: Promise<unknown>;
  /**
   * Told when cancelling the stream after the deadline fails. That cancel is not waited for (a
   * stalled peer must not stall the answer), so its failure arrives here, later.
   */
  readonly onCancelFailed: (error: unknown) => void;
}

/**
 * Reads `message`'s body whole, at most `limit` bytes. A `Content-Length` over the limit is
 * refused unread (reason `too_large`); a body without one is refused as soon as it passes the
 * limit, so at most the limit plus one chunk is ever held. Either way the rest is cancelled, not
 * read (a failed cancel rejects, like a failed read). With `expiry`, the read ends with reason
 * `timeout` once `expiry.expired` settles, and the stream is cancelled without waiting.
 */
export async function readCapped(
  message: CappedBody,
  limit: number,
  expiry?: ReadExpiry,
): Promise<CappedRead> {
  const declared = Number(message.headers.get("content-length") ?? "0");
  if (declared > limit) {
    await message.body?.cancel();
    return TOO_LARGE;
  }
  if (message.body === null) return { ok: true, bytes: new Uint8Array(0) };
  const reader = message.body.getReader();
  const expired = expiry?.expired.then(() => "timeout" as const, () => "timeout" as const);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (true) {
      const next = expired === undefined
        ? await reader.read()
        : await Promise.race([reader.read(), expired]);
      if (next === "timeout") {
        reader.cancel().catch(expiry!.onCancelFailed);
        return TIMEOUT;
      }
      if (next.done) break;
      size += next.value.byteLength;
      if (size > limit) {
        await reader.cancel();
        return TOO_LARGE;
      }
      chunks.push(next.value);
    }
  } finally {
    reader.releaseLock();
  }
  return { ok: true, bytes: _concat(chunks, size) };
}

const TIMEOUT: CappedRead = Object.freeze({ ok: false, reason: "timeout" });
const TOO_LARGE: CappedRead = Object.freeze({ ok: false, reason: "too_large" });

/** `chunks` (of `size` bytes in all) as one array. */
function _concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}
