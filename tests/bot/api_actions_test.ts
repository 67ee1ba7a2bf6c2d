import assert from "node:assert/strict";
import {
  answerCallbackQuery,
  type BotApiOptions,
  type BotApiResult,
  callBotApi,
  deleteMessage,
  editMessageReplyMarkup,
  editMessageText,
  getChatAdministrators,
  getUpdates,
  isConflict,
  isNotModified,
  MAX_TOAST_LENGTH,
  messageIdOf,
  sendMessage,
} from "../../lib/bot/api.ts";
import { keyboardFor } from "../../lib/bot/keyboard.ts";
import { ALLOWED_UPDATES } from "../../lib/bot/updates.ts";

const TOKEN = "123456:ABC-def_ghi";

interface ApiCall {
  readonly method: string;
  readonly body: Record<string, unknown>;
  readonly signal: AbortSignal | undefined;
}

/** A fetch answering each call with `answer(call)` (default: `{ok: true, result: true}`). */
function recordingFetch(
  answer: (call: ApiCall) => Response | Promise<Response> = () => json(200, true),
): { fetch: typeof fetch; calls: ApiCall[] } {
  const calls: ApiCall[] = [];
  const fake: typeof fetch = (input, init) => {
    const call = {
      method: String(input).split("/").at(-1)!,
      body: JSON.parse(String(init?.body ?? "{}")),
      signal: init?.signal ?? undefined,
    };
    calls.push(call);
    return Promise.resolve(answer(call));
  };
  return { fetch: fake, calls };
}

function json(status: number, result: unknown, description?: string): Response {
  const body = status === 200
    ? { ok: true, result }
    : { ok: false, error_code: status, description };
  return new Response(JSON.stringify(body), { status });
}

function options(fetchFn: typeof fetch, extra: Partial<BotApiOptions> = {}): BotApiOptions {
  return {
    apiUrl: "https://api.telegram.example",
    token: TOKEN,
    timeoutMs: 10_000,
    fetch: fetchFn,
    ...extra,
  };
}

/** A fetch that answers only when its signal aborts (honouring it), as a long poll would. */
const HANGING: typeof fetch = (_input, init) =>
  new Promise((_resolve, reject) => {
    init?.signal?.addEventListener("abort", () => reject(init.signal?.reason));
  });

Deno.test("an aborted signal ends a call at once as aborted, without throwing", async () => {
  const controller = new AbortController();
  const pending = callBotApi(options(HANGING, { signal: controller.signal }), "getUpdates", {});
  controller.abort();
  assert.deepEqual(await pending, { ok: false, error: "aborted" });
});

Deno.test("an already aborted signal never calls fetch", async () => {
  const { fetch, calls } = recordingFetch();
  const result = await callBotApi(options(fetch, { signal: AbortSignal.abort() }), "getMe", {});
  assert.deepEqual(result, { ok: false, error: "aborted" });
  assert.equal(calls.length, 0);
});

Deno.test("an abort also ends a call whose fetch ignores the signal", async () => {
  const controller = new AbortController();
  const deaf: typeof fetch = () => new Promise(() => {});
  const pending = callBotApi(options(deaf, { signal: controller.signal }), "getMe", {});
  controller.abort();
  assert.deepEqual(await pending, { ok: false, error: "aborted" });
});

Deno.test("with a signal that never aborts, the time limit still ends the call as a timeout", async () => {
  const controller = new AbortController();
  const result = await callBotApi(
    options(HANGING, { signal: controller.signal, timeoutMs: 5 }),
    "getMe",
    {},
  );
  assert.deepEqual(result, { ok: false, error: "timeout" });
});

Deno.test("a call leaves no listener on the caller's signal, however it ends", async () => {
  const controller = new AbortController();
  let added = 0;
  let removed = 0;
  const signal = controller.signal;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = ((...args: Parameters<typeof add>) => {
    added++;
    add(...args);
  }) as typeof signal.addEventListener;
  signal.removeEventListener = ((...args: Parameters<typeof remove>) => {
    removed++;
    remove(...args);
  }) as typeof signal.removeEventListener;
  const { fetch } = recordingFetch();
  await callBotApi(options(fetch, { signal }), "getMe", {});
  await callBotApi(options(HANGING, { signal, timeoutMs: 5 }), "getMe", {});
  assert.equal(added, 2);
  assert.equal(removed, 2);
});

Deno.test("sendMessage attaches buttons and a reply that survives a deleted original", async () => {
  const { fetch, calls } = recordingFetch(() => json(200, { message_id: 77 }));
  const keyboard = keyboardFor("open", "k3x9q2ab");
  const result = await sendMessage(options(fetch), -100, "hi", 5, {
    replyMarkup: keyboard,
    replyTo: 12,
  });
  assert.equal(messageIdOf(result), 77);
  assert.deepEqual(calls[0]!.body, {
    chat_id: -100,
    message_thread_id: 5,
    text: "hi",
    link_preview_options: { is_disabled: true },
    reply_markup: keyboard,
    reply_parameters: { message_id: 12, allow_sending_without_reply: true },
  });
  assert.ok(!("parse_mode" in calls[0]!.body));
});

Deno.test("sendMessage without extra sends exactly what it always did", async () => {
  const { fetch, calls } = recordingFetch();
  await sendMessage(options(fetch), 7, "hi", undefined, {});
  assert.deepEqual(calls[0]!.body, {
    chat_id: 7,
    text: "hi",
    link_preview_options: { is_disabled: true },
  });
});

Deno.test("messageIdOf reads a positive safe message_id of a success only", () => {
  const ok = (result: unknown): BotApiResult => ({ ok: true, result });
  assert.equal(messageIdOf(ok({ message_id: 3, chat: { id: 1 } })), 3);
  for (
    const result of [true, null, [], { message_id: "3" }, { message_id: 0 }, { message_id: 1e300 }]
  ) {
    assert.equal(messageIdOf(ok(result)), undefined, JSON.stringify(result));
  }
  assert.equal(messageIdOf({ ok: false, error: "timeout" }), undefined);
});

Deno.test("editMessageText sends plain text without previews and the buttons it is given", async () => {
  const { fetch, calls } = recordingFetch();
  const keyboard = keyboardFor("handled", "k3x9q2ab");
  await editMessageText(options(fetch), -100, 12, "new *text*", keyboard);
  await editMessageText(options(fetch), -100, 12, "no buttons");
  assert.deepEqual(calls.map((call) => call.method), ["editMessageText", "editMessageText"]);
  assert.deepEqual(calls[0]!.body, {
    chat_id: -100,
    message_id: 12,
    text: "new *text*",
    link_preview_options: { is_disabled: true },
    reply_markup: keyboard,
  });
  assert.equal(Object.hasOwn(calls[1]!.body, "reply_markup"), false);
  assert.equal(Object.hasOwn(calls[0]!.body, "parse_mode"), false);
});

Deno.test("editMessageReplyMarkup, deleteMessage and answerCallbackQuery send what Telegram expects", async () => {
  const { fetch, calls } = recordingFetch();
  const keyboard = keyboardFor("spam", "k3x9q2ab");
  await editMessageReplyMarkup(options(fetch), -100, 12, keyboard);
  await deleteMessage(options(fetch), -100, 13);
  await answerCallbackQuery(options(fetch), "q1", "Marked as spam");
  assert.deepEqual(calls.map(({ method, body }) => ({ method, body })), [
    {
      method: "editMessageReplyMarkup",
      body: { chat_id: -100, message_id: 12, reply_markup: keyboard },
    },
    { method: "deleteMessage", body: { chat_id: -100, message_id: 13 } },
    {
      method: "answerCallbackQuery",
      body: { callback_query_id: "q1", text: "Marked as spam", show_alert: false },
    },
  ]);
});

Deno.test("a toast is one line within Telegram's 200 characters", async () => {
  const { fetch, calls } = recordingFetch();
  await answerCallbackQuery(options(fetch), "q1", "line\nbreak " + "x".repeat(300));
  const text = calls[0]!.body.text as string;
  assert.ok(text.length <= MAX_TOAST_LENGTH);
  assert.ok(text.startsWith("line break x") && text.endsWith("…"));
});

Deno.test("getChatAdministrators returns the administrators' user ids, skipping malformed entries", async () => {
  const { fetch } = recordingFetch(() =>
    json(200, [
      { status: "creator", user: { id: 1 } },
      { status: "administrator", user: { id: 2 } },
      { status: "administrator", user: { id: "3" } },
      { status: "administrator" },
      null,
    ])
  );
  assert.deepEqual(await getChatAdministrators(options(fetch), -100), {
    ok: true,
    userIds: [1, 2],
  });
  const { fetch: odd } = recordingFetch(() => json(200, { not: "a list" }));
  assert.deepEqual(await getChatAdministrators(options(odd), -100), {
    ok: false,
    error: "invalid getChatAdministrators reply",
  });
});

Deno.test("getUpdates asks with the offset, the long-poll timeout and the allowed updates", async () => {
  const { fetch, calls } = recordingFetch(() => json(200, [{ update_id: 5 }]));
  const result = await getUpdates(options(fetch), {
    offset: 5,
    timeoutS: 30,
    allowedUpdates: ALLOWED_UPDATES,
  });
  assert.deepEqual(result, { ok: true, updates: [{ update_id: 5 }] });
  assert.deepEqual(calls[0]!.body, {
    offset: 5,
    timeout: 30,
    allowed_updates: ["message", "callback_query"],
  });
  await getUpdates(options(fetch), { timeoutS: 0, allowedUpdates: [] });
  assert.equal(Object.hasOwn(calls[1]!.body, "offset"), false);
});

Deno.test("getUpdates' time limit is its long-poll timeout plus the call limit, not the call limit alone", async () => {
  const limits: number[] = [];
  const { setTimeout: realSet } = globalThis;
  globalThis.setTimeout = ((handler: () => void, ms?: number) => {
    limits.push(ms ?? 0);
    return realSet(handler, 0); // expire at once: only the limit asked for matters here
  }) as typeof setTimeout;
  let result;
  try {
    result = await getUpdates(options(HANGING, { timeoutMs: 4000 }), {
      timeoutS: 25,
      allowedUpdates: ALLOWED_UPDATES,
    });
  } finally {
    globalThis.setTimeout = realSet;
  }
  assert.deepEqual(limits, [29_000]);
  assert.deepEqual(result, { ok: false, error: "timeout" });
});

Deno.test("getUpdates ends at once when the shutdown signal aborts", async () => {
  const controller = new AbortController();
  const pending = getUpdates(options(HANGING, { signal: controller.signal }), {
    timeoutS: 50,
    allowedUpdates: ALLOWED_UPDATES,
  });
  controller.abort();
  assert.deepEqual(await pending, { ok: false, error: "aborted" });
});

Deno.test("getUpdates reports a result that is not a list as an invalid reply", async () => {
  const { fetch } = recordingFetch(() => json(200, { update_id: 1 }));
  assert.deepEqual(await getUpdates(options(fetch), { timeoutS: 1, allowedUpdates: [] }), {
    ok: false,
    error: "invalid getUpdates reply",
  });
});

Deno.test("a 409 from getUpdates is a conflict; other failures are not", async () => {
  const answers = [
    json(409, null, "Conflict: terminated by other getUpdates request"),
    json(400, null, "Bad Request: message is not modified"),
  ];
  const { fetch } = recordingFetch(() => answers.shift()!);
  const conflict = await getUpdates(options(fetch), { timeoutS: 1, allowedUpdates: [] });
  assert.equal(conflict.ok, false);
  assert.ok(!conflict.ok && isConflict(conflict));
  const other = await callBotApi(options(fetch), "getUpdates", {});
  assert.equal(isConflict(other), false);
  assert.equal(isConflict({ ok: true, result: [] }), false);
});

Deno.test("an edit that changes nothing is told apart from other 400s", async () => {
  const answers = [
    json(
      400,
      null,
      "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
    ),
    json(400, null, "Bad Request: message to edit not found"),
    json(409, null, "Conflict: message is not modified"),
  ];
  const { fetch } = recordingFetch(() => answers.shift()!);
  const results = [];
  for (let i = 0; i < 3; i++) results.push(await editMessageText(options(fetch), 1, 2, "x"));
  assert.deepEqual(results.map(isNotModified), [true, false, false]);
  assert.equal(isNotModified({ ok: true, result: true }), false);
});
