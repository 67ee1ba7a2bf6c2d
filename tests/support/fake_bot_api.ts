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

/** A button row layout as the fake keeps it (the Bot API's `InlineKeyboardMarkup`). */
export interface FakeMarkup {
  readonly inline_keyboard: readonly (readonly { text: string; callback_data: string }[])[];
}

/** A message in a chat, as the fake keeps it (key `"<chat id>:<message id>"`). */
export interface FakeMessage {
  /** The text (`""` for a message without text, a photo). */
  text: string;
  /** Its buttons; `undefined`: none. */
  replyMarkup: FakeMarkup | undefined;
  /** The message it replies to (same chat), if any. */
  readonly replyTo?: number;
  /** Its forum topic, if any. */
  readonly topic?: number;
  /** The user who wrote it (built by an update helper); absent for the bot's own messages. */
  readonly from?: number;
}

/** An edit the fake applied (`editMessageText`, `editMessageReplyMarkup`). */
export interface FakeEdit {
  readonly method: "editMessageText" | "editMessageReplyMarkup";
  readonly chatId: number;
  readonly messageId: number;
  /** The new text (`editMessageText` only). */
  readonly text?: string;
  /** The buttons after the edit; `undefined`: none. */
  readonly replyMarkup: FakeMarkup | undefined;
}

/** A document `sendDocument` accepted (its message is in `messages`, text its caption). */
export interface FakeDocument {
  readonly chatId: number;
  readonly messageId: number;
  /** The file name the upload gave. */
  readonly name: string;
  /** The part's `Content-Type`. */
  readonly type: string;
  /** The bytes, as received. */
  readonly bytes: Uint8Array;
  readonly caption: string;
  readonly replyTo?: number;
  readonly topic?: number;
}

/** The most bytes `sendDocument` takes from a bot (Telegram's 50 MB). */
export const FAKE_UPLOAD_LIMIT = 50 * 1024 * 1024;

/** An `answerCallbackQuery` the fake accepted. */
export interface FakeToast {
  readonly queryId: string;
  readonly text: string;
}

/** What {@linkcode FakeBotApi.pressUpdate} builds: a press on a button of a message. */
export interface PressSpec {
  readonly chatId: number;
  readonly messageId: number;
  /** The button's `callback_data` (a forged one is fine). */
  readonly data: string;
  /** The presser; default: the chat's id for a private chat, else {@linkcode DEFAULT_USER_ID}. */
  readonly fromId?: number;
  /** The presser's `first_name`; default `"Owner"`. */
  readonly firstName?: string;
}

/** What {@linkcode FakeBotApi.commandUpdate} builds: a text message (a command) in a chat. */
export interface CommandSpec {
  readonly chatId: number;
  readonly text: string;
  readonly fromId?: number;
  readonly firstName?: string;
  /** The forum topic it is written in. */
  readonly topicId?: number;
}

/** What {@linkcode FakeBotApi.replyUpdate} builds: a reply to a message of the chat. */
export interface ReplySpec {
  readonly chatId: number;
  /** The message replied to (its `reply_to_message` is taken from `messages` when known). */
  readonly replyTo: number;
  /** The reply's text; `""`: a photo without text. */
  readonly text: string;
  readonly fromId?: number;
  readonly firstName?: string;
  readonly topicId?: number;
}

/** The presser or writer of updates built by the helpers, in a group, unless told otherwise. */
export const DEFAULT_USER_ID = 5_550_001;

/** Telegram's words for a `409` from `getUpdates`, by cause. */
export const CONFLICT_DESCRIPTIONS = {
  webhook:
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
  poller:
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
} as const;

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
  /**
   * The updates not yet confirmed, oldest first: what `getUpdates` answers from. A test may set
   * it outright (the `chat-id` command reads it without an offset, so nothing is confirmed) or
   * add to it with {@linkcode FakeBotApi.pushUpdate}. A `getUpdates` with an `offset` drops the
   * updates before it (confirms them), as Telegram does.
   */
  updates: unknown[];
  /**
   * Adds `update` (without `update_id`: the fake assigns the next one, higher than any before)
   * and wakes a waiting long poll. Returns the `update_id`.
   */
  pushUpdate(update: Record<string, unknown>): number;
  /** A `callback_query` update; the query id is one `answerCallbackQuery` then accepts (once). */
  pressUpdate(spec: PressSpec): Record<string, unknown>;
  /** A `message` update with `text` (a new message of the chat, kept in `messages`). */
  commandUpdate(spec: CommandSpec): Record<string, unknown>;
  /** A `message` update replying to `replyTo` (a new message of the chat, kept in `messages`). */
  replyUpdate(spec: ReplySpec): Record<string, unknown>;
  /**
   * `getUpdates` answers `409 Conflict` with Telegram's words while this is set: `"webhook"` (a
   * webhook is active), `"poller"` (another process polls); `false`: served. A poll still waiting
   * when another arrives is also ended with the `"poller"` conflict, as Telegram does.
   */
  conflict: false | "webhook" | "poller";
  /** The `offset` of every `getUpdates` received, in order (`undefined`: none given). */
  readonly polls: (number | undefined)[];
  /**
   * Every message of every chat, by `"<chat id>:<message id>"`: the bot's (from `sendMessage`,
   * edited in place) and the users' (from the update helpers); deleted ones removed.
   */
  readonly messages: Map<string, FakeMessage>;
  /** Edits applied, in order. */
  readonly edits: FakeEdit[];
  /** Toasts (`answerCallbackQuery`) accepted, in order. */
  readonly toasts: FakeToast[];
  /** Documents accepted (`sendDocument`, multipart), in order. */
  readonly documents: FakeDocument[];
  /**
   * `sendDocument` uploads whose file name matches this are refused `400 Bad Request: wrong file
   * type` (a file Telegram will not take); `undefined`: none. Over {@linkcode FAKE_UPLOAD_LIMIT}
   * bytes is `413 Request Entity Too Large`, always.
   */
  refuseDocument: RegExp | undefined;
  /** Messages deleted (`deleteMessage`), in order. */
  readonly deletions: { readonly chatId: number; readonly messageId: number }[];
  /** The administrators' user ids of each group, for `getChatAdministrators`; none by default. */
  readonly admins: Map<number, number[]>;
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
  /**
   * `true`: `getUpdates` is like any other method, recorded in `calls` and answered from
   * `script` (the `chat-id` command's tests). `false`: answered by the fake itself (the service's
   * long polls: recorded in `polls` only, so they shift nothing a test scripts or counts; an
   * outage, a wrong token and {@linkcode FakeBotApi.conflict} still apply). Default: as
   * `scriptGetMe`.
   */
  readonly scriptGetUpdates?: boolean;
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
  /** The next message id of each chat. */
  const nextIds = new Map<number, number>();
  const newMessageId = (chatId: number): number => {
    const id = nextIds.get(chatId) ?? 1;
    nextIds.set(chatId, id + 1);
    return id;
  };
  /** When each message of `messages` was sent, in Unix seconds. */
  const dates = new Map<string, number>();
  /** Query ids issued by pressUpdate and not yet answered. */
  const queries = new Set<string>();
  let nextQuery = 1;
  let lastUpdateId = 0;
  /** Long polls waiting for an update: each is woken, or ended with a conflict. */
  const polling = new Set<(how: "wake" | "terminate") => void>();
  const scriptUpdates = options.scriptGetUpdates ?? options.scriptGetMe === true;
  const botId = Number(options.token.split(":")[0]) || 1;
  const botUsername = options.botUsername ?? "contactd_test_bot";
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
    const form = isMultipart(request) ? await request.formData().catch(() => undefined) : undefined;
    const body = form === undefined ? await readBody(request) : formFields(form);
    const aside = (method === "getMe" && options.scriptGetMe !== true) ||
      (method === "getUpdates" && !scriptUpdates);
    if (method === "getMe" && aside) getMeCalls++;
    else if (!aside) fake.calls.push({ method, token, body });

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
          id: botId,
          is_bot: true,
          first_name: "contactd test",
          username: botUsername,
        });
      case "getUpdates":
        return await getUpdates(body);
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
      case "sendDocument":
        return sendDocument(body, form?.get("document"));
      case "editMessageText":
      case "editMessageReplyMarkup":
        return edit(method, body);
      case "answerCallbackQuery":
        return answerCallbackQuery(body);
      case "deleteMessage":
        return deleteMessage(body);
      case "getChatAdministrators":
        return getChatAdministrators(body);
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
    const chatId = Number(body.chat_id);
    const markup = readMarkup(body.reply_markup);
    if (markup === "invalid") return reply(apiError(400, "Bad Request: BUTTON_DATA_INVALID"));
    const replyTo = readReplyTo(chatId, body.reply_parameters);
    if (replyTo === "invalid") {
      return reply(apiError(400, "Bad Request: message to be replied not found"));
    }
    const limited = floodCheck(chatId);
    if (limited !== undefined) return limited;
    fake.deliveredTopics.push(topic as number | undefined);
    fake.deliveredChats.push(chatId);
    fake.delivered.push(text);
    fake.deliveredAt.push(Date.now());
    const messageId = newMessageId(chatId);
    store(chatId, messageId, {
      text,
      replyMarkup: markup,
      ...(replyTo === undefined ? {} : { replyTo }),
      ...(topic === undefined ? {} : { topic: topic as number }),
    });
    return ok(messageObject(chatId, messageId, true));
  };

  /** `sendDocument` as multipart: the file kept byte for byte, paced like `sendMessage`. */
  const sendDocument = async (
    body: Record<string, unknown>,
    file: FormDataEntryValue | null | undefined,
  ): Promise<Response> => {
    const chatId = Number(body.chat_id);
    if (!fake.chats.has(chatId)) return reply(apiError(400, "Bad Request: chat not found"));
    if (!(file instanceof File)) {
      return reply(apiError(400, "Bad Request: there is no document in the request"));
    }
    if (file.size > FAKE_UPLOAD_LIMIT) return reply(apiError(413, "Request Entity Too Large"));
    if (fake.refuseDocument?.test(file.name) === true) {
      return reply(apiError(400, "Bad Request: wrong file type"));
    }
    const topic = body.message_thread_id === undefined ? undefined : Number(body.message_thread_id);
    if (topic !== undefined && !fake.topics.has(topic)) {
      return reply(apiError(400, "Bad Request: message thread not found"));
    }
    const replyTo = readReplyTo(chatId, body.reply_parameters);
    if (replyTo === "invalid") {
      return reply(apiError(400, "Bad Request: message to be replied not found"));
    }
    const limited = floodCheck(chatId);
    if (limited !== undefined) return limited;
    const caption = typeof body.caption === "string" ? body.caption : "";
    const messageId = newMessageId(chatId);
    const bytes = new Uint8Array(await file.arrayBuffer());
    fake.documents.push({
      chatId,
      messageId,
      name: file.name,
      type: file.type,
      bytes,
      caption,
      ...(replyTo === undefined ? {} : { replyTo }),
      ...(topic === undefined ? {} : { topic }),
    });
    store(chatId, messageId, {
      text: caption,
      replyMarkup: undefined,
      ...(replyTo === undefined ? {} : { replyTo }),
      ...(topic === undefined ? {} : { topic }),
    });
    return ok(messageObject(chatId, messageId, true));
  };

  const key = (chatId: number, messageId: number) => `${chatId}:${messageId}`;

  const store = (chatId: number, messageId: number, message: FakeMessage) => {
    fake.messages.set(key(chatId, messageId), message);
    dates.set(key(chatId, messageId), Math.floor(Date.now() / 1000));
  };

  /** `reply_parameters`' message id: `undefined` none (or gone, allowed), `"invalid"` refused. */
  const readReplyTo = (chatId: number, value: unknown): number | undefined | "invalid" => {
    if (value === undefined) return undefined;
    if (!isObject(value) || typeof value.message_id !== "number") return "invalid";
    if (fake.messages.has(key(chatId, value.message_id))) return value.message_id;
    return value.allow_sending_without_reply === true ? undefined : "invalid";
  };

  /** A message of `messages` as the Bot API's `Message` (`reply_to_message` one level deep). */
  const messageObject = (
    chatId: number,
    messageId: number,
    nested: boolean,
  ): Record<string, unknown> => {
    const message = fake.messages.get(key(chatId, messageId));
    const chat = chatId < 0
      ? { id: chatId, type: "supergroup", title: "contactd test group" }
      : { id: chatId, type: "private", first_name: "Test" };
    if (message === undefined) return { message_id: messageId, chat, date: 0 }; // inaccessible
    const from = message.from === undefined
      ? { id: botId, is_bot: true, first_name: "contactd test", username: botUsername }
      : { id: message.from, is_bot: false, first_name: "Owner" };
    const replied = message.replyTo;
    return {
      message_id: messageId,
      from,
      chat,
      date: dates.get(key(chatId, messageId)) ?? 0,
      ...(message.topic === undefined
        ? {}
        : { message_thread_id: message.topic, is_topic_message: true }),
      ...(message.text === "" && message.from !== undefined
        ? { photo: [{ file_id: "photo", file_unique_id: "p", width: 1, height: 1 }] }
        : { text: message.text }),
      ...(message.replyMarkup === undefined || message.replyMarkup.inline_keyboard.length === 0
        ? {}
        : { reply_markup: message.replyMarkup }),
      ...(replied === undefined || !nested
        ? {}
        : { reply_to_message: messageObject(chatId, replied, false) }),
    };
  };

  const edit = (
    method: "editMessageText" | "editMessageReplyMarkup",
    body: Record<string, unknown>,
  ): Response => {
    const chatId = Number(body.chat_id);
    if (!fake.chats.has(chatId)) return reply(apiError(400, "Bad Request: chat not found"));
    const messageId = Number(body.message_id);
    const message = fake.messages.get(key(chatId, messageId));
    if (message === undefined) {
      return reply(apiError(400, "Bad Request: message to edit not found"));
    }
    if (message.from !== undefined) {
      return reply(apiError(400, "Bad Request: message can't be edited"));
    }
    const markup = readMarkup(body.reply_markup);
    if (markup === "invalid") return reply(apiError(400, "Bad Request: BUTTON_DATA_INVALID"));
    let text = message.text;
    if (method === "editMessageText") {
      text = typeof body.text === "string" ? body.text : "";
      if (text.trim() === "") return reply(apiError(400, "Bad Request: message text is empty"));
      if (text.length > 4096) return reply(apiError(400, "Bad Request: MESSAGE_TOO_LONG"));
    }
    if (text === message.text && sameMarkup(markup, message.replyMarkup)) {
      return reply(apiError(400, NOT_MODIFIED));
    }
    const limited = floodCheck(chatId);
    if (limited !== undefined) return limited;
    message.text = text;
    message.replyMarkup = markup;
    fake.edits.push({
      method,
      chatId,
      messageId,
      ...(method === "editMessageText" ? { text } : {}),
      replyMarkup: markup,
    });
    return ok(messageObject(chatId, messageId, true));
  };

  const answerCallbackQuery = (body: Record<string, unknown>): Response => {
    const queryId = body.callback_query_id;
    if (typeof queryId !== "string" || !queries.delete(queryId)) {
      return reply(
        apiError(
          400,
          "Bad Request: query is too old and response timeout expired or query ID is invalid",
        ),
      );
    }
    const text = typeof body.text === "string" ? body.text : "";
    if (text.length > 200) return reply(apiError(400, "Bad Request: MESSAGE_TOO_LONG"));
    fake.toasts.push({ queryId, text });
    return ok(true);
  };

  const deleteMessage = (body: Record<string, unknown>): Response => {
    const chatId = Number(body.chat_id);
    const messageId = Number(body.message_id);
    if (!fake.chats.has(chatId)) return reply(apiError(400, "Bad Request: chat not found"));
    if (!fake.messages.delete(key(chatId, messageId))) {
      return reply(apiError(400, "Bad Request: message to delete not found"));
    }
    fake.deletions.push({ chatId, messageId });
    return ok(true);
  };

  const getChatAdministrators = (body: Record<string, unknown>): Response => {
    const chatId = Number(body.chat_id);
    if (!fake.chats.has(chatId)) return reply(apiError(400, "Bad Request: chat not found"));
    if (chatId > 0) {
      return reply(apiError(400, "Bad Request: there are no administrators in the private chat"));
    }
    return ok(
      (fake.admins.get(chatId) ?? []).map((id, i) => ({
        status: i === 0 ? "creator" : "administrator",
        user: { id, is_bot: false, first_name: `Admin ${id}` },
      })),
    );
  };

  /** The pending updates a poll with `body` gets, after confirming those before its offset. */
  const pendingFor = (body: Record<string, unknown>): unknown[] => {
    const offset = typeof body.offset === "number" ? body.offset : undefined;
    if (offset !== undefined) {
      fake.updates = fake.updates.filter((update) => {
        const id = updateIdOf(update);
        return id === undefined || id >= offset;
      });
    }
    const allowed = Array.isArray(body.allowed_updates) && body.allowed_updates.length > 0
      ? new Set(body.allowed_updates)
      : undefined;
    const limit = typeof body.limit === "number" && body.limit >= 1 ? body.limit : 100;
    const pending = fake.updates.filter((update) =>
      allowed === undefined || !isObject(update) ||
      Object.keys(update).some((type) => type !== "update_id" && allowed.has(type))
    ).slice(0, limit);
    if (offset !== undefined) {
      // Junk without an update_id cannot be confirmed: it is answered once, then gone.
      fake.updates = fake.updates.filter((update) =>
        updateIdOf(update) !== undefined || !pending.includes(update)
      );
    }
    return pending;
  };

  const getUpdates = async (body: Record<string, unknown>) => {
    fake.polls.push(typeof body.offset === "number" ? body.offset : undefined);
    // A new poll ends the one still waiting, as Telegram does.
    for (const waiting of polling) waiting("terminate");
    if (fake.conflict !== false) {
      return reply(apiError(409, CONFLICT_DESCRIPTIONS[fake.conflict]));
    }
    const timeoutS = typeof body.timeout === "number" && body.timeout > 0 ? body.timeout : 0;
    const deadline = Date.now() + timeoutS * 1000;
    let pending = pendingFor(body);
    while (pending.length === 0 && Date.now() < deadline) {
      const how = await new Promise<"wake" | "terminate" | "done">((resolve) => {
        const done = (how: "wake" | "terminate" | "done") => {
          clearTimeout(timer);
          polling.delete(wake);
          hanging.delete(release);
          resolve(how);
        };
        const wake = (how: "wake" | "terminate") => done(how);
        const release = () => done("done");
        const timer = setTimeout(release, deadline - Date.now());
        polling.add(wake);
        hanging.add(release);
      });
      if (how === "terminate") return reply(apiError(409, CONFLICT_DESCRIPTIONS.poller));
      if (how === "done" && fake.conflict !== false) {
        return reply(apiError(409, CONFLICT_DESCRIPTIONS[fake.conflict]));
      }
      pending = pendingFor(body);
      if (how === "done") break;
    }
    return ok(pending);
  };

  const userOf = (chatId: number, fromId: number | undefined) =>
    fromId ?? (chatId > 0 ? chatId : DEFAULT_USER_ID);

  const userMessage = (
    spec: { chatId: number; text: string; fromId?: number; firstName?: string; topicId?: number },
    replyTo: number | undefined,
  ): Record<string, unknown> => {
    const from = userOf(spec.chatId, spec.fromId);
    const messageId = newMessageId(spec.chatId);
    store(spec.chatId, messageId, {
      text: spec.text,
      replyMarkup: undefined,
      from,
      ...(replyTo === undefined ? {} : { replyTo }),
      ...(spec.topicId === undefined ? {} : { topic: spec.topicId }),
    });
    const message = messageObject(spec.chatId, messageId, true);
    message.from = { id: from, is_bot: false, first_name: spec.firstName ?? "Owner" };
    if (replyTo !== undefined && message.reply_to_message === undefined) {
      message.reply_to_message = messageObject(spec.chatId, replyTo, false);
    }
    return { message };
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
    pushUpdate(update) {
      for (const pending of fake.updates) {
        lastUpdateId = Math.max(lastUpdateId, updateIdOf(pending) ?? 0);
      }
      const updateId = ++lastUpdateId;
      fake.updates.push({ update_id: updateId, ...update });
      for (const waiting of polling) waiting("wake");
      return updateId;
    },
    pressUpdate(spec) {
      const queryId = `${botId}${String(nextQuery++).padStart(6, "0")}`;
      queries.add(queryId);
      const from = userOf(spec.chatId, spec.fromId);
      return {
        callback_query: {
          id: queryId,
          from: { id: from, is_bot: false, first_name: spec.firstName ?? "Owner" },
          message: messageObject(spec.chatId, spec.messageId, false),
          chat_instance: `ci${spec.chatId}`,
          data: spec.data,
        },
      };
    },
    commandUpdate(spec) {
      return userMessage(spec, undefined);
    },
    replyUpdate(spec) {
      return userMessage(spec, spec.replyTo);
    },
    conflict: false,
    polls: [],
    messages: new Map(),
    edits: [],
    toasts: [],
    deletions: [],
    documents: [],
    refuseDocument: undefined,
    admins: new Map(),
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

/** Telegram's words for an edit that changes nothing. */
const NOT_MODIFIED =
  "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message";

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function updateIdOf(update: unknown): number | undefined {
  return isObject(update) && typeof update.update_id === "number" ? update.update_id : undefined;
}

/**
 * `reply_markup` as an inline keyboard: `undefined` when absent (or an empty keyboard),
 * `"invalid"` when it is not rows of `{text, callback_data}` with `callback_data` of 1 to 64
 * bytes, as Telegram refuses.
 */
function readMarkup(value: unknown): FakeMarkup | undefined | "invalid" {
  if (value === undefined) return undefined;
  if (!isObject(value) || !Array.isArray(value.inline_keyboard)) return "invalid";
  const rows: { text: string; callback_data: string }[][] = [];
  for (const row of value.inline_keyboard) {
    if (!Array.isArray(row)) return "invalid";
    const buttons: { text: string; callback_data: string }[] = [];
    for (const button of row) {
      if (!isObject(button) || typeof button.text !== "string" || button.text === "") {
        return "invalid";
      }
      const data = button.callback_data;
      if (typeof data !== "string") return "invalid";
      const bytes = new TextEncoder().encode(data).length;
      if (bytes < 1 || bytes > 64) return "invalid";
      buttons.push({ text: button.text, callback_data: data });
    }
    if (buttons.length > 0) rows.push(buttons);
  }
  return rows.length === 0 ? undefined : { inline_keyboard: rows };
}

function sameMarkup(a: FakeMarkup | undefined, b: FakeMarkup | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
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

function isMultipart(request: Request): boolean {
  return /^multipart\/form-data/i.test(request.headers.get("content-type") ?? "");
}

/** A multipart request's text fields (JSON ones, such as `reply_parameters`, parsed). */
function formFields(form: FormData): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [name, value] of form) {
    if (typeof value !== "string") continue;
    try {
      fields[name] = name === "reply_parameters" ? JSON.parse(value) : value;
    } catch {
      fields[name] = value;
    }
  }
  return fields;
}

/** Percent-decodes a path segment; a malformed one is kept as is (and so fails the token check). */
function decodeOrRaw(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
