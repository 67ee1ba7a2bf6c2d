/**
 * A request body as it may arrive: in chunks whose boundaries fall anywhere.
 *
 * @module
 */

const encoder = new TextEncoder();

/** `body` (text as UTF-8) as a stream of chunks of `size` bytes. */
export function chunked(body: string | Uint8Array, size: number): ReadableStream<Uint8Array> {
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}
