/**
 * The chat ledger on the database: kept across a reopen, every part found by its message, a part
 * in another chat starting the entry afresh, pruned by age, erasure leaving only the deletions
 * waiting (no submission id, nothing of it in the file), late parts of an erased submission
 * deleted, and a write that fails changing nothing in memory. The old file's reader for the
 * import.
 */
import assert from "node:assert/strict";
import { ledgerPath } from "../../lib/common/state_files.ts";
import { type Ledger, openLedger, readLedger, type SentPart } from "../../lib/storage/ledger.ts";
import { sentLine } from "../../lib/storage/ledger_lines.ts";
import { openLocalStore, StoreError } from "../../lib/storage/store.ts";
import { MemoryFs } from "../support/memory_fs.ts";
import { failingStore, withTempStore } from "../support/temp_store.ts";

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

async function sendTwo(ledger: Ledger): Promise<void> {
  await ledger.noteSent(part("a1", 10, true));
  await ledger.noteSent(part("a1", 11, false));
  await ledger.noteSent(part("b2", 12, true));
}

Deno.test("the ledger keeps parts, redeliveries and states across a reopen of the database; a closed ledger writes nothing", async () => {
  await withTempStore(async ({ store, path }) => {
    const ledger = await openLedger(store);
    await sendTwo(ledger);
    await ledger.noteSent(part("a1", 20, true)); // redelivered
    await ledger.noteSent({ ...part("c3", 30, true), form: "support" });
    await ledger.setState("a1", "handled", OWNER, "2026-11-25T12:05:00Z");
    await ledger.setState("zz", "spam", OWNER, "2026-11-25T12:06:00Z"); // not held: nothing
    const expected = {
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
    };
    assert.deepEqual(ledger.get("a1"), expected);
    await ledger.close();
    await assert.rejects(ledger.noteSent(part("d4", 40, true)), Deno.errors.BadResource);

    const reopened = openLocalStore(path, { create: false });
    try {
      const again = await openLedger(reopened);
      assert.deepEqual(again.get("a1"), expected);
      assert.equal(again.get("b2")?.state, "open");
      assert.equal(again.get("c3")?.form, "support");
      assert.equal(again.get("zz"), undefined);
      assert.equal(again.get("d4"), undefined);
      assert.deepEqual([...again.entries()].map((entry) => entry.id), ["a1", "b2", "c3"]);
      assert.deepEqual(again.byMessage(CHAT, 20)?.id, "a1");
    } finally {
      await reopened.close();
    }
  });
});

Deno.test("byMessage finds the entry by every part's message in its chat, and nothing for another chat or an unknown message", async () => {
  await withTempStore(async ({ store }) => {
    const ledger = await openLedger(store);
    await sendTwo(ledger);
    assert.equal(ledger.byMessage(CHAT, 10)?.id, "a1");
    assert.equal(ledger.byMessage(CHAT, 11)?.id, "a1");
    assert.equal(ledger.byMessage(CHAT, 12)?.id, "b2");
    assert.equal(ledger.byMessage(CHAT + 1, 10), undefined);
    assert.equal(ledger.byMessage(CHAT, 13), undefined);
    assert.deepEqual(ledger.get("a1")?.buttons, [10]);
    // The same from the database: a ledger opened on it.
    const again = await openLedger(store);
    assert.equal(again.byMessage(CHAT, 11)?.id, "a1");
    assert.equal(again.byMessage(CHAT + 1, 10), undefined);
  });
  await withTempStore(async ({ store }) => {
    assert.equal((await openLedger(store)).byMessage(CHAT, 10), undefined); // a new database
  });
});

Deno.test("a part sent to another chat starts the entry afresh there, its state kept: the old chat's message ids are no longer its", async () => {
  await withTempStore(async ({ store }) => {
    const ledger = await openLedger(store);
    await sendTwo(ledger);
    await ledger.setState("a1", "spam", OWNER, "2026-11-25T12:05:00Z");
    await ledger.noteSent({ ...part("a1", 50, true), chat: 555 });
    for (const seen of [ledger, await openLedger(store)]) {
      const entry = seen.get("a1");
      assert.deepEqual([entry?.chat, entry?.buttons, entry?.messages], [555, [50], [50]]);
      assert.equal(entry?.state, "spam");
      assert.equal(seen.byMessage(CHAT, 10), undefined);
      assert.equal(seen.byMessage(555, 50)?.id, "a1");
    }
  });
});

Deno.test("prune removes the entries before the cut (not one at the cut, nor one whose ts is not a time); their messages are not deleted from the chat", async () => {
  await withTempStore(async ({ store }) => {
    const ledger = await openLedger(store);
    await ledger.noteSent(part("old", 10, true, "2026-08-01T00:00:00Z"));
    await ledger.noteSent(part("cut", 14, true, "2026-08-25T00:00:00Z"));
    await ledger.noteSent(part("new", 11, true, "2026-11-20T00:00:00Z"));
    await ledger.noteSent(part("odd", 13, true, "not a time"));
    assert.equal(await ledger.prune(Date.UTC(2026, 7, 25)), 1);
    assert.equal(await ledger.prune(Date.UTC(2026, 7, 25)), 0);
    assert.equal(ledger.get("old"), undefined);
    assert.equal(ledger.byMessage(CHAT, 10), undefined);
    assert.equal(ledger.get("new")?.id, "new");
    assert.deepEqual(ledger.pendingDeletions(), []);
    await ledger.noteSent(part("later", 12, true));
    const again = await openLedger(store);
    const kept = ["cut", "new", "odd", "later"];
    assert.deepEqual([...again.entries()].map((entry) => entry.id), kept);
    assert.deepEqual(again.pendingDeletions(), []);
  });
});

Deno.test("forget removes the entries and returns their messages to delete; only deletions without the submission stay, in the file too, until deleted marks them done", async () => {
  await withTempStore(async ({ store, path }) => {
    const ledger = await openLedger(store);
    await ledger.noteSent({ ...part("k3x9q2ab", 10, true), contact: "zoe-secret@example.org" });
    await ledger.noteSent(part("k3x9q2ab", 11, false));
    await ledger.noteSent(part("b2", 12, true));
    assert.deepEqual(await ledger.forget(new Set(["nothing"])), []);
    const deletions = await ledger.forget(new Set(["k3x9q2ab"]));
    assert.deepEqual(deletions, [{ chat: CHAT, messages: [10, 11] }]);
    assert.equal(ledger.get("k3x9q2ab"), undefined);
    assert.equal(ledger.byMessage(CHAT, 11), undefined);
    assert.deepEqual(ledger.pendingDeletions(), deletions);
    await store.checkpoint();
    for (const file of [path, `${path}-wal`]) {
      const text = new TextDecoder("latin1").decode(
        await Deno.readFile(file).catch(() => new Uint8Array()),
      );
      for (const trace of ["k3x9q2ab", "zoe-secret"]) assert.ok(!text.includes(trace), file);
    }

    const again = await openLedger(store);
    assert.deepEqual(again.pendingDeletions(), deletions);
    assert.deepEqual([...again.entries()].map((entry) => entry.id), ["b2"]);
    await again.deleted({ chat: CHAT, messages: [10] });
    assert.deepEqual(again.pendingDeletions(), [{ chat: CHAT, messages: [11] }]);
    await again.deleted({ chat: CHAT, messages: [11] });
    assert.deepEqual(again.pendingDeletions(), []);
    assert.deepEqual((await openLedger(store)).pendingDeletions(), []);
  });
});

Deno.test("a part sent for a submission forgotten meanwhile becomes a deletion waiting, never an entry", async () => {
  await withTempStore(async ({ store }) => {
    const late: unknown[] = [];
    const ledger = await openLedger(store, { onLateDeletion: (deletion) => late.push(deletion) });
    await ledger.noteSent(part("a1", 10, true));
    await ledger.forget(new Set(["a1", "c3"])); // c3: still on its way, nothing noted yet
    await ledger.noteSent(part("a1", 11, false)); // its sendMessage was under way
    await ledger.noteSent(part("c3", 30, true));
    assert.equal(ledger.get("a1"), undefined);
    assert.equal(ledger.get("c3"), undefined);
    assert.deepEqual(late, [{ chat: CHAT, messages: [11] }, { chat: CHAT, messages: [30] }]);
    const waiting = [{ chat: CHAT, messages: [10, 11, 30] }];
    assert.deepEqual(ledger.pendingDeletions(), waiting);
    const again = await openLedger(store);
    assert.deepEqual([...again.entries()], []);
    assert.deepEqual(again.pendingDeletions(), waiting);
  });
});

Deno.test("a write that fails rejects and changes nothing in memory; the writes after it go on", async () => {
  await withTempStore(async ({ store }) => {
    let failing = false;
    const ledger = await openLedger(failingStore(store, () => true, () => failing));
    await sendTwo(ledger);
    failing = true;
    await assert.rejects(ledger.setState("a1", "spam", OWNER, "2026-11-25T12:05:00Z"), StoreError);
    assert.equal(ledger.get("a1")?.state, "open");
    await assert.rejects(ledger.noteSent(part("c3", 30, true)), StoreError);
    assert.equal(ledger.get("c3"), undefined);
    assert.equal(ledger.byMessage(CHAT, 30), undefined);
    await assert.rejects(ledger.forget(new Set(["a1"])), StoreError);
    assert.equal(ledger.get("a1")?.id, "a1");
    assert.equal(ledger.byMessage(CHAT, 11)?.id, "a1");
    assert.deepEqual(ledger.pendingDeletions(), []);
    await assert.rejects(ledger.prune(Date.UTC(2027, 0, 1)), StoreError);
    assert.equal([...ledger.entries()].length, 2);
    failing = false;
    await ledger.setState("b2", "spam", OWNER, "2026-11-25T12:05:00Z");
    assert.equal((await openLedger(store)).get("b2")?.state, "spam");
    // The erasure can be run again, and a part of it arriving late is still a deletion.
    assert.deepEqual(await ledger.forget(new Set(["a1"])), [{ chat: CHAT, messages: [10, 11] }]);
    const deletion = ledger.pendingDeletions()[0]!;
    failing = true;
    await assert.rejects(ledger.deleted(deletion), StoreError);
    assert.deepEqual(ledger.pendingDeletions(), [deletion]);
  });
});

Deno.test("a ledger that cannot read the database does not open", async () => {
  await withTempStore(async ({ store }) => {
    await assert.rejects(openLedger(failingStore(store, (op) => op === "ledger.list")), StoreError);
  });
});

Deno.test("readLedger reads an older release's file without writing: no file is an empty ledger, a torn line is skipped, a link is refused", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const path = ledgerPath("/data/messages.jsonl");
  assert.equal((await readLedger(path, memory)).entries.size, 0);
  assert.equal(memory.exists(path), false);
  memory.writeText(path, sentLine(part("a1", 10, true)) + "{not json\n" + '{"op":"sent"');
  const before = memory.readText(path);
  assert.deepEqual([...(await readLedger(path, memory)).entries.keys()], ["a1"]);
  assert.equal(memory.readText(path), before);
  memory.symlink(path, "/data/link");
  await assert.rejects(readLedger("/data/link", memory), Deno.errors.PermissionDenied);
});
