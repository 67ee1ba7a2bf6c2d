/**
 * `contactd pending` lists the owner's replies waiting to be emailed: ids, when, age, attempts,
 * the last error; never an address or a text.
 */
import assert from "node:assert/strict";
import { runCli } from "../../lib/cli/cli.ts";
import { parseReplies, type RepliesRead } from "../../lib/mail/reply_store.ts";
import { fakeCliIo } from "./_cli_io.ts";

const ENV: Record<string, string> = {
  MESSENGER_BOT_TOKEN: "424242:AAE_secret-token-value",
  MESSENGER_CHAT_ID: "42",
  MESSAGES_FILE: "/nonexistent-contactd/messages.jsonl",
};

const ADD = (id: string, ts: string) =>
  JSON.stringify({
    op: "add",
    id,
    submission: `s-${id}`,
    ts,
    chat: 42,
    message: 7,
    to: "carla@example.org",
    subject: "Re: hours",
    text: "we open at nine",
    quoted: { ts, message: "when do you open?" },
  });

async function pending(replies: string | Error, args: string[] = []) {
  let asked = "";
  const { io, out, err } = fakeCliIo({
    env: (name) => ENV[name],
    now: () => new Date("2026-11-22T14:00:00Z"),
    readOutbox: () => Promise.resolve({ entries: new Map(), skipped: 0 } as never),
    readReplies: (path): Promise<RepliesRead> => {
      asked = path;
      return replies instanceof Error
        ? Promise.reject(replies)
        : Promise.resolve(parseReplies(replies));
    },
  });
  const code = await runCli(["pending", ...args], io);
  return { code, out, err, asked };
}

Deno.test("pending lists the replies waiting to be emailed, with ages and attempts, no address or text", async () => {
  const text = [
    ADD("r1", "2026-11-22T13:55:00Z"),
    JSON.stringify({
      op: "failed",
      id: "r1",
      ts: "2026-11-22T13:56:00Z",
      error: "mail server unreachable",
    }),
    ADD("r2", "2026-11-22T11:00:00Z"),
    ADD("r3", "2026-11-22T12:00:00Z"),
    JSON.stringify({ op: "done", id: "r3", ts: "2026-11-22T12:01:00Z", result: "sent" }),
    "",
  ].join("\n");
  for (const args of [[], ["--with-text"]]) {
    const { code, out, asked } = await pending(text, args);
    assert.equal(code, 0);
    assert.equal(asked, "/nonexistent-contactd/messages.jsonl.replies");
    const at = out.indexOf("reply\tsubmission\taccepted\tage\tattempts\tlast error");
    assert.ok(at > 0, out.join("\n"));
    assert.deepEqual(out.slice(at + 1), [
      "r2\ts-r2\t2026-11-22T11:00:00Z\t3h\t0\t-",
      "r1\ts-r1\t2026-11-22T13:55:00Z\t5m\t1\tmail server unreachable",
      "2 replies waiting to be emailed, oldest 2026-11-22T11:00:00Z: contactd sends them while it runs",
    ]);
    const all = out.join("\n");
    for (const secret of ["carla", "we open at nine", "when do you open"]) {
      assert.equal(all.includes(secret), false, secret);
    }
  }
});

Deno.test("with no reply waiting, pending adds no reply lines", async () => {
  const { code, out } = await pending("");
  assert.equal(code, 0);
  assert.equal(out.some((line) => line.includes("repl")), false, out.join("\n"));
});

Deno.test("an unreadable replies file is said in one line; pending still succeeds", async () => {
  const { code, out } = await pending(new Deno.errors.PermissionDenied("no"));
  assert.equal(code, 0);
  assert.ok(
    out.includes(
      "replies: unknown (cannot read /nonexistent-contactd/messages.jsonl.replies: PermissionDenied)",
    ),
    out.join("\n"),
  );
});

Deno.test("damaged lines of the replies file are counted", async () => {
  const { out } = await pending(`${ADD("r1", "2026-11-22T13:00:00Z")}\nnot json\n`);
  assert.ok(
    out.includes("damaged: 1 line(s) of /nonexistent-contactd/messages.jsonl.replies skipped"),
  );
});
