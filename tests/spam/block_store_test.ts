/**
 * The service's block list on the database: blocks kept across a restart, expired ones dropped
 * at open, Not spam, retention and erasure, `contactd unblock`'s change (another connection)
 * taken in at the next refresh and only read again when something changed, logs without the
 * keys, and a write that fails changing nothing in memory.
 */
import assert from "node:assert/strict";
import { BlockStore, type BlockStoreDeps } from "../../lib/spam/block_store.ts";
import { keyOf } from "../../lib/spam/block_list.ts";
import { type Store, StoreError } from "../../lib/storage/store.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { fakeClock } from "../support/fake_clock.ts";
import { failingStore, withTempStore } from "../support/temp_store.ts";

const DAY = 86_400_000;
const SPAMMER = { id: "s1", ip: "2001:db8:1:2::7", contact: "spam@example.org" };

function world(store: Store) {
  const clock = fakeClock();
  const logs: LogFields[] = [];
  const deps: BlockStoreDeps = {
    store,
    now: clock.wallNow,
    log: (_level, fields) => void logs.push(fields),
  };
  return { clock, logs, deps };
}

/** `store`, counting the calls of each operation. */
function counting(store: Store): { store: Store; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  return {
    calls,
    store: {
      ...store,
      run: (op, args) => {
        calls.set(op, (calls.get(op) ?? 0) + 1);
        return store.run(op, args);
      },
    },
  };
}

Deno.test("blocks survive a restart, with who marked them", async () => {
  await withTempStore(async ({ store, other }) => {
    const { clock, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    assert.equal((await blocks.block(SPAMMER, 30 * DAY, 7)).length, 2);
    await blocks.close();
    await assert.rejects(blocks.lift("s1"), Deno.errors.BadResource);

    await clock.advance(DAY);
    const again = await BlockStore.open({ ...deps, store: other() });
    const held = again.match({ ip: "2001:db8:1:2::1", contact: "" }, clock.wallNow());
    assert.equal(held?.submission, "s1");
    assert.equal(held?.by, 7);
    assert.equal(
      again.match({ ip: "192.0.2.1", contact: "spam@example.org" }, clock.wallNow())?.kind,
      "contact",
    );
  });
});

Deno.test("a second Spam on the same submission makes no second block", async () => {
  await withTempStore(async ({ store }) => {
    const { clock, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    await blocks.block(SPAMMER, DAY);
    assert.deepEqual(await blocks.block(SPAMMER, DAY), []);
    assert.equal(blocks.list(clock.wallNow()).length, 2);
    assert.equal((await store.run("blocks.all", undefined)).length, 2);
  });
});

Deno.test("the blocks that expired are dropped at open", async () => {
  await withTempStore(async ({ store }) => {
    const { clock, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    await blocks.block({ id: "old", ip: "192.0.2.1", contact: "" }, DAY);
    await blocks.block({ id: "live", ip: "192.0.2.3", contact: "" }, 3 * DAY);
    await clock.advance(2 * DAY);
    await BlockStore.open(deps);
    const rows = await store.run("blocks.all", undefined);
    assert.deepEqual(rows.map((block) => block.submission), ["live"]);
  });
});

Deno.test("the service takes in an unblock another connection committed at its next refresh, and reads the rows again only then", async () => {
  await withTempStore(async ({ store, other }) => {
    const { clock, logs, deps } = world(store);
    const { store: counted, calls } = counting(store);
    const blocks = await BlockStore.open({ ...deps, store: counted });
    await blocks.block(SPAMMER, DAY);
    await blocks.refresh();
    await blocks.refresh();
    assert.equal(calls.get("blocks.all"), 1, "read once, at open");
    const sender = { ip: "2001:db8:1:2::99", contact: "" };
    await other().run("blocks.liftKey", keyOf("2001:db8:1:2::1")); // contactd unblock
    assert.notEqual(blocks.match(sender, clock.wallNow()), undefined); // not read yet
    await blocks.refresh();
    assert.equal(calls.get("blocks.all"), 2);
    assert.equal(blocks.match(sender, clock.wallNow()), undefined);
    // The contact block stays: unblock lifted the address key only.
    assert.equal(
      blocks.match({ ip: "192.0.2.1", contact: SPAMMER.contact }, clock.wallNow())?.kind,
      "contact",
    );
    await blocks.refresh();
    assert.equal(calls.get("blocks.all"), 2, "nothing changed since");
    assert.deepEqual(logs.at(-1), { event: "unblocked", blocks: 1, by: "command", ids: "s1" });
  });
});

Deno.test("not spam lifts the submission's blocks; another submission's block of the same key stays", async () => {
  await withTempStore(async ({ store }) => {
    const { clock, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    await blocks.block(SPAMMER, DAY);
    await blocks.block({ id: "s2", ip: "2001:db8:1:2::8", contact: "" }, DAY);
    assert.equal((await blocks.lift("s1")).length, 2);
    assert.equal(blocks.match({ ip: SPAMMER.ip, contact: "" }, clock.wallNow())?.submission, "s2");
    assert.equal(
      blocks.match({ ip: "192.0.2.1", contact: SPAMMER.contact }, clock.wallNow()),
      undefined,
    );
    assert.deepEqual(await blocks.lift("s1"), []);
    const reopened = await BlockStore.open(deps);
    assert.deepEqual(reopened.list(clock.wallNow()).map((block) => block.submission), ["s2"]);
  });
});

Deno.test("forget removes every block of the submissions it names, and nothing of them stays in the file", async () => {
  await withTempStore(async ({ store, path }) => {
    const { clock, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    await blocks.block(SPAMMER, DAY);
    await blocks.block({ id: "s2", ip: "192.0.2.77", contact: "Zed-Secret@Example.org" }, DAY);
    await blocks.block({ id: "s3", ip: "192.0.2.8", contact: "other" }, DAY);
    const match = { by: "contact", value: "zed-secret@example.org" } as const;
    assert.equal(blocks.forgotten(match).length, 2, "the dry run's count");
    assert.equal(blocks.list(clock.wallNow()).length, 6, "the dry run removes nothing");
    assert.equal(await blocks.forget(match), 2);
    assert.equal(await blocks.forget({ by: "id", value: "s3" }), 2);
    assert.deepEqual(blocks.list(clock.wallNow()).map((block) => block.submission), ["s1", "s1"]);
    assert.deepEqual((await store.run("blocks.all", undefined)).length, 2);
    await store.checkpoint();
    for (const file of [path, `${path}-wal`]) {
      const text = new TextDecoder("latin1").decode(
        await Deno.readFile(file).catch(() => new Uint8Array()),
      ).toLowerCase();
      for (const trace of ["zed-secret", "192.0.2.77"]) assert.ok(!text.includes(trace), file);
    }
  });
});

Deno.test("prune removes the blocks made before the retention cut", async () => {
  await withTempStore(async ({ store }) => {
    const { clock, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    await blocks.block({ id: "old", ip: "192.0.2.1", contact: "" }, 30 * DAY);
    await clock.advance(10 * DAY);
    await blocks.block({ id: "new", ip: "192.0.2.2", contact: "" }, 30 * DAY);
    assert.equal(await blocks.prune(clock.wallNow() - 5 * DAY), 1);
    assert.deepEqual(blocks.list(clock.wallNow()).map((block) => block.submission), ["new"]);
    const rows = await store.run("blocks.all", undefined);
    assert.deepEqual(rows.map((block) => block.submission), ["new"]);
    assert.equal(await blocks.prune(clock.wallNow() - 5 * DAY), 0);
  });
});

Deno.test("a write that fails rejects and changes nothing in memory; the calls after it go on", async () => {
  await withTempStore(async ({ store }) => {
    const { clock, deps } = world(store);
    let failing = false;
    const writes = (op: string) => op !== "meta.dataVersion" && op !== "blocks.all";
    const blocks = await BlockStore.open({
      ...deps,
      store: failingStore(store, writes, () => failing),
    });
    await blocks.block(SPAMMER, DAY);
    failing = true;
    const other = { id: "s2", ip: "192.0.2.5", contact: "" };
    await assert.rejects(blocks.block(other, DAY), StoreError);
    assert.equal(blocks.match(other, clock.wallNow()), undefined);
    await assert.rejects(blocks.lift("s1"), StoreError);
    await assert.rejects(blocks.prune(clock.wallNow() + 1), StoreError);
    await assert.rejects(blocks.forget({ by: "id", value: "s1" }), StoreError);
    assert.equal(blocks.match(SPAMMER, clock.wallNow())?.submission, "s1");
    assert.equal(blocks.list(clock.wallNow()).length, 2);
    failing = false;
    assert.equal((await blocks.lift("s1")).length, 2);
    assert.equal(blocks.match(SPAMMER, clock.wallNow()), undefined);
  });
});

Deno.test("a refresh that cannot read the database rejects, for the service to log, and keeps the blocks it had", async () => {
  await withTempStore(async ({ store, other }) => {
    const { clock, deps } = world(store);
    let failing = false;
    const reads = (op: string) => op === "blocks.all";
    const blocks = await BlockStore.open({
      ...deps,
      store: failingStore(store, reads, () => failing),
    });
    await blocks.block(SPAMMER, DAY);
    await other().run("blocks.lift", { submission: "s1" });
    failing = true;
    await assert.rejects(blocks.refresh(), StoreError);
    assert.notEqual(blocks.match(SPAMMER, clock.wallNow()), undefined);
    failing = false;
    await blocks.refresh();
    assert.equal(blocks.match(SPAMMER, clock.wallNow()), undefined);
  });
});

Deno.test("blocks and lifts are logged with submission ids, never the address or the contact", async () => {
  await withTempStore(async ({ store, other }) => {
    const { logs, deps } = world(store);
    const blocks = await BlockStore.open(deps);
    await blocks.block(SPAMMER, DAY);
    await blocks.block({ id: "s2", ip: "192.0.2.1", contact: "" }, DAY);
    await blocks.lift("s1");
    await other().run("blocks.liftKey", keyOf("192.0.2.1"));
    await blocks.refresh();
    await blocks.refresh(); // read once, logged once
    assert.deepEqual(logs, [
      { event: "blocked", id: "s1", kinds: "address,contact", until: "2026-11-23T14:03:09Z" },
      { event: "blocked", id: "s2", kinds: "address", until: "2026-11-23T14:03:09Z" },
      { event: "unblocked", id: "s1", blocks: 2 },
      { event: "unblocked", blocks: 1, by: "command", ids: "s2" },
    ]);
    const text = JSON.stringify(logs);
    assert.ok(!text.includes("2001:db8") && !text.includes("spam@") && !text.includes("192.0.2"));
    logs.length = 0;
    await BlockStore.open(deps); // a lift is not logged again at a start
    assert.deepEqual(logs, []);
  });
});
