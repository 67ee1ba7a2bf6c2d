/**
 * The chat ledger's file: kept across restarts, compacted at open with its mode, never through a
 * link, a torn last line tolerated, every part found by its message, pruned by age, and erasure
 * leaving only the deletions waiting (no submission id).
 */
import assert from "node:assert/strict";
import type { LogFields } from "../../lib/log/logger.ts";
import { ledgerPath } from "../../lib/common/state_files.ts";
import {
  type Ledger,
  ledgerTemporaryPath,
  openLedger,
  readLedger,
  type SentPart,
} from "../../lib/storage/ledger.ts";
import { sentLine } from "../../lib/storage/ledger_lines.ts";
import type { StorageFs } from "../../lib/storage/file_system.ts";
import { hookFs, MemoryFs } from "../support/memory_fs.ts";

const PATH = ledgerPath("/data/messages.jsonl");
const CHAT = -1001234567890;
const OWNER = { id: 42, name: "Owner" };

function part(id: string, messageId: number, first: boolean, ts = "2026-11-25T12:00:00Z") {
  return {
    id,
    ts,
    chat: CHAT,
    messageId,
    first,
    ip: "203.0.113.7",
    contact: "ann@example.org",
  } satisfies SentPart;
}

function setup() {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const lines: LogFields[] = [];
  const log = (_level: string, fields: LogFields) => void lines.push(fields);
  const open = (fs: StorageFs = memory, onLoose?: (mode: number) => void) =>
    openLedger(PATH, { fs, log, ...(onLoose === undefined ? {} : { onLoose }) });
  return { memory, lines, open };
}

/** The ledger file's lines, parsed. */
function fileLines(memory: MemoryFs): Record<string, unknown>[] {
  return memory.readText(PATH).split("\n").filter((line) => line !== "").map((line) =>
    JSON.parse(line)
  );
}

async function sendTwo(ledger: Ledger): Promise<void> {
  await ledger.noteSent(part("a1", 10, true));
  await ledger.noteSent(part("a1", 11, false));
  await ledger.noteSent(part("b2", 12, true));
}

Deno.test("the ledger is created 0600 and keeps parts, redeliveries and states across a reopen, one line per live entry after it", async () => {
  const { memory, open } = setup();
  const ledger = await open();
  await sendTwo(ledger);
  await ledger.noteSent(part("a1", 20, true)); // redelivered
  await ledger.setState("a1", "handled", OWNER, "2026-11-25T12:05:00Z");
  await ledger.setState("zz", "spam", OWNER, "2026-11-25T12:06:00Z"); // not held: nothing
  await ledger.close();
  assert.equal((await memory.lstat(PATH)).mode, 0o600);
  assert.equal(fileLines(memory).length, 5);

  const again = await open();
  assert.deepEqual(again.get("a1"), {
    id: "a1",
    ts: "2026-11-25T12:00:00Z",
    chat: CHAT,
    buttons: [10, 20],
    messages: [10, 11, 20],
    ip: "203.0.113.7",
    contact: "ann@example.org",
    state: "handled",
    by: 42,
    byName: "Owner",
    at: "2026-11-25T12:05:00Z",
  });
  assert.equal(again.get("b2")?.state, "open");
  assert.equal(again.get("zz"), undefined);
  assert.deepEqual(fileLines(memory).map((line) => [line.op, line.id]), [
    ["entry", "a1"],
    ["entry", "b2"],
  ]);
  await again.close();
  await assert.rejects(again.noteSent(part("c3", 30, true)), Deno.errors.BadResource);
});

Deno.test("byMessage finds the entry by every part's message in its chat, and nothing for another chat or an unknown message", async () => {
  const { open } = setup();
  const ledger = await open();
  await sendTwo(ledger);
  assert.equal(ledger.byMessage(CHAT, 10)?.id, "a1");
  assert.equal(ledger.byMessage(CHAT, 11)?.id, "a1");
  assert.equal(ledger.byMessage(CHAT, 12)?.id, "b2");
  assert.equal(ledger.byMessage(CHAT + 1, 10), undefined);
  assert.equal(ledger.byMessage(CHAT, 13), undefined);
  assert.deepEqual(ledger.get("a1")?.buttons, [10]);
  await ledger.close();
  const again = await setup().open(); // another file system: nothing there
  assert.equal(again.byMessage(CHAT, 10), undefined);
});

Deno.test("a torn last line is skipped and logged ledger_damaged_line, and the compaction at open leaves whole lines only", async () => {
  const { memory, open, lines } = setup();
  memory.writeText(PATH, sentLine(part("a1", 10, true)) + "{not json\n" + '{"op":"sent","id":"b');
  const ledger = await open();
  assert.deepEqual(lines, [
    { event: "ledger_damaged_line", line: 2 },
    { event: "ledger_damaged_line", line: 3, torn: true },
  ]);
  assert.equal(ledger.get("a1")?.messages.length, 1);
  await ledger.noteSent(part("c3", 30, true));
  assert.ok(memory.readText(PATH).endsWith("\n"));
  assert.deepEqual(fileLines(memory).map((line) => line.id), ["a1", "c3"]);
  await ledger.close();
});

Deno.test("compaction keeps the file's mode (a loose one is told, never loosened), and the ledger never goes through a link", async () => {
  const { memory, open } = setup();
  // Made 0640 by its owner (writeText keeps an existing file's inode and mode).
  (await memory.open(PATH, { write: true, create: true, mode: 0o640 })).close();
  memory.writeText(PATH, sentLine(part("a1", 10, true)) + sentLine(part("a1", 11, false)));
  const before = await memory.lstat(PATH);
  const loose: number[] = [];
  await (await open(memory, (mode) => loose.push(mode))).close();
  assert.deepEqual(loose, [0o640]);
  const after = await memory.lstat(PATH);
  assert.equal(after.mode, 0o640);
  assert.notEqual(after.ino, before.ino); // replaced by the compaction
  assert.equal(fileLines(memory).length, 1);

  // A link at the ledger's path is refused; one at its temporary file is removed, not followed.
  const linked = setup();
  linked.memory.writeText("/data/target", "keep\n");
  linked.memory.symlink("/data/target", PATH);
  await assert.rejects(linked.open(), Deno.errors.PermissionDenied);
  assert.equal(linked.memory.readText("/data/target"), "keep\n");
  const temp = setup();
  temp.memory.writeText("/data/target", "keep\n");
  temp.memory.writeText(PATH, sentLine(part("a1", 10, true)));
  temp.memory.symlink("/data/target", ledgerTemporaryPath(PATH));
  await (await temp.open()).close();
  assert.equal(temp.memory.readText("/data/target"), "keep\n");
  assert.equal(temp.memory.exists(ledgerTemporaryPath(PATH)), false);
  assert.equal(fileLines(temp.memory)[0]?.op, "entry");
});

Deno.test("prune removes the entries before the cut and rewrites the file; their messages are not deleted from the chat", async () => {
  const { memory, open } = setup();
  const ledger = await open();
  await ledger.noteSent(part("old", 10, true, "2026-08-01T00:00:00Z"));
  await ledger.noteSent(part("new", 11, true, "2026-11-20T00:00:00Z"));
  assert.equal(await ledger.prune(Date.UTC(2026, 7, 25)), 1);
  assert.equal(await ledger.prune(Date.UTC(2026, 7, 25)), 0);
  assert.equal(ledger.get("old"), undefined);
  assert.equal(ledger.byMessage(CHAT, 10), undefined);
  assert.equal(ledger.get("new")?.id, "new");
  assert.deepEqual(ledger.pendingDeletions(), []);
  assert.deepEqual(fileLines(memory).map((line) => line.id), ["new"]);
  await ledger.noteSent(part("later", 12, true));
  assert.deepEqual(fileLines(memory).map((line) => line.id), ["new", "later"]);
  await ledger.close();
});

Deno.test("forget removes the entries and returns their messages to delete; the file keeps only delete lines without the submission, until deleted marks them done", async () => {
  const { memory, open } = setup();
  const ledger = await open();
  await sendTwo(ledger);
  assert.deepEqual(await ledger.forget(new Set(["nothing"])), []);
  const deletions = await ledger.forget(new Set(["a1"]));
  assert.deepEqual(deletions, [{ chat: CHAT, messages: [10, 11] }]);
  assert.equal(ledger.get("a1"), undefined);
  assert.equal(ledger.byMessage(CHAT, 11), undefined);
  assert.deepEqual(ledger.pendingDeletions(), deletions);
  const text = memory.readText(PATH);
  assert.equal(text.split("\n").filter((line) => line.includes("a1")).length, 0);
  assert.deepEqual(fileLines(memory).map((line) => line.op), ["entry", "delete"]);
  await ledger.close();

  const again = await open();
  assert.deepEqual(again.pendingDeletions(), deletions);
  await again.deleted(deletions[0]!);
  assert.deepEqual(again.pendingDeletions(), []);
  await again.close();
  await (await open()).close();
  assert.deepEqual(fileLines(memory).map((line) => [line.op, line.id]), [["entry", "b2"]]);
});

Deno.test("a part sent for a submission forgotten meanwhile becomes a deletion waiting, never an entry", async () => {
  const { memory } = setup();
  const late: unknown[] = [];
  const ledger = await openLedger(PATH, {
    fs: memory,
    log: () => {},
    onLateDeletion: (deletion) => late.push(deletion),
  });
  await ledger.noteSent(part("a1", 10, true));
  await ledger.forget(new Set(["a1"]));
  await ledger.noteSent(part("a1", 11, false)); // its sendMessage was under way
  assert.equal(ledger.get("a1"), undefined);
  assert.deepEqual(late, [{ chat: CHAT, messages: [11] }]);
  assert.deepEqual(ledger.pendingDeletions(), [{ chat: CHAT, messages: [10, 11] }]);
  await ledger.close();
  assert.ok(!memory.readText(PATH).includes("a1"));
});

Deno.test("a forget whose rewrite fails changes nothing: the entry stays, in memory and in the file, and the temporary file is gone", async () => {
  const { memory, lines } = setup();
  let fail = false;
  const fs = hookFs(memory, {
    before: (call) => {
      if (fail && call.op === "rename") throw new Deno.errors.PermissionDenied("no");
    },
  });
  const ledger = await openLedger(PATH, { fs, log: (_l, f) => void lines.push(f) });
  await sendTwo(ledger);
  fail = true;
  await assert.rejects(ledger.forget(new Set(["a1"])), Deno.errors.PermissionDenied);
  assert.equal(ledger.get("a1")?.id, "a1");
  assert.deepEqual(ledger.pendingDeletions(), []);
  assert.equal(memory.exists(ledgerTemporaryPath(PATH)), false);
  fail = false;
  // Writes go on to the same file, and the erasure can be run again.
  await ledger.setState("b2", "spam", OWNER, "2026-11-25T12:05:00Z");
  assert.equal((await readLedger(PATH, memory)).entries.get("b2")?.state, "spam");
  assert.deepEqual(await ledger.forget(new Set(["a1"])), [{ chat: CHAT, messages: [10, 11] }]);
  await ledger.close();
});

Deno.test("readLedger reads without writing: no file is an empty ledger, a link is refused", async () => {
  const { memory } = setup();
  assert.equal((await readLedger(PATH, memory)).entries.size, 0);
  assert.equal(memory.exists(PATH), false);
  memory.writeText(PATH, sentLine(part("a1", 10, true)) + '{"op":"sent"');
  const before = memory.readText(PATH);
  assert.equal((await readLedger(PATH, memory)).entries.get("a1")?.id, "a1");
  assert.equal(memory.readText(PATH), before);
  memory.symlink(PATH, "/data/link");
  await assert.rejects(readLedger("/data/link", memory), Deno.errors.PermissionDenied);
});
