/**
 * A fake Telegram Bot API server for end-to-end tests: real HTTP on
 * 127.0.0.1, answering like the real API unless a test scripts otherwise.
 *
 * @module
 */

/** One request the fake received. */
export interface FakeCall {
  /** Method name from the path, e.g. `"sendMessage"`; `""` if the path had none. */
  readonly method: string;
  /** Token from the path (`/bot<token>/...`); `""` if the path had none. */
  readonly token: string;
  /** Parsed JSON body; `{}` if absent or not a JSON object. */
  readonly body: Record<string, unknown>;
}

/** A scripted HTTP reply. */
export interface FakeReply {
  readonly status: number;
  /** A string is sent as raw text (e.g. HTML); anything else is JSON-encoded. */
  readonly body: unknown;
  /** Defaults to `application/json`, or `text/html; charset=utf-8` for a string body. */
  readonly contentType?: string;
}

/** A scripted delay: the request is answered as usual, `delayMs` later (a slow API). */
export interface FakeDelay {
  readonly delayMs: number;
}

/** A running fake; see {@linkcode startFakeBotApi}. */
export interface FakeBotApi {
  /** Base URL, e.g. `"http://127.0.0.1:41234"`. */
  readonly url: string;
  /** Every request received, in order, failed ones included. */
  readonly calls: FakeCall[];
  /** Texts accepted by the default `sendMessage` behaviour, in order. */
  readonly delivered: string[];
  /** When each of `delivered` was accepted (`Date.now()`). */
  readonly deliveredAt: number[];
  /** `429`s answered by the flood control (not the scripted ones). */
  readonly floods: number;
  /**
   * An outage: `"html"` answers every request with an HTML `502` (a proxy whose upstream is
   * down); `"refuse"` closes the port, so connections are refused; `false` serves again on the
   * same port.
   */
  outage(mode: "html" | "refuse" | false): Promise<void>;
  /**
   * Scripted behaviours for the next requests, consumed one per request;
   * when empty the fake behaves like the real API. `"hang"` never answers
   * (until {@linkcode FakeBotApi.close}); a {@linkcode FakeDelay} answers as usual, later.
   */
  readonly script: Array<FakeReply | "hang" | FakeDelay>;
  /**
   * `sendMessage` texts matching this are refused `400 Bad Request: message is too long`, every
   * time (a message Telegram will not take as written); `undefined`: none.
   */
  refuse: RegExp | undefined;
  /**
   * The chat's forum topics (`message_thread_id`s) that exist; a `sendMessage` naming another
   * (General's 1 included, a deleted topic) is refused `400 Bad Request: message thread not found`,
   * as Telegram does. Empty by default.
   */
  readonly topics: Set<number>;
  /** The `message_thread_id` of each of `delivered` (`undefined`: none given). */
  readonly deliveredTopics: (number | undefined)[];
  /**
   * The chats `sendMessage` and `getChat` reach: {@linkcode FakeBotApiOptions.chatId} and any
   * added (several forms, each to its own chat); another is `400 Bad Request: chat not found`.
   */
  readonly chats: Set<number>;
  /** The chat of each of `delivered`. */
  readonly deliveredChats: number[];
  /** What `getUpdates` returns as its `result`. */
  updates: unknown[];
  /** `getMe` calls answered aside (see {@linkcode FakeBotApiOptions.scriptGetMe}). */
  readonly getMeCalls: number;
  /** Stops the server, first releasing any hanging requests. */
  close(): Promise<void>;
}

/** Options for {@linkcode startFakeBotApi}. */
export interface FakeBotApiOptions {
  /** The only token accepted. */
  readonly token: string;
  /** The only chat `sendMessage` can reach. */
  readonly chatId: number;
  /** `username` reported by `getMe`; default `"contactd_test_bot"`. */
  readonly botUsername?: string;
  /** Telegram's flood control, on by default (`false`: none). */
  readonly floodControl?: FloodControl | false;
  /**
   * `true`: `getMe` is like any other method, recorded in `calls` and answered from `script`
   * (the commands' tests). Default: answered by the fake itself and only counted in
   * `getMeCalls`, so the service's one `getMe` at start shifts nothing a test scripts or counts
   * (an outage and a wrong token still apply to it).
   */
  readonly scriptGetMe?: boolean;
}

/**
 * Flood control as Telegram publishes it: per chat about one message a second with short bursts,
 * at most 20 a minute to a group, about 30 a second overall. Past a limit, every `sendMessage` to
 * that chat is answered `429` with `parameters.retry_after` until the block ends.
 */
export interface FloodControl {
  /** Messages one chat may receive at once before the one-a-second rate applies. */
  readonly chatBurst: number;
  readonly chatIntervalMs: number;
  /** Per group (negative chat id), per minute. */
  readonly groupPerMinute: number;
  /** All chats, per second. */
  readonly overallPerSecond: number;
}

/** What the fake enforces unless told otherwise: a little more lenient than contactd's pacer. */
export const TELEGRAM_FLOOD_CONTROL: FloodControl = {
  chatBurst: 5,
  chatIntervalMs: 1000,
  groupPerMinute: 20,
  overallPerSecond: 30,
};

/** A Bot API error reply, e.g. `apiError(400, "Bad Request: chat not found")`. */
export function apiError(
  code: number,
  description: string,
  parameters?: { migrate_to_chat_id?: number; retry_after?: number },
): FakeReply {
  return {
    status: code,
    body: { ok: false, error_code: code, description, ...(parameters ? { parameters } : {}) },
  };
}

/** Flood control: a 429 asking to retry after `seconds`. */
export function tooManyRequests(seconds: number): FakeReply {
  return apiError(429, `Too Many Requests: retry after ${seconds}`, { retry_after: seconds });
}

/** The group became a supergroup with id `newChatId`. */
export function chatMigrated(newChatId: number): FakeReply {
  return apiError(400, "Bad Request: group chat was upgraded to a supergroup chat", {
    migrate_to_chat_id: newChatId,
  });
}

/** An HTML error page, as a proxy in front of the API would send; default 502. */
export function htmlError(status = 502): FakeReply {
  return { status, body: `<html><body><h1>${status} Bad Gateway</h1></body></html>` };
}

/** A `sendMessage` success, for scripting "this part gets through, the next one fails". */
export function accepted(): FakeReply {
  return { status: 200, body: { ok: true, result: { message_id: 1, date: 0, chat: { id: 1 } } } };
}

/** A raw TCP server on 127.0.0.1; see {@linkcode startCutOffServer}. */
export interface CutOffServer {
  readonly url: string;
  /** Requests received (each one answered with half a reply). */
  readonly requests: number;
  close(): void;
}

/**
 * A server that reads each request, sends a `200` status line, headers promising 200 bytes and
 * only the first few of them, then closes the connection: a reply cut off mid-response, which
 * `Deno.serve` cannot produce on purpose.
 */
export function startCutOffServer(): CutOffServer {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n";
  const half = new TextEncoder().encode(`${head}{"ok":true,"res`);
  let requests = 0;
  (async () => {
    for await (const conn of listener) {
      (async () => {
        try {
          await conn.read(new Uint8Array(65_536)); // the request, or enough of it
          requests++;
          await conn.write(half);
        } catch {
          // The client gave up first; nothing to do.
        } finally {
          conn.close();
        }
      })();
    }
  })().catch(() => {}); // ends when the listener closes
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    get requests() {
      return requests;
    },
    close: () => listener.close(),
  };
}

/** Starts the fake on 127.0.0.1, on a free port. */
export function startFakeBotApi(options: FakeBotApiOptions): FakeBotApi {
  const hanging = new Set<() => void>();
  let nextMessageId = 1;
  let closed: Promise<void> | undefined;
  let down: "html" | false = false;
  let floods = 0;
  let getMeCalls = 0;
  const flood = options.floodControl === false
    ? undefined
    : (options.floodControl ?? TELEGRAM_FLOOD_CONTROL);
  const buckets = new Map<number, { tokens: number; at: number; blockedUntil: number }>();
  const groupTimes = new Map<number, number[]>();
  let overallTimes: number[] = [];

  /** Flood control for one message to `chatId` now: a 429 reply, or undefined to accept it. */
  const floodCheck = (chatId: number): Response | undefined => {
    if (flood === undefined) return undefined;
    const now = Date.now();
    const bucket = buckets.get(chatId) ?? { tokens: flood.chatBurst, at: now, blockedUntil: 0 };
    buckets.set(chatId, bucket);
    bucket.tokens = Math.min(
      flood.chatBurst,
      bucket.tokens + (now - bucket.at) / flood.chatIntervalMs,
    );
    bucket.at = now;
    const group = groupTimes.get(chatId) ?? [];
    groupTimes.set(chatId, group.filter((t) => t > now - 60_000));
    overallTimes = overallTimes.filter((t) => t > now - 1000);
    let until = bucket.blockedUntil;
    if (until <= now && bucket.tokens < 1) until = now + (1 - bucket.tokens) * flood.chatIntervalMs;
    if (until <= now && chatId < 0 && groupTimes.get(chatId)!.length >= flood.groupPerMinute) {
      until = groupTimes.get(chatId)![0]! + 60_000;
    }
    if (until <= now && overallTimes.length >= flood.overallPerSecond) {
      until = overallTimes[0]! + 1000;
    }
    if (until > now) {
      bucket.blockedUntil = until;
      floods++;
      return reply(tooManyRequests(Math.ceil((until - now) / 1000)));
    }
    bucket.tokens -= 1;
    if (chatId < 0) groupTimes.get(chatId)!.push(now);
    overallTimes.push(now);
    return undefined;
  };

  const handler = async (request: Request): Promise<Response> => {
    const match = new URL(request.url).pathname.match(/^\/bot([^/]*)\/([^/]*)$/);
    const token = decodeOrRaw(match?.[1] ?? "");
    const method = match?.[2] ?? "";
    const body = await readBody(request);
    const aside = method === "getMe" && options.scriptGetMe !== true;
    if (aside) getMeCalls++;
    else fake.calls.push({ method, token, body });

    if (down === "html") return reply(htmlError(502));
    const scripted = aside ? undefined : fake.script.shift();
    if (scripted === "hang") {
      // Released by close(), so server.shutdown() has nothing left to wait for.
      await new Promise<void>((resolve) => hanging.add(resolve));
      return reply(apiError(503, "Service Unavailable: fake is closing"));
    }
    if (typeof scripted === "object" && "delayMs" in scripted) {
      // Cut short by close(), like a hang.
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          hanging.delete(done);
          resolve();
        };
        const timer = setTimeout(done, scripted.delayMs);
        hanging.add(done);
      });
    } else if (scripted !== undefined) return reply(scripted);

    if (match === null) return reply(apiError(404, "Not Found"));
    if (token !== options.token) return reply(apiError(401, "Unauthorized"));
    switch (method) {
      case "getMe":
        return ok({
          id: Number(options.token.split(":")[0]) || 1,
          is_bot: true,
          first_name: "contactd test",
          username: options.botUsername ?? "contactd_test_bot",
        });
      case "getUpdates":
        return ok(fake.updates);
      case "getChat":
        return fake.chats.has(Number(body.chat_id))
          ? ok(
            Number(body.chat_id) < 0
              ? {
                id: Number(body.chat_id),
                type: "supergroup",
                title: "contactd test group",
                // A group with topics is a forum.
                ...(fake.topics.size > 0 ? { is_forum: true } : {}),
              }
              : { id: Number(body.chat_id), type: "private", first_name: "Test" },
          )
          : reply(apiError(400, "Bad Request: chat not found"));
      case "sendMessage":
        return sendMessage(body);
      default:
        return reply(apiError(404, "Not Found"));
    }
  };

  const sendMessage = (body: Record<string, unknown>): Response => {
    // The real API also accepts chat ids as strings.
    if (!fake.chats.has(Number(body.chat_id))) {
      return reply(apiError(400, "Bad Request: chat not found"));
    }
    const text = typeof body.text === "string" ? body.text : "";
    if (text.trim() === "") return reply(apiError(400, "Bad Request: message text is empty"));
    if (text.length > 4096 || fake.refuse?.test(text) === true) {
      return reply(apiError(400, "Bad Request: message is too long"));
    }
    const topic = body.message_thread_id;
    if (topic !== undefined && !(typeof topic === "number" && fake.topics.has(topic))) {
      return reply(apiError(400, "Bad Request: message thread not found"));
    }
    const limited = floodCheck(Number(body.chat_id));
    if (limited !== undefined) return limited;
    fake.deliveredTopics.push(topic as number | undefined);
    fake.deliveredChats.push(Number(body.chat_id));
    fake.delivered.push(text);
    fake.deliveredAt.push(Date.now());
    return ok({
      message_id: nextMessageId++,
      date: Math.floor(Date.now() / 1000),
      chat: { id: Number(body.chat_id), type: "private" },
      text,
    });
  };

  let server: Deno.HttpServer<Deno.NetAddr> | undefined = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    handler,
  );
  const port = server.addr.port;
  const stop = async () => {
    for (const release of hanging) release();
    hanging.clear();
    await server?.shutdown();
    server = undefined;
  };

  const fake: FakeBotApi = {
    url: `http://127.0.0.1:${port}`,
    calls: [],
    delivered: [],
    deliveredAt: [],
    get floods() {
      return floods;
    },
    get getMeCalls() {
      return getMeCalls;
    },
    script: [],
    refuse: undefined,
    topics: new Set(),
    deliveredTopics: [],
    chats: new Set([options.chatId]),
    deliveredChats: [],
    updates: [],
    async outage(mode) {
      down = mode === "html" ? "html" : false;
      if (mode === "refuse") await stop();
      if (mode !== "refuse" && server === undefined) {
        server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, handler);
      }
    },
    close() {
      closed ??= stop();
      return closed;
    },
  };
  return fake;
}

function ok(result: unknown): Response {
  return reply({ status: 200, body: { ok: true, result } });
}

function reply({ status, body, contentType }: FakeReply): Response {
  const raw = typeof body === "string";
  return new Response(raw ? body : JSON.stringify(body), {
    status,
    headers: {
      "content-type": contentType ?? (raw ? "text/html; charset=utf-8" : "application/json"),
    },
  });
}

/** The JSON body as an object; anything else (absent, malformed, an array) as `{}`. */
async function readBody(request: Request): Promise<Record<string, unknown>> {
  try {
    const value: unknown = JSON.parse(await request.text());
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? value as Record<string, unknown>
      : {};
  } catch {
    return {};
  }
}

/** Percent-decodes a path segment; a malformed one is kept as is (and so fails the token check). */
function decodeOrRaw(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
