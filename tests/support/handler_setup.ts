/**
 * Test helpers: the request handler with every dependency faked, and request builders.
 *
 * @module
 */
import { createHandler, type Handler } from "../../lib/handler.ts";
import { parseCidr } from "../../lib/ip.ts";
import type { LogFields, LogLevel } from "../../lib/log.ts";
import { RateLimiter } from "../../lib/rate_limit.ts";
import type { Deliver } from "../../lib/telegram.ts";

/** A handler with every dependency faked; the clock is a field tests move. */
export function setup(options: {
  deliver?: Deliver | "unconfigured";
  append?: (line: string) => Promise<void>;
  allowedOrigins?: readonly string[];
  examplePage?: Uint8Array;
  bodyDeadline?: (nowMs: number) => AbortSignal;
  /** Called before each log line is kept; a throw here is the logger failing. */
  onLog?: (fields: LogFields) => void;
} = {}) {
  const state = {
    now: new Date("2026-11-22T14:03:09.500Z"),
    texts: [] as string[],
    lines: [] as string[],
    logs: [] as Array<{ level: LogLevel } & LogFields>,
  };
  const { deliver } = options;
  const handler: Handler = createHandler({
    now: () => state.now.getTime(),
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    limiter: new RateLimiter({ limit: 5, windowMs: 60_000 }),
    deliver: deliver === "unconfigured" ? undefined : async (text) => {
      state.texts.push(text);
      return deliver ? await deliver(text) : { ok: true, parts: 1 };
    },
    append: options.append ?? ((line) => (state.lines.push(line), Promise.resolve())),
    log: (level, fields) => {
      options.onLog?.(fields);
      state.logs.push({ level, ...fields });
    },
    allowedOrigins: options.allowedOrigins ?? [],
    examplePage: options.examplePage,
    ...(options.bodyDeadline ? { bodyDeadline: options.bodyDeadline } : {}),
  });
  return { state, handler };
}

/** A `POST /api/contact` with a JSON body (a string is sent as is) from a forwarded client. */
export function post(body: unknown, headers: Record<string, string> = {}, ip = "198.51.100.1") {
  return new Request("http://localhost/api/contact", {
    method: "POST",
    headers: { "content-type": "application/json", "x-real-ip": ip, ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** `POST /api/contact` with a urlencoded body, as a browser without JavaScript sends it. */
export function postForm(
  fields: Record<string, string> | string,
  headers: Record<string, string> = {},
  ip = "198.51.100.1",
) {
  return post(typeof fields === "string" ? fields : new URLSearchParams(fields).toString(), {
    "content-type": "application/x-www-form-urlencoded",
    ...headers,
  }, ip);
}

/** A trusted proxy as the TCP peer, so `X-Real-IP` names the client. */
export const PEER = { remoteAddr: { hostname: "127.0.0.1" } };
