import assert from "node:assert/strict";
import { formatRecord } from "../../lib/storage/backup.ts";
import {
  loadOutbox,
  openOutbox,
  type Outbox,
  type OutboxSubmission,
  readSubmissions,
} from "../../lib/storage/outbox.ts";
import { INTERRUPTED, recoverRecords } from "../../lib/storage/recovery.ts";
import { hookFs, idle, latch } from "../support/memory_fs.ts";
import { logger, memory, open, PATH, submission } from "./_outbox_setup.ts";

const linesOf = (text: string) =>
  text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));

async function withDir(test: (path: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-outbox-" });
  try {
    await test(`${dir}/messages.jsonl.outbox`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Delivers and records `id`, as the queue and the answer do. */
async function deliver(outbox: Outbox, id: string) {
  await outbox.recorded(id, 502);
  await outbox.done(id, "2026-11-22T14:05:00Z", "delivered");
}

/** Delivers every held entry, oldest first, until none is held; returns their ids in order. */
async function drain(outbox: Outbox): Promise<string[]> {
  const order: string[] = [];
  for (let entry = outbox.entries().next().value; entry !== undefined;) {
    order.push(entry.id);
    await deliver(outbox, entry.id);
    entry = outbox.entries().next().value;
  }
  return order;
}

Deno.test("the outbox is created 0600, and a submission added is on disk and read back by id", () =>
  withDir(async (path) => {
    const outbox = await openOutbox(path, { log: () => {} });
    const a = submission();
    const b = submission("second");
    await Promise.all([outbox.add(a), outbox.add(b)]);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    // Both whole lines, in whichever order the two concurrent adds reached the file.
    const lines = linesOf(await Deno.readTextFile(path)) as { id: string }[];
    assert.deepEqual(
      lines.sort((x, y) => x.id.localeCompare(y.id)),
      [
        { op: "add", ...a },
        { op: "add", ...b },
      ].sort((x, y) => x.id.localeCompare(y.id)),
    );
    assert.deepEqual(await outbox.read(b.id), b);
    assert.deepEqual(await outbox.read(a.id), a);
    assert.equal(outbox.pendingCount, 2);
    await outbox.close();
  }));

Deno.test("the outbox rebuilds its state from its lines at start: attempts, errors, answers, done", async () => {
  const fs = memory();
  const outbox = await open(fs);
  const [a, b, c] = [submission(), submission(), submission()];
  for (const s of [a, b, c]) await outbox.add(s);
  await outbox.failed(a.id, "2026-11-22T14:03:10Z", "timeout");
  await outbox.failed(a.id, "2026-11-22T14:03:12Z", "502 bad gateway");
  await outbox.recorded(a.id, 502);
  await outbox.done(b.id, "2026-11-22T14:03:11Z", "delivered");
  await outbox.recorded(b.id, 200);
  await outbox.done(c.id, "2026-11-22T14:03:11Z", "delivered"); // delivered, not yet recorded
  await outbox.close();

  const { entries, skipped } = await loadOutbox(PATH, fs);
  assert.equal(skipped, 0);
  assert.deepEqual([...entries.keys()], [a.id, c.id]);
  const ea = entries.get(a.id)!;
  assert.equal(ea.attempts, 2);
  assert.equal(ea.firstError, "timeout");
  assert.equal(ea.lastError, "502 bad gateway");
  assert.equal(ea.lastTs, "2026-11-22T14:03:12Z");
  assert.equal(ea.status, 502);
  assert.equal(ea.done, false);
  assert.equal(entries.get(c.id)!.done, "delivered");
  assert.equal(entries.get(c.id)!.status, undefined);
  const again = await open(fs);
  assert.equal(again.pendingCount, 1);
  assert.deepEqual(await again.read(c.id), c);
  await again.close();
});

Deno.test("a torn last line (a crash mid-write) is skipped, and the next line starts fresh", async () => {
  const fs = memory();
  const a = submission();
  fs.writeText(PATH, JSON.stringify({ op: "add", ...a }) + '\n{"op":"add","id":"x');
  const outbox = await open(fs);
  assert.equal(outbox.pendingCount, 1);
  const b = submission();
  await outbox.add(b);
  assert.deepEqual(await outbox.read(b.id), b);
  await outbox.close();
  assert.ok(
    fs.readText(PATH).includes('{"op":"add","id":"x\n{"op":"add"'),
    "the fragment keeps its own line",
  );
  const { entries, skipped } = await loadOutbox(PATH, fs);
  assert.deepEqual([...entries.keys()], [a.id, b.id]);
  assert.equal(skipped, 1);
});

Deno.test("compaction keeps only what is still needed, its state folded in, and reads still work", () =>
  withDir(async (path) => {
    const outbox = await openOutbox(path, { log: () => {} });
    const all = Array.from({ length: 50 }, () => submission("x".repeat(200)));
    for (const s of all) await outbox.add(s);
    for (const [i, s] of all.entries()) {
      if (i % 10 === 0) {
        await outbox.failed(s.id, "2026-11-22T14:04:00Z", "timeout");
        await outbox.recorded(s.id, 502);
      } else {
        await outbox.done(s.id, "2026-11-22T14:04:00Z", "delivered");
        await outbox.recorded(s.id, 200);
      }
    }
    const before = (await Deno.stat(path)).size;
    await outbox.compact();
    const after = (await Deno.stat(path)).size;
    assert.ok(after < before / 5, `${before} -> ${after}`);
    const kept = linesOf(await Deno.readTextFile(path));
    assert.deepEqual(
      kept.map((line) => line.id),
      all.filter((_, i) => i % 10 === 0).map((s) => s.id),
    );
    assert.deepEqual(kept[0], {
      op: "add",
      ...all[0],
      status: 502,
      attempts: 1,
      first_error: "timeout",
      last_error: "timeout",
      last_ts: "2026-11-22T14:04:00Z",
    });
    assert.deepEqual(await outbox.read(all[40]!.id), all[40]);
    // Appends go on after the compacted lines, and a reopened outbox agrees.
    const late = submission();
    await outbox.add(late);
    assert.deepEqual(await outbox.read(late.id), late);
    await outbox.close();
    const { entries } = await loadOutbox(path);
    assert.equal(entries.size, 6);
    assert.equal(entries.get(all[10]!.id)!.attempts, 1);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  }));

Deno.test("the outbox compacts itself once dead lines outweigh live ones", async () => {
  const fs = memory();
  const outbox = await open(fs, { compactAfterBytes: 4096 });
  for (let i = 0; i < 40; i++) {
    const s = submission("y".repeat(300));
    await outbox.add(s);
    await outbox.done(s.id, "2026-11-22T14:04:00Z", "delivered");
    await outbox.recorded(s.id, 200);
  }
  await outbox.add(submission("still pending"));
  await outbox.close();
  assert.ok(fs.readText(PATH).length < 4096 + 1000, "the file was compacted on the way");
  const { entries } = await loadOutbox(PATH, fs);
  assert.equal(entries.size, 1);
});

Deno.test("an entry given up or delivered is pending no more at once, before its line is synced", async () => {
  const fs = memory();
  const outbox = await open(fs);
  const s = submission();
  await outbox.add(s);
  const done = outbox.done(s.id, "2026-11-22T14:04:00Z", "given_up");
  assert.equal(outbox.pendingCount, 0);
  assert.equal(outbox.get(s.id)!.done, "given_up");
  await done;
  await outbox.close();
});

Deno.test("readSubmissions reads the entries' texts from the file, read-only", () =>
  withDir(async (path) => {
    const outbox = await openOutbox(path, { log: () => {} });
    const all = [submission(), submission(), submission()];
    for (const s of all) await outbox.add(s);
    await outbox.close();
    await Deno.chmod(path, 0o400);
    const { entries } = await loadOutbox(path);
    const read: Array<OutboxSubmission | undefined> = [];
    for await (const s of readSubmissions(path, entries.values())) read.push(s);
    assert.deepEqual(read, all);
    // An entry whose line is no longer where the index says (a compaction since): no text, and
    // never the next one's under its id.
    const moved = { ...entries.get(all[0]!.id)!, offset: entries.get(all[1]!.id)!.offset };
    const shifted: Array<OutboxSubmission | undefined> = [];
    for await (const s of readSubmissions(path, [moved, entries.get(all[2]!.id)!])) {
      shifted.push(s);
    }
    assert.deepEqual(shifted, [undefined, all[2]]);
  }));

Deno.test("recovery writes the missing backup records: interrupted if undelivered, ok if it had arrived", async () => {
  const fs = memory();
  const outbox = await open(fs);
  const [answered, interrupted, arrived] = [submission(), submission(), submission()];
  for (const s of [answered, interrupted, arrived]) await outbox.add(s);
  await outbox.recorded(answered.id, 502);
  await outbox.done(arrived.id, "2026-11-22T14:03:10Z", "delivered");
  await outbox.close(); // a crash: neither of the last two was answered

  const reopened = await open(fs);
  const records: string[] = [];
  const { log, events } = logger();
  const n = await recoverRecords(
    reopened,
    (line) => (records.push(line), Promise.resolve()),
    log,
  );
  assert.equal(n, 2);
  const { ts, name, contact, message, ip } = interrupted;
  assert.deepEqual(records, [
    formatRecord({
      ts,
      id: interrupted.id,
      name,
      contact,
      message,
      ip,
      messenger_ok: false,
      messenger_error: INTERRUPTED,
    }),
    formatRecord({ ...arrived, messenger_ok: true, messenger_error: null }),
  ]);
  assert.deepEqual(events(), ["record_recovered", "record_recovered"]);
  // Still to be delivered: the interrupted one; the arrived one is finished.
  assert.equal(reopened.pendingCount, 2);
  assert.deepEqual([...reopened.entries()].map((e) => e.id), [answered.id, interrupted.id]);
  await reopened.close();
  // A second start writes nothing again.
  const third = await open(fs);
  assert.equal(await recoverRecords(third, () => Promise.reject(new Error("no")), () => {}), 0);
  await third.close();
});

Deno.test("an outbox file removed under the service is written anew, pending entries first, before the next append", () =>
  withDir(async (path) => {
    const outbox = await openOutbox(path, { log: () => {} });
    const pending = submission("pending");
    const delivered = submission("delivered");
    await outbox.add(pending);
    await outbox.add(delivered);
    await outbox.done(delivered.id, "2026-11-22T14:04:00Z", "delivered");
    await outbox.recorded(delivered.id, 200);
    await Deno.remove(path);
    const next = submission("next");
    await outbox.add(next);
    // Nothing lives only in a file no path names: the new file holds what is pending.
    assert.deepEqual(linesOf(await Deno.readTextFile(path)).map((line) => line.id), [
      pending.id,
      next.id,
    ]);
    assert.equal((await outbox.read(pending.id)).message, pending.message);
    const index = await loadOutbox(path);
    assert.deepEqual([...index.entries.keys()], [pending.id, next.id]);
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    await outbox.close();
  }));

Deno.test("an outbox whose directory is gone refuses appends until it is back, then keeps every pending entry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-outbox-" });
  const path = `${dir}/data/messages.jsonl.outbox`;
  try {
    await Deno.mkdir(`${dir}/data`);
    const outbox = await openOutbox(path, { log: () => {} });
    const kept = submission("kept");
    await outbox.add(kept);
    await Deno.remove(`${dir}/data`, { recursive: true });
    await assert.rejects(outbox.add(submission("refused")));
    await assert.rejects(outbox.add(submission("refused again")));
    await Deno.mkdir(`${dir}/data`);
    const after = submission("after");
    await outbox.add(after);
    assert.deepEqual(linesOf(await Deno.readTextFile(path)).map((line) => line.id), [
      kept.id,
      after.id,
    ]);
    assert.equal(outbox.pendingCount, 2);
    await outbox.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the outbox holds at most its window in memory; the rest wait on disk and come in oldest first as it drains", async () => {
  const fs = memory();
  const outbox = await open(fs, { window: 4 });
  const all = Array.from({ length: 10 }, () => submission());
  for (const s of all) await outbox.add(s);
  assert.equal(outbox.pendingCount, 10);
  const held = () => [...outbox.entries()].map((entry) => entry.id);
  assert.deepEqual(held(), all.slice(0, 4).map((s) => s.id));
  const order: string[] = [];
  while (outbox.pendingCount > 0) {
    const [oldest] = outbox.entries();
    assert.ok(oldest !== undefined, `${outbox.pendingCount} pending, none held`);
    assert.ok([...outbox.entries()].length <= 4);
    assert.equal((await outbox.read(oldest.id)).id, oldest.id);
    order.push(oldest.id);
    await deliver(outbox, oldest.id);
  }
  assert.deepEqual(order, all.map((s) => s.id));
  // New submissions once the tail is drained are held again.
  const late = submission();
  await outbox.add(late);
  assert.deepEqual(held(), [late.id]);
  await outbox.close();
});

Deno.test("an outbox reopened with a long backlog holds the oldest, counts all, and holds unanswered ones for recovery", async () => {
  const fs = memory();
  const first = await open(fs, { window: 100 });
  const all = Array.from({ length: 10 }, () => submission());
  for (const s of all) {
    await first.add(s);
    await first.recorded(s.id, 502);
  }
  await first.failed(all[0]!.id, "2026-11-22T14:04:00Z", "timeout");
  await first.done(all[6]!.id, "2026-11-22T14:04:00Z", "delivered");
  await first.done(all[7]!.id, "2026-11-22T14:04:00Z", "given_up");
  const unanswered = submission(); // a crash before its sender was answered
  await first.add(unanswered);
  await first.close();

  const outbox = await open(fs, { window: 3 });
  assert.deepEqual(
    [...outbox.entries()].map((entry) => entry.id),
    [...all.slice(0, 3).map((s) => s.id), unanswered.id],
  );
  assert.equal(outbox.get(all[0]!.id)!.attempts, 1);
  assert.equal(outbox.pendingCount, 9);
  const expected = [0, 1, 2].map((i) => all[i]!.id).concat(unanswered.id)
    .concat([3, 4, 5, 8, 9].map((i) => all[i]!.id));
  assert.deepEqual(await drain(outbox), expected);
  assert.equal(outbox.pendingCount, 0);
  await outbox.close();
});

Deno.test("compaction keeps every submission waiting on disk beyond the window, with its state", async () => {
  const fs = memory();
  const outbox = await open(fs, { window: 3 });
  const all = Array.from({ length: 10 }, () => submission("z".repeat(100)));
  for (const s of all) await outbox.add(s);
  for (const s of all) await outbox.recorded(s.id, 502);
  await outbox.failed(all[8]!.id, "2026-11-22T14:04:00Z", "timeout"); // on disk only
  await deliver(outbox, all[0]!.id);
  await outbox.compact();
  const { entries, skipped } = await loadOutbox(PATH, fs);
  assert.equal(skipped, 0);
  assert.deepEqual([...entries.keys()], all.slice(1).map((s) => s.id));
  assert.equal(entries.get(all[8]!.id)!.attempts, 1);
  assert.equal(entries.get(all[8]!.id)!.status, 502);
  // Reads and the drain go on in the compacted file.
  const order: string[] = [];
  for (let entry = outbox.entries().next().value; entry !== undefined;) {
    assert.deepEqual(await outbox.read(entry.id), all.find((s) => s.id === entry!.id));
    order.push(entry.id);
    await deliver(outbox, entry.id);
    entry = outbox.entries().next().value;
  }
  assert.deepEqual(order, all.slice(1).map((s) => s.id));
  await outbox.close();
});

Deno.test("an outbox removed while its rewrite cannot be written refuses appends, never writing to a file that lacks what it holds", async () => {
  const base = memory();
  let full = false;
  const fs = hookFs(base, {
    before(call) {
      if (full && call.op === "open" && call.path === `${PATH}.tmp`) {
        throw new Deno.errors.PermissionDenied("the rewrite cannot be written");
      }
    },
  });
  const outbox = await open(fs);
  const held = submission("held");
  await outbox.add(held);
  await base.remove(PATH);
  full = true;
  await assert.rejects(outbox.add(submission("refused")));
  await assert.rejects(outbox.add(submission("refused too")));
  full = false;
  const after = submission("after");
  await outbox.add(after);
  assert.deepEqual(linesOf(base.readText(PATH)).map((line) => line.id), [held.id, after.id]);
  assert.deepEqual(await outbox.read(held.id), held);
  assert.deepEqual(await outbox.read(after.id), after);
  await outbox.close();
});

Deno.test("changes to submissions on disk made while the window refills are never lost: none comes back pending", async () => {
  const base = memory();
  // Holds the refill's scan of the tail once it has read to the end of the file.
  const scan = latch(false);
  const fs = hookFs(base, {
    after: (call) => scan.pass(call.op === "read" && call.result === null),
  });
  const outbox = await open(fs, { window: 4 });
  const all = Array.from({ length: 4 }, () => submission());
  for (const s of all) {
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  // The window is full: two new submissions go to the disk only, their callers sending them.
  const [sent, failed] = [submission("sent by its caller"), submission("failed for its caller")];
  await outbox.add(sent);
  await outbox.add(failed);
  await deliver(outbox, all[0]!.id);
  scan.arm();
  const refilled = deliver(outbox, all[1]!.id); // two left pending: the window refills
  await scan.at;
  // The callers finish while the scan is held: their lines land after what it saw.
  const sentDone = outbox.done(sent.id, "2026-11-22T14:05:00Z", "delivered"); // waits for it
  await outbox.failed(failed.id, "2026-11-22T14:05:00Z", "502 bad gateway");
  await idle();
  scan.release();
  await Promise.all([refilled, sentDone]);
  await outbox.recorded(sent.id, 200);
  await outbox.recorded(failed.id, 502);
  assert.equal(outbox.get(sent.id), undefined, "delivered and recorded: not held");
  const kept = outbox.get(failed.id)!;
  assert.equal(kept.status, 502);
  assert.equal(kept.attempts, 1);
  assert.equal(outbox.pendingCount, 3);
  assert.deepEqual(await drain(outbox), [all[2]!.id, all[3]!.id, failed.id]);
  assert.equal(outbox.pendingCount, 0);
  await outbox.close();
  assert.equal((await loadOutbox(PATH, base)).entries.size, 0);
});

Deno.test("a change missed by a refill and written only after a compaction is still applied", async () => {
  const base = memory();
  // Holds the refill at the end of its scan, and the change's write at its identity check.
  const scan = latch(false);
  const write = latch(false);
  const fs = hookFs(base, {
    before: (call) => write.pass(call.op === "lstat" && call.path === PATH),
    after: (call) => scan.pass(call.op === "read" && call.result === null),
  });
  const outbox = await open(fs, { window: 2 });
  const [a, b, late] = [submission(), submission(), submission("on disk")];
  for (const s of [a, b]) {
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  await outbox.add(late); // the window is full: on disk only
  await outbox.recorded(late.id, 502);
  scan.arm();
  const refilled = deliver(outbox, a.id); // one left pending: the window refills
  await scan.at;
  write.arm();
  const failed = outbox.failed(late.id, "2026-11-22T14:05:00Z", "timeout"); // not held yet
  await write.at;
  scan.release();
  await refilled; // the refill read `late` in, without the failure
  assert.equal(outbox.get(late.id)?.attempts, 0);
  await outbox.compact();
  write.release(); // the failure is written to the compacted file
  await failed;
  assert.equal(outbox.get(late.id)?.attempts, 1);
  assert.equal(outbox.get(late.id)?.lastError, "timeout");
  await outbox.close();
  assert.equal((await loadOutbox(PATH, base)).entries.get(late.id)?.attempts, 1);
});

Deno.test("an outbox removed under the service heals while a refill waits for the healing write: nothing hangs", async () => {
  const base = memory();
  // The next add's identity check answers late: it is a write under way when done() refills.
  const check = latch(false);
  const fs = hookFs(base, {
    after: (call) => check.pass(call.op === "lstat" && call.path === PATH),
  });
  const outbox = await open(fs, { window: 2 });
  const [a, b, late] = [submission(), submission(), submission()];
  for (const s of [a, b, late]) {
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  await base.remove(PATH);
  check.arm();
  const added = outbox.add(submission()); // asked while the file is gone; answered late
  await check.at;
  const done = outbox.done(a.id, "2026-11-22T14:05:00Z", "delivered"); // heals, then refills
  await idle();
  check.release();
  // A deadlock leaves nothing to run: Deno fails the test ("promise resolution is still
  // pending but the event loop has already resolved").
  await Promise.all([added, done]);
  assert.ok(outbox.get(late.id), "the one on disk was read in");
  await outbox.close();
});

Deno.test("a refill skipped while a compaction ran is made once it is over", async () => {
  const base = memory();
  // Holds the sync of done(a)'s line while a compaction begins.
  const synced = latch(false);
  const fs = hookFs(base, {
    before: (call) => synced.pass(call.op === "sync" && call.path === PATH),
  });
  const outbox = await open(fs, { window: 1 });
  const [a, late] = [submission(), submission()];
  for (const s of [a, late]) {
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  synced.arm();
  const done = outbox.done(a.id, "2026-11-22T14:05:00Z", "delivered");
  await synced.at;
  const compacted = outbox.compact();
  synced.release();
  await Promise.all([done, compacted]);
  await idle();
  assert.ok(outbox.get(late.id), "the submission on disk is read into the empty window");
  await outbox.close();
});
