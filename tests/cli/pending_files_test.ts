/** `contactd pending` and `/pending` count the files sent with forms that wait for the chat. */
import assert from "node:assert/strict";
import { pendingCommand } from "../../lib/cli/commands.ts";
import { pendingItems, pendingText, statusText } from "../../lib/inbox/status_text.ts";
import { fakeCliIo } from "./_cli_io.ts";
import { withTempStore } from "../support/temp_store.ts";

const file = (submission: string, idx: number) => ({
  submission,
  idx,
  ts: "2026-11-22T13:00:00Z",
  form: null,
  name: "cv.pdf",
  size: 10,
  type: "application/pdf",
  sha256: "00".repeat(32),
  stored: `${submission}-${idx}`,
});

Deno.test("pending counts the files waiting for the chat, and says nothing of them once sent", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await store.run("files.add", { files: [file("a1", 0), file("a1", 1)] });
    const run = async () => {
      const { io, out } = fakeCliIo({ now: () => new Date("2026-11-22T14:00:00Z") });
      const code = await pendingCommand({ MESSAGES_FILE: messagesFile }, io, false);
      assert.equal(code, 0);
      return out.join("\n");
    };
    assert.match(await run(), /^2 files sent with forms waiting for the chat/m);
    for (const idx of [0, 1]) {
      await store.run("files.settled", {
        submission: "a1",
        idx,
        state: "sent",
        chat: 1,
        message: 5 + idx,
        error: null,
      });
    }
    assert.doesNotMatch(await run(), /files sent with forms/);
  });
});

Deno.test("/pending lists a waiting file by its submission's id, /status counts them", () => {
  const items = pendingItems([], [], Date.parse("2026-11-22T14:00:00Z"), undefined, [
    { submission: "a1", ts: "2026-11-22T13:00:00Z", attempts: 2, form: null },
  ]);
  assert.equal(pendingText(items), "Waiting (1):\nfile of #a1 · 1 h · 2 failed attempts");
  const status = statusText({
    delivery: { state: "ok" },
    pending: 0,
    oldestMs: undefined,
    replies: undefined,
    files: 1,
  });
  assert.match(status, /^Files waiting to be sent: 1\.$/m);
});
