import assert from "node:assert/strict";
import {
  loadOutbox,
  openOutbox,
  OutboxEntryDamaged,
  type OutboxSubmission,
} from "../../lib/storage/outbox.ts";
import { recoverRecords } from "../../lib/storage/recovery.ts";
import { hookFs } from "../support/memory_fs.ts";
import { logger, memory, open, PATH, submission as newSubmission } from "./_outbox_setup.ts";

const submission = (message = "hello") => newSubmission(message, "fa");
const TMP = `${PATH}.tmp`;
const DAMAGED = `${PATH}.damaged`;

const addLine = (s: OutboxSubmission) => JSON.stringify({ op: "add", ...s }) + "\n";
const emfile = () =>
  Object.assign(new Error("Too many open files (os error 24)"), { code: "EMFILE" });

/** Lines of delivered-and-recorded submissions: dead bytes a compaction drops. */
function deadLines(n: number, size = 300): string {
  let text = "";
  for (let i = 0; i < n; i++) {
    const s = submission("d".repeat(size));
    text += addLine(s) + JSON.stringify({ op: "recorded", id: s.id, status: 200 }) + "\n" +
      JSON.stringify({ op: "done", id: s.id, ts: s.ts, result: "delivered" }) + "\n";
  }
  return text;
}

Deno.test("an entry whose offset points at another line is read from where its line is, never given up", async () => {
  const fs = memory();
  const { log, events } = logger();
  const outbox = await open(fs, { log });
  const all = [submission(), submission(), submission()];
  for (const s of all) await outbox.add(s);
  // Another writer shifted the file under the offsets held (what a second instance did).
  const other = submission("written by another process");
  fs.writeText(PATH, addLine(other) + fs.readText(PATH));
  for (const s of all) assert.deepEqual(await outbox.read(s.id), s);
  assert.ok(events().includes("outbox_entry_moved"));
  await outbox.close();
});

Deno.test("a compaction whose read handle cannot be opened (EMFILE) keeps the old file and every entry readable", async () => {
  const base = memory();
  let armed = false;
  let failOpens = false;
  const fs = hookFs(base, {
    before(call) {
      // Every open for reading once the compaction has begun writing its file fails.
      if (failOpens && call.op === "open" && call.options?.read === true) throw emfile();
      if (armed && call.op === "open" && call.path === TMP && call.options?.createNew === true) {
        failOpens = true;
      }
    },
  });
  const { log } = logger();
  const outbox = await open(fs, { log });
  const all = Array.from({ length: 20 }, () => submission());
  for (const s of all) await outbox.add(s);
  const gone = submission("delivered: the compaction drops it");
  await outbox.add(gone);
  await outbox.done(gone.id, gone.ts, "delivered");
  await outbox.recorded(gone.id, 200);
  const before = base.readText(PATH);
  armed = true;
  await assert.rejects(outbox.compact(), /Too many open files/);
  armed = false;
  failOpens = false;
  assert.equal(base.exists(TMP), false, "the temporary file is removed");
  assert.equal(base.readText(PATH), before, "the old file is in place");
  for (const s of all) assert.deepEqual(await outbox.read(s.id), s);
  assert.equal(outbox.pendingCount, 20);
  await outbox.compact(); // and the next one works
  for (const s of all) assert.deepEqual(await outbox.read(s.id), s);
  await outbox.close();
});

Deno.test("a read that fails with an I/O error is not a verdict on the entry: it rejects as itself and the next read works", async () => {
  const base = memory();
  let fail = false;
  const fs = hookFs(base, {
    before(call) {
      if (fail && call.op === "read") {
        fail = false;
        throw emfile();
      }
    },
  });
  const outbox = await open(fs);
  const s = submission();
  await outbox.add(s);
  fail = true;
  const error = await outbox.read(s.id).then(() => undefined, (error) => error);
  assert.ok(error instanceof Error && !(error instanceof OutboxEntryDamaged), String(error));
  assert.deepEqual(await outbox.read(s.id), s);
  await outbox.close();
});

Deno.test("a compaction at start that fails (a full disk) removes its temporary file, is logged, and does not stop start-up", async () => {
  const base = memory();
  const pending = submission("still pending");
  base.writeText(PATH, deadLines(20) + addLine(pending));
  const fs = hookFs(base, {
    before(call) {
      if (call.op === "write" && call.path === TMP) {
        throw new Error("No space left on device (os error 28)");
      }
    },
  });
  const { log, logs } = logger();
  const outbox = await open(fs, { log, compactAfterBytes: 4096 });
  assert.equal(base.exists(TMP), false);
  const failed = logs.find((line) => line.event === "outbox_compaction_failed");
  assert.equal(failed?.level, "error");
  assert.match(String(failed?.error), /No space left/);
  assert.equal(outbox.pendingCount, 1);
  assert.deepEqual(await outbox.read(pending.id), pending);
  const next = submission();
  await outbox.add(next);
  assert.deepEqual(await outbox.read(next.id), next);
  await outbox.close();
});

Deno.test("a background compaction that fails is logged under its own event, cleans up, and later writes go on", async () => {
  const base = memory();
  let full = true;
  const fs = hookFs(base, {
    before(call) {
      if (full && call.op === "sync" && call.path === TMP) {
        throw new Error("No space left on device (os error 28)");
      }
    },
  });
  const { log, logs } = logger();
  const outbox = await open(fs, { log, compactAfterBytes: 4096 });
  for (let i = 0; i < 20; i++) {
    const s = submission("y".repeat(300));
    await outbox.add(s);
    await outbox.done(s.id, s.ts, "delivered");
    await outbox.recorded(s.id, 200);
  }
  const failures = logs.filter((line) => line.event === "outbox_compaction_failed");
  assert.ok(failures.length > 0);
  assert.ok(failures.every((line) => /No space left/.test(String(line.error))));
  assert.equal(base.exists(TMP), false);
  full = false;
  const last = submission();
  await outbox.add(last);
  await outbox.done(last.id, last.ts, "delivered");
  await outbox.recorded(last.id, 200);
  await outbox.close();
  assert.equal((await loadOutbox(PATH, base)).entries.size, 0);
});

Deno.test("a refill that fails in the background is logged under its own event", async () => {
  const base = memory();
  let failReads = false;
  const fs = hookFs(base, {
    before(call) {
      if (failReads && call.op === "read") throw new Error("Input/output error (os error 5)");
    },
  });
  const { log, logs } = logger();
  const outbox = await open(fs, { log, window: 1 });
  const [a, late] = [submission(), submission()];
  for (const s of [a, late]) {
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  failReads = true;
  await outbox.done(a.id, a.ts, "delivered"); // its line is written; the refill fails
  const failed = logs.find((line) => line.event === "outbox_refill_failed");
  assert.match(String(failed?.error), /Input\/output error/);
  failReads = false;
  await outbox.close();
});

Deno.test("a damaged add line of a submission in flight at a crash is logged and kept aside, and start-up goes on", async () => {
  const fs = memory();
  const good = submission();
  const broken = submission();
  // Its head is whole, its text is not (a damaged disk block).
  const damaged = addLine(broken).replace('"message"', '"mess\u0000age" oops');
  fs.writeText(PATH, addLine(good) + damaged);
  const { log, events } = logger();
  const outbox = await open(fs, { log });
  const records: string[] = [];
  const n = await recoverRecords(outbox, (line) => (records.push(line), Promise.resolve()), log);
  assert.equal(n, 1);
  assert.equal(records.length, 1);
  assert.ok(events().includes("record_unrecoverable"));
  assert.ok(events().includes("outbox_entry_damaged"));
  assert.equal(fs.readText(DAMAGED), damaged, "kept aside for the operator");
  await assert.rejects(outbox.read(broken.id), OutboxEntryDamaged);
  assert.deepEqual(await outbox.read(good.id), good);
  await outbox.close();
  // The next start does not try again.
  const again = await open(fs, { log });
  assert.equal(await recoverRecords(again, () => Promise.reject(new Error("no")), log), 0);
  await again.close();
});

Deno.test("damaged lines are logged with their count, kept aside, and taken out of the outbox; loadOutbox counts them", async () => {
  const fs = memory();
  const [a, b] = [submission(), submission()];
  const garbage = ["{not json", '{"op":"frobnicate","id":"x"}'];
  fs.writeText(PATH, addLine(a) + garbage[0] + "\n" + addLine(b) + garbage[1] + "\n");
  assert.equal((await loadOutbox(PATH, fs)).skipped, 2);
  const { log, logs } = logger();
  const outbox = await open(fs, { log });
  const logged = logs.find((line) => line.event === "outbox_lines_damaged");
  assert.equal(logged?.lines, 2);
  assert.equal(logged?.file, DAMAGED);
  assert.deepEqual(fs.readText(DAMAGED).split("\n").filter(Boolean), garbage);
  assert.deepEqual(await outbox.read(b.id), b);
  await outbox.close();
  const index = await loadOutbox(PATH, fs);
  assert.equal(index.skipped, 0, "the outbox was rewritten without them");
  assert.equal(index.keptAside, 2);
  assert.deepEqual([...index.entries.keys()], [a.id, b.id]);
});

Deno.test("a compaction syncs the directory after its rename, and a refused directory sync is logged", async () => {
  const fs = memory();
  const { log, events } = logger();
  const outbox = await open(fs, { log });
  await outbox.add(submission());
  await outbox.compact();
  assert.equal(fs.directorySyncs.get("/data"), 1);
  const refused = hookFs(fs, {
    before(call) {
      if (call.op === "open" && call.path === "/data") {
        throw new Deno.errors.NotCapable('Requires read access to "/data"');
      }
    },
  });
  const other = await openOutbox(PATH, { log, fs: refused });
  await other.compact();
  assert.ok(events().includes("outbox_directory_sync_failed"));
  await outbox.close();
  await other.close();
});

Deno.test("a symbolic link at the compaction's temporary file is removed, never followed: its target is untouched", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-outbox-" });
  try {
    const path = `${dir}/messages.jsonl.outbox`;
    const target = `${dir}/victim`;
    await Deno.writeTextFile(target, "precious\n");
    await Deno.symlink(target, `${path}.tmp`);
    const outbox = await openOutbox(path, { log: () => {} });
    const s = submission();
    await outbox.add(s);
    await outbox.compact();
    assert.equal(await Deno.readTextFile(target), "precious\n");
    assert.equal((await Deno.lstat(path)).isSymlink, false);
    assert.deepEqual(await outbox.read(s.id), s);
    await outbox.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an outbox path that is a symbolic link is refused: contactd never writes through one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-outbox-" });
  try {
    const path = `${dir}/messages.jsonl.outbox`;
    const target = `${dir}/victim`;
    await Deno.writeTextFile(target, "precious\n");
    await Deno.symlink(target, path);
    await assert.rejects(openOutbox(path, { log: () => {} }), /symbolic link/);
    assert.equal(await Deno.readTextFile(target), "precious\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
