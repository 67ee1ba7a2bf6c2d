import assert from "node:assert/strict";
import type { LogFields } from "../../lib/log/logger.ts";
import { repliesPath } from "../../lib/common/state_files.ts";
import {
  type NewReply,
  openReplyStore,
  parseReplies,
  readReplies,
} from "../../lib/mail/reply_store.ts";
import { hookFs, MemoryFs } from "../support/memory_fs.ts";

const PATH = repliesPath("/data/messages.jsonl");
const NOW = new Date("2026-11-22T14:00:00Z");

function reply(id: string, submission = `s-${id}`, ts = "2026-11-22T13:00:00Z"): NewReply {
  return {
    id,
    submission,
    ts,
    chat: -100123,
    message: 42,
    topic: 7,
    draft: {
      to: "carla@example.org",
      subject: "Re: hours",
      text: "we open at nine",
      quoted: { ts: "2026-11-22T12:00:00Z", message: "when do you open?" },
    },
  };
}

function setup() {
  const fs = new MemoryFs();
  fs.mkdir("/data");
  const logs: LogFields[] = [];
  const open = (retentionMs?: number, now = NOW) =>
    openReplyStore({
      fs,
      path: PATH,
      log: (_level, fields) => logs.push(fields),
      now: () => now,
      retentionMs,
    });
  return { fs, logs, open };
}

Deno.test("an accepted reply is on disk, 0600, before add resolves, and waits after a restart", async () => {
  const { fs, open } = setup();
  const store = await open();
  await store.add(reply("r1"));
  assert.equal((await fs.lstat(PATH)).mode! & 0o777, 0o600);
  assert.match(fs.readText(PATH), /"op":"add".*"text":"we open at nine"/);
  await store.failed("r1", "2026-11-22T13:01:00Z", "mail server unreachable");
  // A crash here: nothing closed. The next start finds it waiting, with its tries.
  const again = await open();
  assert.deepEqual(again.pending().map((r) => [r.id, r.attempts, r.lastError]), [
    ["r1", 1, "mail server unreachable"],
  ]);
  assert.deepEqual(again.pending()[0]!.draft, reply("r1").draft);
  assert.equal(again.pending()[0]!.topic, 7);
});

Deno.test("once done, the file keeps the reply's audit and never its text nor its address", async () => {
  const { fs, open } = setup();
  const store = await open();
  await store.add(reply("r1"));
  await store.failed("r1", "2026-11-22T13:01:00Z", "4xx");
  await store.done("r1", "2026-11-22T13:02:00Z", "sent");
  const text = fs.readText(PATH);
  assert.equal(text.includes("we open at nine"), false);
  assert.equal(text.includes("carla@"), false);
  assert.equal(text.includes("when do you open"), false);
  assert.deepEqual(store.pending(), []);
  const audit = {
    id: "r1",
    submission: "s-r1",
    ts: "2026-11-22T13:00:00Z",
    to: "c•••@example.org",
    result: "sent",
    done: "2026-11-22T13:02:00Z",
    attempts: 2,
  };
  assert.deepEqual(store.audits(), [audit]);
  assert.deepEqual((await open()).audits(), [audit]);
  assert.equal(fs.exists(`${PATH}.tmp`), false);
});

Deno.test("a done line whose rewrite failed is folded into an audit at the next open", async () => {
  const { fs, logs } = setup();
  let failRename = true;
  const hooked = hookFs(fs, {
    before(call) {
      if (call.op === "rename" && failRename) throw new Deno.errors.PermissionDenied("no");
    },
  });
  const log = (_: unknown, fields: LogFields) => logs.push(fields);
  const store = await openReplyStore({ fs: hooked, path: PATH, log, now: () => NOW });
  await store.add(reply("r1"));
  await store.done("r1", "2026-11-22T13:02:00Z", "given_up", "550 no such user");
  assert.ok(logs.some((l) => l.event === "replies_compaction_failed"));
  assert.ok(fs.readText(PATH).includes("we open at nine"));
  failRename = false;
  const again = await openReplyStore({ fs: hooked, path: PATH, log, now: () => NOW });
  assert.equal(fs.readText(PATH).includes("we open at nine"), false);
  assert.deepEqual(again.audits().map((a) => [a.id, a.result, a.reason]), [
    ["r1", "given_up", "550 no such user"],
  ]);
});

Deno.test("a torn last line is skipped and logged, and the file is whole lines again", async () => {
  const { fs, logs, open } = setup();
  const store = await open();
  await store.add(reply("r1"));
  await store.close();
  fs.writeText(PATH, fs.readText(PATH) + '{"op":"add","id":"r2","subm');
  const again = await open();
  assert.deepEqual(again.pending().map((r) => r.id), ["r1"]);
  assert.ok(logs.some((l) => l.event === "replies_lines_skipped" && l.torn === true));
  assert.ok(fs.readText(PATH).endsWith("\n"));
  await again.add(reply("r3"));
  assert.deepEqual((await open()).pending().map((r) => r.id), ["r1", "r3"]);
});

Deno.test("retention at open and prune drop old audits; waiting replies stay", async () => {
  const { open } = setup();
  const store = await open();
  await store.add(reply("old", "s1", "2026-10-01T00:00:00Z"));
  await store.done("old", "2026-10-01T00:01:00Z", "sent");
  await store.add(reply("new", "s2", "2026-11-22T13:00:00Z"));
  await store.done("new", "2026-11-22T13:01:00Z", "sent");
  await store.add(reply("wait", "s3", "2026-09-01T00:00:00Z"));
  await store.close();
  const kept = await open(30 * 86_400_000);
  assert.deepEqual(kept.audits().map((a) => a.id), ["new"]);
  assert.deepEqual(kept.pending().map((r) => r.id), ["wait"]);
  assert.equal(await kept.prune("2026-11-22T13:05:00Z"), 1);
  assert.deepEqual(kept.audits(), []);
  assert.deepEqual((await open()).audits(), []);
});

Deno.test("forget drops a submission's replies, waiting or done, from memory and the file", async () => {
  const { fs, open } = setup();
  const store = await open();
  await store.add(reply("r1", "s1"));
  await store.add(reply("r2", "s2"));
  await store.done("r2", "2026-11-22T13:02:00Z", "sent");
  await store.add(reply("r3", "s3"));
  assert.equal(await store.forget(new Set(["s1", "s2"])), 2);
  assert.deepEqual(store.pending().map((r) => r.id), ["r3"]);
  assert.deepEqual(store.audits(), []);
  assert.equal(fs.readText(PATH).includes('"s1"') || fs.readText(PATH).includes('"s2"'), false);
  // A late outcome for a forgotten reply writes nothing.
  await store.done("r1", "2026-11-22T13:03:00Z", "sent");
  assert.equal(fs.readText(PATH).includes('"r1"'), false);
});

Deno.test("the replies file is never written through a symbolic link", async () => {
  const { fs, open } = setup();
  fs.writeText("/data/elsewhere", "");
  fs.symlink("/data/elsewhere", PATH);
  await assert.rejects(() => open(), Deno.errors.PermissionDenied);
  await assert.rejects(() => readReplies(fs, PATH), Deno.errors.PermissionDenied);
  assert.equal(fs.readText("/data/elsewhere"), "");
});

Deno.test("an add that fails to sync rejects, so the caller never sends it", async () => {
  const fs = new MemoryFs();
  fs.mkdir("/data");
  const hooked = hookFs(fs, {
    before(call) {
      if (call.op === "sync" && call.path === PATH) throw new Deno.errors.Interrupted("disk");
    },
  });
  const store = await openReplyStore({ fs: hooked, path: PATH, log: () => {}, now: () => NOW });
  await assert.rejects(() => store.add(reply("r1")), Deno.errors.Interrupted);
  assert.deepEqual(store.pending(), []);
});

Deno.test("damaged lines in the middle are skipped; lines for unknown replies change nothing", () => {
  const read = parseReplies(
    'not json\n{"op":"failed","id":"x","ts":"t","error":"e"}\n{"op":"add","id":"r"}\n',
  );
  assert.equal(read.skipped, 2);
  assert.equal(read.torn, false);
  assert.deepEqual(read.pending, []);
});

Deno.test("a missing replies file reads as empty", async () => {
  const read = await readReplies(new MemoryFs(), PATH);
  assert.deepEqual([read.pending, read.audits, read.skipped], [[], [], 0]);
});

Deno.test("a reply id already known, waiting or done, is not added again (a redelivered update)", async () => {
  const { fs, open } = setup();
  const store = await open();
  assert.equal(await store.add(reply("chat1:42")), true);
  assert.equal(await store.add(reply("chat1:42")), false);
  assert.equal(store.pending().length, 1);
  await store.done("chat1:42", "2026-11-22T13:02:00Z", "sent");
  assert.equal(await store.add(reply("chat1:42")), false);
  assert.deepEqual(store.pending(), []);
  assert.equal(fs.readText(PATH).includes('"op":"add"'), false);
});
