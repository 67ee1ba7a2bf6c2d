/**
 * Retention and the backup file's rewrite: the age cut, the rewrite by a synced temporary file
 * and a rename (mode and owner kept, created exclusively), and nothing appended meanwhile lost.
 */
import assert from "node:assert/strict";
import { formatRecord } from "../../lib/storage/backup.ts";
import { createGroupAppender } from "../../lib/storage/group_commit.ts";
import { applyRetention, keptByAge } from "../../lib/storage/retention.ts";
import { rewriteBackup } from "../../lib/storage/rewrite.ts";
import { rewriteFs } from "./_rewrite_setup.ts";
import { pathSource, trackFile } from "../../lib/storage/tracked_file.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { idle, latch, MemoryFs } from "../support/memory_fs.ts";
import { openLedger } from "../../lib/storage/ledger.ts";
import { openTempStore } from "../support/temp_store.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 25, 12);
const PATH = "/data/messages.jsonl";

/** A record `days` before NOW. */
function record(days: number, id: string): string {
  return formatRecord({
    ts: new Date(NOW - days * DAY).toISOString().slice(0, 19) + "Z",
    id,
    name: "Ann",
    contact: "@ann",
    message: `message ${id}`,
    ip: "203.0.113.7",
    messenger_ok: true,
    messenger_error: null,
  });
}

function logger() {
  const lines: LogFields[] = [];
  return { log: (_level: string, fields: LogFields) => void lines.push(fields), lines };
}

Deno.test("keptByAge keeps records at or after the cut, and lines it cannot date", () => {
  const keep = keptByAge(NOW - 90 * DAY);
  assert.equal(keep(record(89, "young").trimEnd()), true);
  assert.equal(keep(record(90, "edge").trimEnd()), true);
  assert.equal(keep(record(91, "old").trimEnd()), false);
  // Older records without an id are dated all the same.
  const old = JSON.stringify({ ts: "2020-01-01T00:00:00Z", name: "x", message: "y" });
  assert.equal(keep(old), false);
  for (const undated of ["not json", "{}", '{"ts":"soon"}', "[1]"]) {
    assert.equal(keep(undated), true, undated);
  }
});

Deno.test("rewriteBackup writes the kept lines to a new exclusive file with the old mode and owner, syncs it, then renames it over the file", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  memory.writeText(PATH, record(100, "a") + "damaged\n" + record(10, "b") + record(200, "c"));
  // A link left at the temporary path is removed, never written through.
  memory.symlink("/etc/passwd-like", `${PATH}.rewrite`);
  const { fs, calls } = rewriteFs(memory);
  const { log, lines } = logger();
  const outcome = await rewriteBackup(fs, PATH, keptByAge(NOW - 90 * DAY), log);
  assert.deepEqual(outcome, { kept: 2, removed: 2 });
  assert.equal(memory.readText(PATH), "damaged\n" + record(10, "b"));
  assert.equal(memory.exists(`${PATH}.rewrite`), false);
  assert.equal(memory.exists("/etc/passwd-like"), false);
  // Reads, and the backup file's seeks between its two streamed passes, aside.
  const order = calls.filter((call) => !/^(read|stat|seek) /.test(call));
  assert.deepEqual(order, [
    `open ${PATH}`,
    `remove ${PATH}.rewrite`,
    `open ${PATH}.rewrite`,
    // Each by path only after lstat shows the file opened (dev:ino), never a link put there.
    `lstat ${PATH}.rewrite`,
    `chown ${PATH}.rewrite 1001:1002`,
    `lstat ${PATH}.rewrite`,
    `chmod ${PATH}.rewrite 100640`.replace("100640", (0o100640 & 0o7777).toString(8)),
    `write ${PATH}.rewrite`,
    `sync ${PATH}.rewrite`,
    `rename ${PATH}.rewrite`,
    "open /data",
    "sync /data",
  ]);
  assert.deepEqual(lines, []);
});

Deno.test("rewriteBackup chowns its temporary file only when the owner differs, never through a link swapped in, and names the group on EPERM", async () => {
  // A link swapped in at the temporary path after its creation: refused, nothing chowned.
  const swapped = new MemoryFs();
  swapped.mkdir("/data");
  swapped.writeText(PATH, record(100, "a") + record(10, "b"));
  swapped.writeText("/etc/shadow-like", "secret\n");
  const { fs: swapFs, calls: swapCalls } = rewriteFs(swapped, async (call) => {
    if (call.op === "lstat" && call.path === `${PATH}.rewrite`) {
      await swapped.remove(`${PATH}.rewrite`);
      swapped.symlink("/etc/shadow-like", `${PATH}.rewrite`);
    }
  });
  await assert.rejects(
    rewriteBackup(swapFs, PATH, keptByAge(NOW - 90 * DAY), logger().log),
    Deno.errors.PermissionDenied,
  );
  assert.ok(!swapCalls.some((call) => call.startsWith("chown")), swapCalls.join());
  assert.equal(swapped.readText("/etc/shadow-like"), "secret\n");

  // Already the file's owner (the service rewriting its own file): no chown at all.
  const same = new MemoryFs();
  same.mkdir("/data");
  same.writeText(PATH, record(100, "a") + record(10, "b"));
  const owner = { uid: 1001, gid: 1002, mode: 0o100640 };
  const { fs: sameFs, calls: sameCalls } = rewriteFs(same, undefined, {
    [`${PATH}.rewrite`]: owner,
  });
  await rewriteBackup(sameFs, PATH, keptByAge(NOW - 90 * DAY), logger().log);
  assert.ok(!sameCalls.some((call) => call.startsWith("chown")), sameCalls.join());

  // A group the service is not in: one clear line with the hint, the old file whole.
  const other = new MemoryFs();
  other.mkdir("/data");
  const text = record(100, "a") + record(10, "b");
  other.writeText(PATH, text);
  const { fs: otherFs } = rewriteFs(other, undefined, {
    [`${PATH}.rewrite`]: { uid: 1001, gid: 1001, mode: 0o100600 },
  });
  const refusing = {
    ...otherFs,
    chown: () => Promise.reject(new Deno.errors.PermissionDenied("Operation not permitted")),
  };
  const { log, lines } = logger();
  await assert.rejects(
    rewriteBackup(refusing, PATH, keptByAge(NOW - 90 * DAY), log),
    /group must be one of the service user's groups \(chgrp it to the service's group\)/,
  );
  assert.equal(other.readText(PATH), text);
  assert.equal(other.exists(`${PATH}.rewrite`), false);
  assert.deepEqual(lines, []); // the caller's retention_failed or forget_failed line says it
});

Deno.test("rewriteBackup writes nothing when nothing goes, or for a dry run, and a missing file is nothing to do", async () => {
  const memory = new MemoryFs();
  memory.writeText(PATH, record(1, "a") + record(100, "b"));
  const { fs, calls } = rewriteFs(memory);
  const { log } = logger();
  assert.deepEqual(await rewriteBackup(fs, PATH, () => true, log), { kept: 2, removed: 0 });
  assert.deepEqual(await rewriteBackup(fs, PATH, () => false, log, true), {
    kept: 0,
    removed: 2,
  });
  assert.ok(
    calls.every((call) => /^(open|read) \/data\/messages\.jsonl$/.test(call)),
    calls.join(),
  );
  assert.equal(memory.readText(PATH), record(1, "a") + record(100, "b"));
  assert.deepEqual(await rewriteBackup(fs, "/none", () => false, log), { kept: 0, removed: 0 });
});

Deno.test("rewriteBackup keeps a torn last line, made whole", async () => {
  const memory = new MemoryFs();
  memory.writeText(PATH, record(100, "a") + '{"ts":"2026-11-25T1');
  const { fs } = rewriteFs(memory);
  const outcome = await rewriteBackup(fs, PATH, keptByAge(NOW - 90 * DAY), logger().log);
  assert.deepEqual(outcome, { kept: 1, removed: 1 });
  assert.equal(memory.readText(PATH), '{"ts":"2026-11-25T1\n');
});

Deno.test("a rewrite that fails before the rename leaves the old file whole and removes the temporary file", async () => {
  for (const failing of ["write", "sync", "rename"]) {
    const memory = new MemoryFs();
    memory.mkdir("/data");
    const text = record(100, "a") + record(1, "b");
    memory.writeText(PATH, text);
    const { fs } = rewriteFs(memory, (call) => {
      if (call.op === failing && call.path === `${PATH}.rewrite`) throw new Error("disk full");
    });
    await assert.rejects(rewriteBackup(fs, PATH, keptByAge(NOW - 90 * DAY), logger().log));
    assert.equal(memory.readText(PATH), text, failing);
    assert.equal(memory.exists(`${PATH}.rewrite`), false, failing);
  }
});

Deno.test("retention under a steady stream of appends: nothing appended is lost, every line whole, only old records gone", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const old = [record(120, "old1"), record(95, "old2")];
  memory.writeText(PATH, old.join("") + record(30, "kept"));
  // The first append's write is held in flight; the rewrite is held just before its rename.
  const atWrite = latch();
  const atRename = latch();
  const { fs } = rewriteFs(memory, async (call) => {
    if (call.op === "write" && call.path === PATH) await atWrite.pass();
    if (call.op === "rename") await atRename.pass();
  });
  const source = pathSource(PATH, () => {}, fs);
  const appender = createGroupAppender(trackFile(await source.open(), source));
  const appended: Array<Promise<number>> = [];
  const lines: string[] = [];
  const append = (n: number) => {
    const line = record(0, `new${n}`);
    lines.push(line);
    appended.push(appender.append(line));
  };
  for (let i = 0; i < 5; i++) append(i);
  await atWrite.at;
  const compactions: string[] = [];
  const { log, lines: logs } = logger();
  const run = applyRetention({
    appender,
    fs,
    path: PATH,
    outbox: { compact: () => (compactions.push("compact"), Promise.resolve()) },
    now: () => NOW,
    retentionMs: 90 * DAY,
    log,
  });
  for (let i = 5; i < 10; i++) append(i); // while the rewrite waits for the write in flight
  atWrite.release();
  await atRename.at;
  for (let i = 10; i < 60; i++) append(i); // while it holds the file
  await idle();
  // Held back meanwhile: not one of them reached the old file, nor the new one yet.
  assert.equal(memory.readText(PATH).includes("new10"), false);
  atRename.release();
  const outcome = await run;
  for (let i = 60; i < 80; i++) append(i); // after it
  await Promise.all(appended);
  await appender.close();

  // "kept" and the 5 lines of the write in flight; those appended after it waited.
  assert.deepEqual(outcome, { kept: 6, removed: 2 });
  const text = memory.readText(PATH);
  assert.ok(text.endsWith("\n"));
  const written = text.split("\n").slice(0, -1);
  for (const line of written) JSON.parse(line); // every line whole
  assert.deepEqual(written, [record(30, "kept"), ...lines].map((line) => line.trimEnd()));
  assert.deepEqual(compactions, ["compact"]);
  assert.deepEqual(logs, [{ event: "retention", removed: 2, kept: 6 }]);
});

Deno.test("a failed retention run is logged under retention_failed and the service's appends go on", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  memory.writeText(PATH, record(100, "old"));
  const { fs } = rewriteFs(memory, (call) => {
    if (call.op === "open" && call.path.endsWith(".rewrite")) {
      throw new Deno.errors.PermissionDenied("no");
    }
  });
  const source = pathSource(PATH, () => {}, fs);
  const appender = createGroupAppender(trackFile(await source.open(), source));
  const { log, lines } = logger();
  const outcome = await applyRetention({
    appender,
    fs,
    path: PATH,
    outbox: { compact: () => Promise.reject(new Error("not reached")) },
    now: () => NOW,
    retentionMs: 90 * DAY,
    log,
  });
  assert.equal(outcome, undefined);
  assert.deepEqual(lines.map((line) => [line.event, line.file]), [["retention_failed", "backup"]]);
  await appender.append(record(0, "after"));
  await appender.close();
  assert.equal(memory.readText(PATH), record(100, "old") + record(0, "after"));
});

Deno.test("retention prunes the chat ledger and the other files with the same cut, each counted in the log; one failing is logged on its own and the others still run", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  memory.writeText(PATH, record(100, "old") + record(1, "new"));
  const { fs } = rewriteFs(memory);
  await using store = await openTempStore();
  const ledger = await openLedger(store);
  for (const [id, days] of [["old", 100], ["new", 1]] as const) {
    const ts = new Date(NOW - days * DAY).toISOString().slice(0, 19) + "Z";
    await ledger.noteSent({ id, ts, chat: 7, messageId: days, first: true, ip: "", contact: "" });
  }
  const cuts: Array<[string, number]> = [];
  const { log, lines } = logger();
  await applyRetention({
    appender: { exclusive: (task) => task() },
    fs,
    path: PATH,
    outbox: { compact: () => Promise.resolve() },
    now: () => NOW,
    retentionMs: 90 * DAY,
    log,
    ledger,
    extra: [
      { name: "blocked", prune: (cut) => (cuts.push(["blocked", cut]), Promise.resolve(3)) },
      { name: "replies", prune: () => Promise.reject(new Error("disk full")) },
      { name: "none" },
    ],
  });
  assert.deepEqual(cuts, [["blocked", NOW - 90 * DAY]]);
  assert.deepEqual([...ledger.entries()].map((entry) => entry.id), ["new"]);
  assert.deepEqual(ledger.pendingDeletions(), []); // retention deletes nothing from the chat
  assert.deepEqual(lines.map((line) => [line.event, line.file]), [
    ["retention_failed", "replies"],
    ["retention", undefined],
  ]);
  assert.deepEqual(lines[1], { event: "retention", removed: 1, kept: 1, chat: 1, blocked: 3 });
  await ledger.close();
});
