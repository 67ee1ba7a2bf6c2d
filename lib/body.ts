/**
 * Bounded request-body reading.
 *
 * @module
 */

/** The largest body accepted, in bytes (the reverse proxy enforces the same). */
export const BODY_LIMIT = 16_384;

/** The bytes of a body, or why they were refused. */
export type BodyResult =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly reason: "too_large" };

/**
 * Reads a request body of at most `limit` bytes. A `Content-Length` over the limit is refused
 * unread; a chunked body is refused as soon as it passes the limit, so at most the limit plus
 * one chunk is ever buffered.
 */
export async function readBody(request: Request, limit = BODY_LIMIT): Promise<BodyResult> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > limit) return { ok: false, reason: "too_large" };
  // Fast path: the HTTP layer delivers exactly the declared length (no more), in one op, and
  // `request.body` is never touched (its getter builds a ReadableStream, costly per request).
  if (declared !== null) return { ok: true, bytes: new Uint8Array(await request.arrayBuffer()) };
  if (request.body === null) return { ok: true, bytes: new Uint8Array() };

  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        return { ok: false, reason: "too_large" };
      }
      chunks.push(value);
    }
  } finally {
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
