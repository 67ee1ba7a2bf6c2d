import assert from "node:assert/strict";
import { createGroupAppender as createOn } from "../../lib/storage/group_commit.ts";
import {
  type FileSource,
  type OpenedFile,
  trackFile,
  type WritableFile,
} from "../../lib/storage/tracked_file.ts";

const opened = (file: WritableFile, id = ""): OpenedFile => ({
  file,
  id,
  endsMidLine: false,
  size: 0,
});

/** A group appender on `file`, without a path to watch for rotation. */
const createGroupAppender = (file: WritableFile) => createOn(trackFile(opened(file)));

/** A file whose syncs wait until the test releases (or fails) them, one by one. */
function heldFile(options: { shortWrites?: boolean; failWriteAfter?: number } = {}) {
  const written: string[] = [];
  const events: string[] = [];
  const syncs: Array<{ release: () => void; fail: (error: Error) => void }> = [];
  let bytesBudget = options.failWriteAfter ?? Infinity;
  const file: WritableFile = {
    async write(bytes) {
      await Promise.resolve();
      if (bytesBudget === 0) throw new Error("ENOSPC");
      const n = Math.min(bytes.byteLength, options.shortWrites ? 7 : bytes.byteLength, bytesBudget);
      bytesBudget -= n;
      written.push(new TextDecoder().decode(bytes.subarray(0, n)));
      events.push("write");
      return n;
    },
    syncData() {
      events.push("sync");
      return new Promise((resolve, reject) => {
        syncs.push({ release: () => resolve(), fail: reject });
      });
    },
    close() {
      events.push("close");
    },
  };
  const refill = () => (bytesBudget = Infinity);
  return { file, written, events, syncs, refill };
}

/** Lets queued microtasks and short awaits run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

function tracked(promise: Promise<unknown>) {
  const state = { done: false, error: undefined as unknown };
  promise.then(() => (state.done = true), (error) => (state.error = error));
  return state;
}

Deno.test("group commit writes concurrent lines whole and in order, one sync per batch", async () => {
  const { file, written, events, syncs } = heldFile({ shortWrites: true });
  const appender = createGroupAppender(file);
  const lines = Array.from({ length: 20 }, (_, i) => `{"n":${i},"text":"line ${i}"}\n`);
  const first = appender.append(lines[0]!);
  await settle(); // the first line goes alone; the other 19 queue behind its sync
  const done = Promise.all([first, ...lines.slice(1).map((line) => appender.append(line))]);
  syncs[0]!.release();
  await settle();
  syncs[1]!.release();
  await done;
  assert.equal(written.join(""), lines.join(""));
  assert.equal(events.filter((event) => event === "sync").length, 2);
  await appender.close();
  assert.equal(events.at(-1), "close");
});

Deno.test("group commit answers each caller only after the sync that covers its line", async () => {
  const { file, events, syncs } = heldFile();
  const appender = createGroupAppender(file);
  const a = tracked(appender.append("a\n"));
  await settle();
  const b = tracked(appender.append("b\n"));
  const c = tracked(appender.append("c\n"));
  await settle();
  assert.deepEqual(events, ["write", "sync"]);
  assert.deepEqual([a.done, b.done, c.done], [false, false, false]);
  syncs[0]!.release();
  await settle();
  assert.deepEqual([a.done, b.done, c.done], [true, false, false]);
  assert.deepEqual(events, ["write", "sync", "write", "sync"]); // b and c: one write, one sync
  syncs[1]!.release();
  await settle();
  assert.deepEqual([b.done, c.done], [true, true]);
});

Deno.test("group commit rejects every caller of a batch whose sync failed, and goes on", async () => {
  const { file, written, syncs } = heldFile();
  const appender = createGroupAppender(file);
  const a = tracked(appender.append("a\n"));
  await settle();
  const b = tracked(appender.append("b\n"));
  const c = tracked(appender.append("c\n"));
  syncs[0]!.release();
  await settle();
  syncs[1]!.fail(new Error("EIO"));
  await settle();
  assert.equal(a.done, true);
  assert.equal((b.error as Error).message, "EIO");
  assert.equal((c.error as Error).message, "EIO");
  assert.equal(b.done || c.done, false);
  const d = tracked(appender.append("d\n"));
  await settle();
  syncs[2]!.release();
  await settle();
  assert.equal(d.done, true);
  assert.equal(written.join(""), "a\nb\nc\nd\n");
});

Deno.test("group commit starts the next batch on a fresh line after a torn write", async () => {
  const { file, written, syncs, refill } = heldFile({ failWriteAfter: 5 });
  const appender = createGroupAppender(file);
  const a = tracked(appender.append("abc\n"));
  await settle();
  const b = tracked(appender.append("defgh\n")); // only "d" fits, then ENOSPC
  syncs[0]!.release();
  await settle();
  assert.equal(a.done, true);
  assert.equal((b.error as Error).message, "ENOSPC");
  refill(); // the disk has room again: the next record must not glue onto the fragment
  const c = tracked(appender.append("{}\n"));
  await settle();
  syncs[1]!.release();
  await settle();
  assert.equal(c.done, true);
  assert.deepEqual(written.join("").split("\n"), ["abc", "d", "{}", ""]);
});

Deno.test("group commit on a real file keeps every concurrent line whole and in order", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-group-" });
  try {
    const path = `${dir}/messages.jsonl`;
    const file = await Deno.open(path, { append: true, create: true, mode: 0o600 });
    const appender = createGroupAppender(file);
    const lines = Array.from(
      { length: 200 },
      (_, i) => JSON.stringify({ i, m: "x".repeat(i) }) + "\n",
    );
    await Promise.all(lines.map((line) => appender.append(line)));
    await appender.close();
    assert.equal(await Deno.readTextFile(path), lines.join(""));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("group commit writes the next batch to a fresh file once the path was rotated", async () => {
  const first = heldFile();
  const second = heldFile();
  let id = "old";
  const source: FileSource = {
    identify: () => Promise.resolve(id),
    open: () => Promise.resolve(opened(second.file, "new")),
  };
  const appender = createOn(trackFile(opened(first.file, "old"), source));
  const a = tracked(appender.append("a\n"));
  await settle();
  first.syncs[0]!.release();
  await settle();
  id = "new"; // logrotate renamed the file away; the path names a new one
  const b = tracked(appender.append("b\n"));
  await settle();
  second.syncs[0]!.release();
  await settle();
  assert.deepEqual([a.done, b.done], [true, true]);
  assert.deepEqual(first.written, ["a\n"]);
  assert.deepEqual(second.written, ["b\n"]);
  assert.deepEqual(first.events.at(-1), "close");
});

Deno.test("group commit answers each caller of a half-written batch by its own line: whole ones succeed", async () => {
  // "a\n" goes alone; then b, c and d share a write that the disk cuts off inside d.
  const { file, written, syncs, events } = heldFile({ failWriteAfter: 2 + 3 + 3 + 1 });
  const appender = createGroupAppender(file);
  const a = tracked(appender.append("a\n"));
  await settle();
  const b = tracked(appender.append("bb\n"));
  const c = tracked(appender.append("cc\n"));
  const d = tracked(appender.append("dddd\n"));
  syncs[0]!.release();
  await settle();
  // The whole lines b and c are synced before anyone is answered.
  assert.deepEqual(events, ["write", "sync", "write", "sync"]);
  assert.deepEqual([b.done, c.done, d.done], [false, false, false]);
  syncs[1]!.release();
  await settle();
  assert.deepEqual([a.done, b.done, c.done], [true, true, true]);
  assert.equal((d.error as Error).message, "ENOSPC");
  assert.equal(written.join(""), "a\nbb\ncc\nd");
});

Deno.test("group commit fails every caller of a half-written batch whose sync failed", async () => {
  const { file, syncs } = heldFile({ failWriteAfter: 3 }); // "bb\n" fits, "cc\n" does not
  const appender = createGroupAppender(file);
  const b = tracked(appender.append("bb\n"));
  const c = tracked(appender.append("cc\n"));
  await settle();
  syncs[0]!.fail(new Error("EIO"));
  await settle();
  assert.equal((b.error as Error).message, "EIO");
  assert.equal((c.error as Error).message, "EIO");
});

Deno.test("group commit resolves each line with its file offset, after a torn last line too", async () => {
  const { file, syncs } = heldFile();
  // The file is 10 bytes long and ends mid-line: the batch starts with the fragment's newline.
  const appender = createOn(trackFile({ file, id: "", endsMidLine: true, size: 10 }));
  const offsets = Promise.all([appender.append("ab\n"), appender.append("é\n")]);
  await settle();
  syncs[0]!.release();
  assert.deepEqual(await offsets, [11, 14]); // "é" is two bytes
  const next = appender.append("x\n");
  await settle();
  syncs[1]!.release();
  assert.equal(await next, 17);
});

Deno.test("exclusive runs after the write in flight is synced, holds later lines back until it settles, then writes them in order; one task at a time, a failed one releases the file", async () => {
  const { file, events, syncs, written } = heldFile();
  const appender = createGroupAppender(file);
  const a = tracked(appender.append("a\n"));
  await settle(); // "a" is being written and synced
  const order: string[] = [];
  let finishFirst = () => {};
  const first = appender.exclusive(async () => {
    order.push("first starts");
    await new Promise<void>((resolve) => (finishFirst = resolve));
    order.push("first ends");
    throw new Error("the task failed");
  });
  const second = appender.exclusive(() => (order.push("second"), Promise.resolve("two")));
  const b = tracked(appender.append("b\n"));
  await settle();
  assert.deepEqual(order, [], "not before the write in flight is synced");
  syncs[0]!.release();
  await settle();
  assert.equal(a.done, true);
  assert.deepEqual(order, ["first starts"]);
  assert.deepEqual(events, ["write", "sync"], "b is held back");
  finishFirst();
  await assert.rejects(first, /the task failed/);
  assert.equal(await second, "two");
  assert.deepEqual(order, ["first starts", "first ends", "second"]);
  await settle();
  syncs[1]!.release();
  await settle();
  assert.equal(b.done, true);
  assert.equal(written.join(""), "a\nb\n");
  await appender.close();
});
