import assert from "node:assert/strict";
import { formatRecord } from "../../lib/storage/backup.ts";
import { type Outbox, OutboxEntryDamaged } from "../../lib/storage/outbox.ts";
import { INTERRUPTED, recoverRecords, recoverWithStore } from "../../lib/storage/recovery.ts";
import { call, openLocalStore, type Store, StoreError } from "../../lib/storage/store.ts";
import { openOutbox } from "../../lib/storage/outbox.ts";
import { recordIdsIn } from "../../lib/storage/backup_scan.ts";
import { logger, open, submission } from "./_outbox_setup.ts";

/** Delivers and records `id`, as the queue and the answer do. */
async function deliver(outbox: Outbox, id: string) {
  await outbox.recorded(id, 200);
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

Deno.test("a submission added is read back by id, with its fields, form, contact's source, spam score and case it follows up", async () => {
  const outbox = await open({});
  const plain = submission();
  const full = {
    ...submission(),
    form: "site-b",
    contactFrom: "email",
    fields: { company: "ACME", "order no": "42" },
    spamScore: 0.973,
    followUp: "a1case0",
  };
  await Promise.all([outbox.add(plain), outbox.add(full)]);
  assert.deepEqual(await outbox.read(plain.id), plain);
  assert.deepEqual(await outbox.read(full.id), full);
  assert.equal(outbox.get(full.id)?.form, "site-b");
  assert.equal(outbox.pendingCount, 2);
  await outbox.close();
});

Deno.test("the outbox's state survives a restart: attempts, errors, answers, done", async () => {
  const owner = {};
  const outbox = await open(owner);
  const [a, b, c] = [submission(), submission(), submission()];
  for (const s of [a, b, c]) await outbox.add(s);
  await outbox.failed(a.id, "2026-11-22T14:04:00Z", "HTTP 502");
  await outbox.failed(a.id, "2026-11-22T14:05:00Z", "timeout");
  await outbox.recorded(a.id, 502);
  await deliver(outbox, b.id);
  await outbox.done(c.id, "2026-11-22T14:06:00Z", "given_up");
  await outbox.close();

  const reopened = await open(owner);
  assert.deepEqual([...reopened.entries()].map((e) => e.id), [a.id, c.id]);
  const entry = reopened.get(a.id)!;
  assert.equal(entry.attempts, 2);
  assert.equal(entry.firstError, "HTTP 502");
  assert.equal(entry.lastError, "timeout");
  assert.equal(entry.lastTs, "2026-11-22T14:05:00Z");
  assert.equal(entry.status, 502);
  assert.equal(reopened.get(c.id)?.done, "given_up");
  assert.equal(reopened.get(c.id)?.status, undefined, "given up but not yet recorded");
  assert.equal(reopened.pendingCount, 1);
  await reopened.close();
});

Deno.test("a second done changes nothing: given up stays given up", async () => {
  const outbox = await open({});
  const s = submission();
  await outbox.add(s);
  await outbox.done(s.id, "2026-11-22T14:06:00Z", "given_up");
  await outbox.done(s.id, "2026-11-22T14:07:00Z", "delivered");
  assert.equal(outbox.get(s.id)?.done, "given_up");
  assert.equal(outbox.pendingCount, 0);
  await outbox.close();
});

Deno.test("a finished submission's row is deleted: its text cannot be read back", async () => {
  const outbox = await open({});
  const s = submission();
  await outbox.add(s);
  await deliver(outbox, s.id);
  assert.equal(outbox.get(s.id), undefined);
  await assert.rejects(() => outbox.read(s.id), OutboxEntryDamaged);
  await outbox.close();
});

Deno.test("the outbox holds at most its window in memory; the rest wait in the database and come in oldest first as it drains", async () => {
  const owner = {};
  const outbox = await open(owner, { window: 4 });
  const all = Array.from({ length: 11 }, () => submission());
  for (const s of all) await outbox.add(s);
  assert.equal([...outbox.entries()].length, 4);
  assert.equal(outbox.pendingCount, 11);
  assert.deepEqual(await drain(outbox), all.map((s) => s.id));
  assert.equal(outbox.pendingCount, 0);
  await outbox.close();
});

Deno.test("an outbox reopened with a long backlog holds the oldest and counts all", async () => {
  const owner = {};
  const first = await open(owner, { window: 3 });
  const all = Array.from({ length: 7 }, () => submission());
  for (const s of all) await first.add(s);
  await first.close();
  const outbox = await open(owner, { window: 3 });
  assert.deepEqual([...outbox.entries()].map((e) => e.id), all.slice(0, 3).map((s) => s.id));
  assert.equal(outbox.pendingCount, 7);
  const waiting: string[] = [];
  for await (const s of outbox.waiting()) waiting.push(s.id);
  assert.deepEqual(waiting, all.map((s) => s.id), "waiting() reaches beyond the window");
  await outbox.close();
});

Deno.test("an add the database refuses rejects, and memory does not take it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const real = openLocalStore(`${dir}/m.db`, { create: true });
    let refuse = false;
    const full = () => new StoreError({ name: "Error", message: "full", errcode: 13 });
    const store: Store = {
      ...real,
      run: (op, args) => refuse ? Promise.reject(full()) : real.run(op, args),
      transaction: (calls) => refuse ? Promise.reject(full()) : real.transaction(calls),
    };
    const outbox = await openOutbox(store);
    refuse = true;
    const s = submission();
    await assert.rejects(() => outbox.add(s), StoreError);
    assert.equal(outbox.pendingCount, 0);
    assert.equal(outbox.get(s.id), undefined);
    await real.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("recovery writes only the missing backup records: interrupted if undelivered, ok if it had arrived, none twice", async () => {
  const [answered, interrupted, arrived, written] = [
    submission(),
    submission(),
    { ...submission(), form: "site-b", fields: { company: "ACME" } },
    submission(),
  ];
  const rows = [
    { id: interrupted.id, submission: interrupted, delivered: false },
    { id: arrived.id, submission: arrived, delivered: true },
    { id: written.id, submission: written, delivered: true },
  ];
  const records: string[] = [];
  const marked: string[] = [];
  const { log, events } = logger();
  const n = await recoverRecords({
    unrecorded: () => Promise.resolve(rows),
    // The last one's record reached the backup file before the crash.
    inBackup: (ids) => Promise.resolve(new Set([...ids].filter((id) => id === written.id))),
    append: (line) => (records.push(line), Promise.resolve()),
    recorded: (id) => (marked.push(id), Promise.resolve()),
    log,
  });
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
  assert.deepEqual(marked, [interrupted.id, arrived.id, written.id]);
  assert.deepEqual(events(), ["record_recovered", "record_recovered", "record_found"]);
  assert.notEqual(answered.id, interrupted.id);
});

Deno.test("recovery over the database finds a record the crash left unmarked in the backup file and writes none twice", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const messagesFile = `${dir}/messages.jsonl`;
    const store = openLocalStore(`${dir}/messages.jsonl.db`, { create: true });
    const outbox = await openOutbox(store);
    const [done, lost] = [submission(), submission()];
    await outbox.add(done);
    await outbox.add(lost);
    // `done`'s record was appended and synced, but the crash came before it was marked.
    await Deno.writeTextFile(
      messagesFile,
      "x".repeat(100) + "\n" + formatRecord({ ...done, messenger_ok: true, messenger_error: null }),
    );
    const appended: string[] = [];
    const backup = {
      append: async (line: string) => {
        appended.push(line);
        await Deno.writeTextFile(messagesFile, line, { append: true });
        return 0;
      },
    };
    const deps = { store, outbox, backup, messagesFile, log: () => {} };
    assert.equal(await recoverWithStore(deps), 1);
    assert.equal(appended.length, 1);
    assert.match(appended[0]!, new RegExp(`"id":"${lost.id}".*"interrupted"`));
    // A second start finds nothing to do.
    assert.equal(await recoverWithStore(deps), 0);
    assert.equal(appended.length, 1);
    // A third crash: the record written first after that start (right at the offset it saved)
    // is found too, and one cut by the margin never counts as found.
    const next = submission();
    await outbox.add(next);
    await Deno.writeTextFile(
      messagesFile,
      formatRecord({ ...next, messenger_ok: true, messenger_error: null }),
      { append: true },
    );
    assert.equal(await recoverWithStore(deps), 0);
    assert.equal(appended.length, 1, "its record was found, not written again");
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("recordIdsIn finds a record that starts right at the offset, and never one the offset cuts", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/messages.jsonl`;
    const [a, b, c] = [submission(), submission(), submission()];
    const lines = [a, b, c].map((s) =>
      formatRecord({ ...s, messenger_ok: true, messenger_error: null })
    );
    await Deno.writeTextFile(file, lines.join(""));
    const ids = new Set([a.id, b.id, c.id]);
    const at = new TextEncoder().encode(lines[0]!).byteLength; // where b's record starts
    assert.deepEqual([...await recordIdsIn(file, at, ids)].sort(), [b.id, c.id].sort());
    assert.deepEqual([...await recordIdsIn(file, at + 5, ids)], [c.id], "b is cut: not found");
    assert.deepEqual([...await recordIdsIn(file, 0, ids)].sort(), [...ids].sort());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** A `later` the test fires by hand: the pending call, and how many were scheduled. */
function manualLater() {
  const pending: Array<() => void> = [];
  return {
    later: (fn: () => void) => {
      pending.push(fn);
      return () => pending.splice(pending.indexOf(fn), 1);
    },
    fire: () => pending.splice(0).forEach((fn) => fn()),
    get scheduled() {
      return pending.length;
    },
  };
}

/** How many rows the database still holds unmarked (what recovery would look for). */
async function unmarked(outbox: Outbox, owner: object): Promise<number> {
  await outbox.close();
  const reopened = await open(owner);
  const count = [...reopened.entries()].filter((e) => e.status === undefined).length;
  await reopened.close();
  return count;
}

Deno.test("a note of the answer rides with the next commit: memory takes it at once, the row follows", async () => {
  const owner = {};
  const timer = manualLater();
  const outbox = await open(owner, { later: timer.later });
  const [a, b] = [submission(), submission()];
  await outbox.add(a);
  await outbox.done(a.id, "2026-11-22T14:05:00Z", "delivered");
  let committed = false;
  const note = outbox.recordedSoon(a.id, 200).then(() => committed = true);
  assert.equal(outbox.get(a.id), undefined, "delivered and recorded: out of the window at once");
  await Promise.resolve();
  assert.equal(committed, false, "nothing committed yet");
  await outbox.add(b);
  await note;
  assert.equal(committed, true, "committed with the next add");
  timer.fire(); // nothing left to flush
  const reopened = await open(owner);
  assert.deepEqual([...reopened.entries()].map((e) => e.id), [b.id], "a's row is gone");
  await reopened.close();
  await outbox.close();
});

Deno.test("a note with no commit to ride with is committed alone after the delay", async () => {
  const owner = {};
  const timer = manualLater();
  const outbox = await open(owner, { later: timer.later });
  const a = submission();
  await outbox.add(a);
  const note = outbox.recordedSoon(a.id, 502);
  assert.equal(timer.scheduled, 1);
  timer.fire();
  await note;
  const reopened = await open(owner);
  assert.equal(reopened.get(a.id)?.status, 502);
  await reopened.close();
  await outbox.close();
});

Deno.test("closing the outbox commits the notes still waiting", async () => {
  const owner = {};
  const timer = manualLater();
  const outbox = await open(owner, { later: timer.later });
  const a = submission();
  await outbox.add(a);
  void outbox.recordedSoon(a.id, 200);
  assert.equal(await unmarked(outbox, owner), 0);
});

Deno.test("a row read into the window while its note waits comes in recorded", async () => {
  const owner = {};
  const timer = manualLater();
  const outbox = await open(owner, { window: 2, later: timer.later });
  const [a, b, c, d] = [submission(), submission(), submission(), submission()];
  for (const s of [a, b, c, d]) await outbox.add(s);
  // c is beyond the window (two rows): its note waits while an erasure moves the window on.
  void outbox.recordedSoon(c.id, 502);
  await outbox.forget([a.id, b.id]);
  assert.equal(outbox.get(c.id)?.status, 502);
  await outbox.done(c.id, "2026-11-22T14:05:00Z", "given_up");
  assert.equal(outbox.get(c.id), undefined, "given up and recorded: not held");
  await outbox.close();
});

Deno.test("a change that fails keeps the notes it would have carried for the next commit", async () => {
  const timer = manualLater();
  const dir = await Deno.makeTempDir({ prefix: "contactd-outbox-" });
  const store = openLocalStore(`${dir}/messages.jsonl.db`, { create: true });
  // The database under the outbox refuses one transaction: the next `failed`.
  let refuse = false;
  const flaky: Store = {
    run: (op, args) => store.run(op, args),
    checkpoint: () => store.checkpoint(),
    close: () => store.close(),
    transaction: (calls) => {
      if (!refuse) return store.transaction(calls);
      refuse = false;
      return Promise.reject(new StoreError({ name: "Error", message: "disk I/O error" }));
    },
  };
  const outbox = await openOutbox(flaky, { later: timer.later });
  const a = submission();
  await outbox.add(a);
  let settled = false;
  const note = outbox.recordedSoon(a.id, 200).finally(() => settled = true);
  refuse = true;
  await assert.rejects(outbox.failed(a.id, "2026-11-22T14:05:00Z", "HTTP 502"), StoreError);
  await Promise.resolve();
  assert.equal(settled, false, "the note waits, it is not failed with the change");
  timer.fire();
  await note;
  await outbox.close();
  const reopened = await openOutbox(store);
  assert.equal(reopened.get(a.id)?.status, 200);
  await store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("what is written with a submission commits with its row, or neither is written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-outbox-" });
  const store = openLocalStore(`${dir}/messages.jsonl.db`, { create: true });
  try {
    const outbox = await openOutbox(store);
    const a = submission();
    await outbox.add(a, [call("meta.set", { key: "with-a", value: "yes" })]);
    assert.equal(await store.run("meta.get", { key: "with-a" }), "yes");
    const b = submission();
    // A call that fails takes the row down with it.
    const broken = call("outbox.add", { id: "zz", ts: null as unknown as string, submission: "{" });
    await assert.rejects(outbox.add(b, [broken]));
    await assert.rejects(outbox.read(b.id), OutboxEntryDamaged);
    await outbox.close();
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
