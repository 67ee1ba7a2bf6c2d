/**
 * A constant-cost fake Bot API for the benchmark: reads each request and answers at once with one
 * fixed reply. (tests/fake_bot_api.ts records every call, which would grow without bound here.)
 *
 * @module
 */

/** A running fake. */
export interface BenchApi {
  /** Base URL, e.g. `"http://127.0.0.1:41234"`. */
  readonly url: string;
  /** Requests answered so far. */
  readonly calls: () => number;
  /** Stops the server. */
  close(): Promise<void>;
}

/** A successful `sendMessage` reply. */
export const SENT = { ok: true, result: { message_id: 1, date: 0, chat: { id: 1 }, text: "" } };

/** Flood control asking to wait `seconds`, as the real API words it. */
export function floodControl(seconds: number): Record<string, unknown> {
  return {
    ok: false,
    error_code: 429,
    description: `Too Many Requests: retry after ${seconds}`,
    parameters: { retry_after: seconds },
  };
}

/**
 * Starts the fake on 127.0.0.1 (free port); every request gets `reply` with `status`, after
 * `delayMs` (a remote API's round trip); `onCall` is told each request's path once it is read.
 */
export function startBenchApi(
  status = 200,
  reply: unknown = SENT,
  delayMs = 0,
  onCall?: (path: string) => void,
): BenchApi {
  const body = JSON.stringify(reply);
  let calls = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    await req.arrayBuffer();
    calls++;
    onCall?.(new URL(req.url).pathname);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return new Response(body, { status, headers: { "content-type": "application/json" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    calls: () => calls,
    close: () => server.shutdown(),
  };
}
