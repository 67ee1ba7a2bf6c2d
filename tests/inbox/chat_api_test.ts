import assert from "node:assert/strict";
import { ADMINS_TTL_MS, pacedChatApi, TOAST_CHAT } from "../../lib/inbox/chat_api.ts";
import { formatPeriod } from "../../lib/inbox/start.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";

/** A chat API over a fake fetch that answers `getChatAdministrators` with `admins`. */
function setup(admins: () => number[] | "fail") {
  const methods: string[] = [];
  const paced: number[] = [];
  let now = 0;
  const fetch = (url: string | URL | Request) => {
    const method = String(url).split("/").pop()!;
    methods.push(method);
    const list = admins();
    if (method === "getChatAdministrators" && list === "fail") {
      return Promise.resolve(
        Response.json({ ok: false, error_code: 502, description: "down" }, { status: 502 }),
      );
    }
    const result = method === "getChatAdministrators"
      ? (list as number[]).map((id) => ({ status: "administrator", user: { id, is_bot: false } }))
      : true;
    return Promise.resolve(Response.json({ ok: true, result }));
  };
  const api = pacedChatApi({
    api: {
      apiUrl: "http://api.test",
      token: "1:t",
      timeoutMs: 1000,
      fetch: fetch as typeof globalThis.fetch,
    },
    call: (chat: number, fn: () => Promise<BotApiResult>) => (paced.push(chat), fn()),
    now: () => now,
  });
  return { api, methods, paced, tick: (ms: number) => (now += ms) };
}

Deno.test("edits and answers are paced as their chat, toasts as the toasts' own", async () => {
  const { api, methods, paced } = setup(() => []);
  await api.edit(-100, 5, "text", { inline_keyboard: [] });
  await api.edit(-100, 5, undefined, { inline_keyboard: [] });
  await api.say(-100, "status", { replyTo: 9 });
  await api.toast("q", "done");
  assert.deepEqual(paced, [-100, -100, -100, TOAST_CHAT]);
  assert.deepEqual(methods, [
    "editMessageText",
    "editMessageReplyMarkup",
    "sendMessage",
    "answerCallbackQuery",
  ]);
});

Deno.test("a chat's administrators are asked once and remembered for a while; an API failure lets nobody act", async () => {
  let list: number[] | "fail" = [7];
  const { api, methods, tick } = setup(() => list);
  assert.equal(await api.isAdmin(-100, 7), true);
  assert.equal(await api.isAdmin(-100, 8), false);
  assert.equal(methods.length, 1);
  list = [8];
  tick(ADMINS_TTL_MS);
  assert.equal(await api.isAdmin(-100, 8), true);
  assert.equal(methods.length, 2);
  list = "fail";
  assert.equal(await api.isAdmin(-200, 8), false);
});

Deno.test("SPAM_BLOCK_FOR is said as people say it in the toast", () => {
  assert.equal(formatPeriod(30 * 86_400_000), "30 days");
  assert.equal(formatPeriod(86_400_000), "1 day");
  assert.equal(formatPeriod(36 * 3_600_000), "36 hours");
  assert.equal(formatPeriod(90 * 60_000), "90 minutes");
});
