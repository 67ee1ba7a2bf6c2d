import assert from "node:assert/strict";
import {
  callBotApi,
  failureKind,
  floodPause,
  MAX_REPLY_BYTES,
  sendMessage,
  sendNotification,
  type TelegramOptions,
} from "../../lib/bot/api.ts";

const TOKEN = "123456:ABC-def_ghi";

/** A call the fake API received (not the global `Request`). */
interface ApiCall {
  readonly url: string;
  readonly init: RequestInit | undefined;
  readonly body: Record<string, unknown>;
}

type Step = (request: ApiCall) => Response | Promise<Response>;

/** A fetch that answers with `steps` in turn (200 ok after they run out) and records requests. */
function scriptedFetch(...steps: Step[]): { fetch: typeof fetch; requests: ApiCall[] } {
  const requests: ApiCall[] = [];
  const fake: typeof fetch = (input, init) => {
    const body = JSON.parse(String(init?.body ?? "{}"));
    const request = { url: String(input), init, body };
    requests.push(request);
    const step = steps.shift() ?? (() => json(200, { ok: true, result: { message_id: 1 } }));
    return Promise.resolve(step(request));
  };
  return { fetch: fake, requests };
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

function apiError(code: number, description: string, parameters?: Record<string, number>): Step {
  return () => json(code, { ok: false, error_code: code, description, parameters });
}

function options(fetchFn: typeof fetch): TelegramOptions {
  return {
    apiUrl: "https://api.telegram.example",
    token: TOKEN,
    chatId: -1001234567890,
    timeoutMs: 10_000,
    fetch: fetchFn,
  };
}

Deno.test("sendNotification posts one sendMessage and reports one part", async () => {
  const { fetch, requests } = scriptedFetch();
  assert.deepEqual(await sendNotification(options(fetch), "hello"), { ok: true, parts: 1 });
  assert.equal(requests.length, 1);
  assert.equal(requests[0]!.url, `https://api.telegram.example/bot${TOKEN}/sendMessage`);
  assert.equal(requests[0]!.init?.method, "POST");
  assert.equal(new Headers(requests[0]!.init?.headers).get("content-type"), "application/json");
});

Deno.test("sendNotification sends a numeric chat_id, no parse_mode and no link previews", async () => {
  const { fetch, requests } = scriptedFetch();
  await sendNotification(options(fetch), "<3 *literal* _markup_");
  assert.deepEqual(requests[0]!.body, {
    chat_id: -1001234567890,
    text: "<3 *literal* _markup_",
    link_preview_options: { is_disabled: true },
  });
  assert.ok(!("parse_mode" in requests[0]!.body));
});

Deno.test("sendNotification tolerates a trailing slash in apiUrl", async () => {
  const { fetch, requests } = scriptedFetch();
  await sendNotification({ ...options(fetch), apiUrl: "http://127.0.0.1:8081//" }, "hi");
  assert.equal(requests[0]!.url, `http://127.0.0.1:8081/bot${TOKEN}/sendMessage`);
});

Deno.test("sendNotification sends a long text as several parts, in order", async () => {
  const { fetch, requests } = scriptedFetch();
  const text = "a".repeat(4096) + "b".repeat(4096) + "c";
  assert.deepEqual(await sendNotification(options(fetch), text), { ok: true, parts: 3 });
  assert.deepEqual(requests.map((r) => r.body.text), ["a".repeat(4096), "b".repeat(4096), "c"]);
});

Deno.test("sendNotification stops at the first failed part", async () => {
  const { fetch, requests } = scriptedFetch(
    () => json(200, { ok: true, result: {} }),
    apiError(400, "Bad Request: chat not found"),
  );
  const result = await sendNotification(options(fetch), "a".repeat(4096 * 3));
  assert.deepEqual(result, { ok: false, error: "400 Bad Request: chat not found" });
  assert.equal(requests.length, 2);
});

Deno.test("sendNotification skips whitespace-only parts, which Telegram rejects", async () => {
  const { fetch, requests } = scriptedFetch();
  const text = "a".repeat(4096) + "\n".repeat(4096) + "b";
  assert.deepEqual(await sendNotification(options(fetch), text), { ok: true, parts: 2 });
  assert.deepEqual(requests.map((r) => r.body.text), ["a".repeat(4096), "b"]);
});

Deno.test("sendNotification refuses empty text without calling the API", async () => {
  const { fetch, requests } = scriptedFetch();
  assert.deepEqual(await sendNotification(options(fetch), " \n "), {
    ok: false,
    error: "empty message",
  });
  assert.equal(requests.length, 0);
});

Deno.test("sendNotification reports a 429 without waiting in place: pacing is the queue's", async () => {
  const { fetch, requests } = scriptedFetch(
    apiError(429, "Too Many Requests: retry after 3", { retry_after: 3 }),
  );
  const result = await sendNotification(options(fetch), "hi");
  assert.deepEqual(result, { ok: false, error: "429 Too Many Requests: retry after 3" });
  assert.equal(requests.length, 1);
});

Deno.test("sendNotification does not retry other errors", async () => {
  const { fetch, requests } = scriptedFetch(apiError(500, "Internal Server Error"));
  const result = await sendNotification(options(fetch), "hi");
  assert.deepEqual(result, { ok: false, error: "500 Internal Server Error" });
  assert.equal(requests.length, 1);
});

Deno.test("failureKind tells flood control, settings problems, a refused message and everything else apart", () => {
  const failed = (errorCode: number | undefined, error: string, parameters?: object) =>
    failureKind({
      ok: false,
      error,
      ...(errorCode === undefined ? {} : { errorCode }),
      ...(parameters === undefined ? {} : { parameters }),
    });
  assert.equal(failed(429, "429 Too Many Requests: retry after 5"), "flood");
  assert.equal(failed(401, "401 Unauthorized"), "settings");
  assert.equal(failed(404, "404 Not Found"), "settings");
  assert.equal(failed(403, "403 Forbidden: bot was blocked by the user"), "settings");
  assert.equal(failed(403, "403 Forbidden: bot was kicked from the supergroup chat"), "settings");
  assert.equal(failed(400, "400 Bad Request: chat not found"), "settings");
  assert.equal(
    failed(400, "400 Bad Request: group chat was upgraded to a supergroup chat", {
      migrate_to_chat_id: -100987,
    }),
    "settings",
  );
  assert.equal(failed(400, "400 Bad Request: message text is empty"), "message");
  assert.equal(failed(400, "400 Bad Request: message is too long"), "message");
  assert.equal(failed(400, "400 Bad Request: can't parse entities: unsupported tag"), "message");
  assert.equal(failed(400, "400 bad request (non-JSON reply)"), "other"); // a proxy's page
  assert.equal(
    failed(400, "400 Bad Request: need administrator rights in the channel chat"),
    "settings",
  );
  assert.equal(failed(400, "400 Bad Request: message thread not found"), "settings");
  assert.equal(failed(500, "500 Internal Server Error"), "other");
  assert.equal(failed(502, "502 bad gateway (non-JSON reply)"), "other");
  assert.equal(failed(undefined, "timeout"), "other");
  assert.equal(failed(undefined, "network error: connection refused"), "other");
});

Deno.test("floodPause honours retry_after up to an hour, caps it up to a day, and pauses 5 s for a missing or absurd one", () => {
  assert.deepEqual(floodPause({ retry_after: 3 }), { seconds: 3 });
  assert.deepEqual(floodPause({ retry_after: 0.5 }), { seconds: 0.5 });
  assert.deepEqual(floodPause({ retry_after: 3600 }), { seconds: 3600 });
  assert.deepEqual(floodPause({ retry_after: 7200 }), { seconds: 3600, adjusted: "capped" });
  assert.deepEqual(floodPause({ retry_after: 86_400 }), { seconds: 3600, adjusted: "capped" });
  assert.deepEqual(floodPause({ retry_after: 86_401 }), { seconds: 5, adjusted: "absurd" });
  assert.deepEqual(floodPause({ retry_after: 1e300 }), { seconds: 5, adjusted: "absurd" });
  assert.deepEqual(floodPause(undefined), { seconds: 5, adjusted: "missing" });
  assert.deepEqual(floodPause({}), { seconds: 5, adjusted: "missing" });
});

Deno.test("callBotApi drops a malformed retry_after, which floodPause then treats as missing", async () => {
  for (const retry of [-1, "5", null, [], {}]) {
    const { fetch } = scriptedFetch(() =>
      json(429, {
        ok: false,
        error_code: 429,
        description: "x",
        parameters: { retry_after: retry },
      })
    );
    const result = await callBotApi(options(fetch), "sendMessage", {});
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.parameters?.retry_after, undefined, JSON.stringify(retry));
  }
});

Deno.test("callBotApi refuses a reply over 1 MiB without holding it, declared or streamed", async () => {
  const big = new Uint8Array(MAX_REPLY_BYTES + 1).fill(0x20);
  const declared: typeof fetch = () =>
    Promise.resolve(new Response(big, { headers: { "content-length": String(big.length) } }));
  let pulled = 0;
  const streamed: typeof fetch = () =>
    Promise.resolve(
      new Response(
        new ReadableStream({
          pull(controller) {
            pulled++;
            controller.enqueue(new Uint8Array(64 * 1024));
            if (pulled > 10_000) controller.close(); // a 640 MB body, never read whole
          },
        }),
      ),
    );
  for (const fetchFn of [declared, streamed]) {
    const result = await callBotApi(options(fetchFn), "sendMessage", {});
    assert.deepEqual(result, { ok: false, error: "200 reply too large", errorCode: 200 });
  }
  assert.ok(pulled < 40, `read ${pulled} chunks`);
  const fits = scriptedFetch(() => json(200, { ok: true, result: "x".repeat(100_000) }));
  assert.equal((await callBotApi(options(fits.fetch), "getMe", {})).ok, true);
});

Deno.test("sendNotification surfaces migrate_to_chat_id", async () => {
  const { fetch } = scriptedFetch(
    apiError(400, "Bad Request: group chat was upgraded to a supergroup chat", {
      migrate_to_chat_id: -1009876543210,
    }),
  );
  assert.deepEqual(await sendNotification(options(fetch), "hi"), {
    ok: false,
    error: "400 Bad Request: group chat was upgraded to a supergroup chat",
    migrateToChatId: -1009876543210,
  });
});

Deno.test("callBotApi returns the result of an ok reply", async () => {
  const { fetch, requests } = scriptedFetch(
    () => json(200, { ok: true, result: { id: 1, is_bot: true } }),
  );
  const result = await callBotApi(options(fetch), "getMe", {});
  assert.deepEqual(result, { ok: true, result: { id: 1, is_bot: true } });
  assert.equal(requests[0]!.url, `https://api.telegram.example/bot${TOKEN}/getMe`);
});

Deno.test("callBotApi reports the API's error_code and description", async () => {
  const { fetch } = scriptedFetch(apiError(401, "Unauthorized"));
  assert.deepEqual(await callBotApi(options(fetch), "getMe", {}), {
    ok: false,
    error: "401 Unauthorized",
    errorCode: 401,
  });
});

Deno.test("callBotApi reports a non-JSON reply by its HTTP status", async () => {
  const { fetch } = scriptedFetch(() =>
    new Response("<html><h1>502 Bad Gateway</h1></html>", {
      status: 502,
      statusText: "Bad Gateway",
      headers: { "content-type": "text/html" },
    })
  );
  assert.deepEqual(await callBotApi(options(fetch), "getMe", {}), {
    ok: false,
    error: "502 bad gateway (non-JSON reply)",
    errorCode: 502,
  });
});

Deno.test("callBotApi reports JSON without the Bot API shape as an invalid reply", async () => {
  for (const body of [null, [], { result: 1 }, { ok: "yes" }, { ok: true }]) {
    const { fetch } = scriptedFetch(() => json(200, body));
    assert.deepEqual(await callBotApi(options(fetch), "getMe", {}), {
      ok: false,
      error: "200 invalid reply",
      errorCode: 200,
    }, JSON.stringify(body));
  }
});

Deno.test("callBotApi reports an error reply without description or code sensibly", async () => {
  const { fetch } = scriptedFetch(() => json(503, { ok: false }));
  assert.deepEqual(await callBotApi(options(fetch), "getMe", {}), {
    ok: false,
    error: "503 unknown error",
    errorCode: 503,
  });
});

Deno.test("callBotApi flattens and shortens a hostile description", async () => {
  const { fetch } = scriptedFetch(apiError(400, `Bad\nRequest\u0000 ${"x".repeat(1000)}`));
  const result = await callBotApi(options(fetch), "getMe", {});
  assert.ok(!result.ok);
  assert.ok(result.error.startsWith("400 Bad Request x"));
  assert.ok(result.error.length <= 210);
});

Deno.test("callBotApi never echoes the token from a description", async () => {
  const { fetch } = scriptedFetch(apiError(400, `Bad Request: token ${TOKEN} is odd`));
  const result = await callBotApi(options(fetch), "getMe", {});
  assert.ok(!result.ok);
  assert.equal(result.error, "400 Bad Request: token <redacted> is odd");
});

Deno.test("callBotApi ignores malformed ResponseParameters", async () => {
  const { fetch } = scriptedFetch(() =>
    json(429, {
      ok: false,
      error_code: 429,
      description: "Too Many Requests",
      parameters: { retry_after: -1, migrate_to_chat_id: 1.5 },
    })
  );
  const result = await callBotApi(options(fetch), "getMe", {});
  assert.deepEqual(result, { ok: false, error: "429 Too Many Requests", errorCode: 429 });
});

/** A Deno-style fetch failure: the cause quotes the request URL, token and all. */
function fetchFailed(detail: string): Step {
  return (request) => {
    throw new TypeError("fetch failed", {
      cause: new Error(`error sending request for url (${request.url}): ${detail}`),
    });
  };
}

/** Tail of a Deno fetch failure's cause message, and the kind it should be reported as. */
const NETWORK_FAILURES: ReadonlyArray<readonly [string, string]> = [
  ["tcp connect error: Connection refused (os error 111)", "connection refused"],
  ["connection closed before message completed", "connection reset"],
  ["Connection reset by peer (os error 104)", "connection reset"],
  ["dns error: failed to lookup address information", "dns error"],
  ["invalid peer certificate: UnknownIssuer", "tls error"],
];

for (const [detail, kind] of NETWORK_FAILURES) {
  Deno.test(`callBotApi reports "${detail}" as ${kind}, without URL or token`, async () => {
    const { fetch } = scriptedFetch(fetchFailed(`client error: ${detail}`));
    const result = await callBotApi(options(fetch), "sendMessage", { text: "hi" });
    assert.deepEqual(result, { ok: false, error: `network error: ${kind}` });
  });
}

Deno.test("sendNotification never lets the token escape from a fetch failure", async () => {
  const encoded = TOKEN.replace(":", "%3A");
  const { fetch } = scriptedFetch((request) => {
    throw new TypeError(`fetch failed for ${request.url}`, {
      cause: new Error(`${request.url} ${encoded}: something odd`),
    });
  });
  const result = await sendNotification(options(fetch), "hi");
  assert.deepEqual(result, { ok: false, error: "network error" });
  assert.ok(!JSON.stringify(result).includes("ABC-def_ghi"));
});

Deno.test("callBotApi reports whatever else fetch throws as a network error", async () => {
  const hostile = new Error("x");
  Object.defineProperty(hostile, "cause", {
    get() {
      throw new Error("gotcha");
    },
  });
  for (const thrown of [new TypeError("fetch failed"), "boom", null, hostile]) {
    const { fetch } = scriptedFetch(() => {
      throw thrown;
    });
    const result = await callBotApi(options(fetch), "getMe", {});
    assert.deepEqual(result, { ok: false, error: "network error" }, String(thrown));
  }
});

Deno.test("callBotApi reports a fetch that resolves to a non-Response as an invalid reply", async () => {
  const garbage = (() => Promise.resolve({ ok: true })) as unknown as typeof fetch;
  const result = await callBotApi(options(garbage), "getMe", {});
  assert.deepEqual(result, { ok: false, error: "invalid reply" });
});

Deno.test("callBotApi refuses unserialisable parameters without calling fetch", async () => {
  const { fetch, requests } = scriptedFetch();
  const result = await callBotApi(options(fetch), "getMe", { id: 1n });
  assert.deepEqual(result, { ok: false, error: "invalid request parameters" });
  assert.equal(requests.length, 0);
});

Deno.test("callBotApi times out a fetch that never answers but honours the abort signal", async () => {
  let signalled = false;
  const hanging: typeof fetch = (_input, init) =>
    new Promise((_resolve, reject) => {
      init?.signal?.addEventListener("abort", () => {
        signalled = true;
        reject(init.signal?.reason);
      });
    });
  const result = await callBotApi({ ...options(hanging), timeoutMs: 5 }, "getMe", {});
  assert.deepEqual(result, { ok: false, error: "timeout" });
  assert.ok(signalled);
});

Deno.test("callBotApi times out a fetch that ignores the abort signal", async () => {
  const deaf: typeof fetch = () => new Promise(() => {});
  const result = await callBotApi({ ...options(deaf), timeoutMs: 5 }, "getMe", {});
  assert.deepEqual(result, { ok: false, error: "timeout" });
});

Deno.test("callBotApi's timeout also covers reading the response body", async () => {
  const { fetch } = scriptedFetch(() =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"ok":true,'));
        },
      }),
      { status: 200 },
    )
  );
  const result = await callBotApi({ ...options(fetch), timeoutMs: 5 }, "getMe", {});
  assert.deepEqual(result, { ok: false, error: "timeout" });
});

/** A 200 whose body fails with `error` when read. */
function bodyFails(error: Error): Step {
  return () =>
    new Response(
      new ReadableStream({
        pull(controller) {
          controller.error(error);
        },
      }),
      { status: 200 },
    );
}

Deno.test("callBotApi reports a body that breaks off mid-read as a network error", async () => {
  const { fetch } = scriptedFetch(bodyFails(new Error("connection reset by peer")));
  const result = await callBotApi(options(fetch), "getMe", {});
  assert.deepEqual(result, { ok: false, error: "network error: connection reset" });
});

Deno.test("callBotApi reports Deno's 'error reading a body from connection' as a reply cut off", async () => {
  const { fetch } = scriptedFetch(
    bodyFails(new TypeError("error reading a body from connection")),
  );
  const result = await callBotApi(options(fetch), "sendMessage", {});
  assert.deepEqual(result, { ok: false, error: "network error: reply cut off" });
});

Deno.test("sendNotification reports a timed-out part as not delivered", async () => {
  const deaf: typeof fetch = () => new Promise(() => {});
  const result = await sendNotification({ ...options(deaf), timeoutMs: 5 }, "hi");
  assert.deepEqual(result, { ok: false, error: "timeout" });
});

Deno.test("callBotApi clears its timeout timer however the call ends", async () => {
  // Deno's test sanitizer does not report pending timers, so count them here.
  const pending = new Set<unknown>();
  const { setTimeout: realSet, clearTimeout: realClear } = globalThis;
  globalThis.setTimeout = ((handler: () => void, ms?: number) => {
    const id = realSet(handler, ms);
    pending.add(id);
    return id;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((id?: Parameters<typeof clearTimeout>[0]) => {
    if (id !== undefined) pending.delete(id);
    realClear(id);
  }) as typeof clearTimeout;
  try {
    const { fetch } = scriptedFetch(
      () => json(200, { ok: true, result: true }),
      apiError(400, "Bad Request"),
      fetchFailed("tcp connect error: Connection refused"),
      () => new Response("not json"),
    );
    for (let i = 0; i < 4; i++) await callBotApi(options(fetch), "getMe", {});
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  }
  assert.equal(pending.size, 0);
});

Deno.test("sendMessage names the forum topic as message_thread_id only when there is one", async () => {
  const { fetch, requests } = scriptedFetch();
  assert.equal((await sendMessage(options(fetch), -100123, "a", 42)).ok, true);
  assert.equal((await sendMessage(options(fetch), -100123, "b")).ok, true);
  assert.equal(requests[0]!.body.message_thread_id, 42);
  assert.equal(Object.hasOwn(requests[1]!.body, "message_thread_id"), false);
});

Deno.test("sendNotification (send-test) sends every part into the topic", async () => {
  const { fetch, requests } = scriptedFetch();
  const result = await sendNotification({ ...options(fetch), topicId: 7 }, "x".repeat(5000));
  assert.deepEqual(result, { ok: true, parts: 2 });
  assert.deepEqual(requests.map((request) => request.body.message_thread_id), [7, 7]);
});
