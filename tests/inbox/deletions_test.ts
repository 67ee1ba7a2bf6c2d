import assert from "node:assert/strict";
import { deleteFromChat } from "../../lib/inbox/deletions.ts";
import type { BotApiResult } from "../../lib/bot/api.ts";
import type { ChatDeletion } from "../../lib/storage/ledger.ts";
import type { LogFields } from "../../lib/log/logger.ts";

/** Deletes through a fake API answering `reply` per message id; records what was marked done. */
function setup(reply: (messageId: number) => BotApiResult) {
  const asked: Array<[number, number]> = [];
  const done: ChatDeletion[] = [];
  const lines: LogFields[] = [];
  const fetch = (_url: string | URL | Request, init?: RequestInit) => {
    const body = JSON.parse(String(init?.body)) as { chat_id: number; message_id: number };
    asked.push([body.chat_id, body.message_id]);
    const result = reply(body.message_id);
    return Promise.resolve(
      Response.json(
        result.ok
          ? { ok: true, result: true }
          : { ok: false, error_code: result.errorCode, description: result.error },
        { status: result.ok ? 200 : result.errorCode ?? 500 },
      ),
    );
  };
  const deps = {
    api: {
      apiUrl: "http://api.test",
      token: "1:t",
      timeoutMs: 1000,
      fetch: fetch as typeof globalThis.fetch,
    },
    call: (_chat: number, fn: () => Promise<BotApiResult>) => fn(),
    deleted: (deletion: ChatDeletion) => (done.push(deletion), Promise.resolve()),
    log: (_level: string, fields: LogFields) => void lines.push(fields),
  };
  return { asked, done, lines, deps };
}

const OK: BotApiResult = { ok: true, result: true };

Deno.test("an erased submission's messages are deleted from the chat, each once, and the deletion marked done", async () => {
  const { asked, done, lines, deps } = setup(() => OK);
  const deletion = { chat: -100, messages: [11, 12] };
  assert.equal(await deleteFromChat([deletion], deps), 2);
  assert.deepEqual(asked, [[-100, 11], [-100, 12]]);
  assert.deepEqual(done, [deletion]);
  assert.deepEqual(lines, [{ event: "chat_deleted", chat: -100, messages: 2 }]);
});

Deno.test("a message Telegram will not delete (older than 48 hours) is said once and not retried", async () => {
  const { done, lines, deps } = setup((id) =>
    id === 12 ? { ok: false, errorCode: 400, error: "Bad Request: message can't be deleted" } : OK
  );
  await deleteFromChat([{ chat: 5, messages: [11, 12] }], deps);
  assert.deepEqual(done, [{ chat: 5, messages: [11, 12] }]);
  const failed = lines.find((line) => line.event === "chat_delete_failed");
  assert.equal(failed?.messages, 1);
  assert.match(String(failed?.hint), /48 hours/);
});

Deno.test("a network failure leaves the messages not yet tried for the next start; those tried are done", async () => {
  const { done, deps } = setup((id) =>
    id === 12 ? { ok: false, errorCode: 502, error: "502 Bad Gateway" } : OK
  );
  await deleteFromChat([{ chat: 5, messages: [11, 12, 13] }], deps);
  assert.deepEqual(done, [{ chat: 5, messages: [11] }]);
});
