/**
 * The block list on disk: persistence across restarts, a torn last line, damaged lines, links,
 * compaction (mode kept, expired and lifted lines dropped), retention and erasure rewrites, and
 * `contactd unblock`'s appends taken in by the running service's refresh, a rewrite included.
 */
import assert from "node:assert/strict";
import {
  appendBlockLines,
  blockRewritePath,
  BlockStore,
  type BlockStoreDeps,
  readBlockList,
} from "../../lib/spam/block_file.ts";
import { keyOf } from "../../lib/spam/block_list.ts";
import { blockLine, liftKeyLine, liftLine } from "../../lib/spam/block_lines.ts";
import { spamBlocks } from "../../lib/spam/block_list.ts";
import { denoRewriteFs } from "../../lib/storage/rewrite.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { hookFs, idle, latch, MemoryFs } from "../support/memory_fs.ts";
import { fakeClock } from "../support/fake_clock.ts";

const DAY = 86_400_000;
const PATH = "/data/messages.jsonl.blocked";
const SPAMMER = { id: "s1", ip: "2001:db8:1:2::7", contact: "spam@example.org" };

function world(fs: MemoryFs = new MemoryFs()) {
  fs.mkdir("/data");
  const clock = fakeClock();
  const logs: LogFields[] = [];
  const deps: BlockStoreDeps = {
    fs,
    path: PATH,
    now: clock.wallNow,
    log: (_level, fields) => void logs.push(fields),
    sleep: () => idle(),
  };
  return { fs, clock, logs, deps };
}

Deno.test("blocks survive a restart: the file is created 0600 and holds whole lines", async () => {
  const { fs, clock, deps } = world();
  const store = await BlockStore.open(deps);
  assert.equal((await fs.lstat(PATH)).mode, 0o600);
  assert.equal((await store.block(SPAMMER, 30 * DAY, 7)).length, 2);
  await store.close();
  assert.ok(fs.readText(PATH).endsWith("\n"));
  assert.equal(fs.readText(PATH).split("\n").length, 3);

  await clock.advance(DAY);
  const again = await BlockStore.open(deps);
  const held = again.match({ ip: "2001:db8:1:2::1", contact: "" }, clock.wallNow());
  assert.equal(held?.submission, "s1");
  assert.equal(held?.by, 7);
  assert.equal(
    again.match({ ip: "192.0.2.1", contact: "spam@example.org" }, clock.wallNow())?.kind,
    "contact",
  );
  await again.close();
});

Deno.test("a second Spam on the same submission writes nothing", async () => {
  const { fs, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block(SPAMMER, DAY);
  const text = fs.readText(PATH);
  assert.deepEqual(await store.block(SPAMMER, DAY), []);
  assert.equal(fs.readText(PATH), text);
  await store.close();
});

Deno.test("a torn last line is skipped and logged, the lines before it kept, and compaction drops it", async () => {
  const { fs, clock, logs, deps } = world();
  const [address] = spamBlocks(SPAMMER, clock.wallNow(), DAY);
  fs.writeText(PATH, blockLine(address!) + '{"op":"block","kind":"addr');
  const store = await BlockStore.open(deps);
  assert.deepEqual(logs, [{ event: "block_list_damaged_line", line: 2, torn: true }]);
  assert.equal(store.match({ ip: SPAMMER.ip, contact: "" }, clock.wallNow())?.submission, "s1");
  assert.equal(fs.readText(PATH), blockLine(address!));
  await store.close();
});

Deno.test("a damaged line in the middle is skipped and logged by number, never by content", async () => {
  const { fs, clock, logs, deps } = world();
  const blocks = spamBlocks(SPAMMER, clock.wallNow(), DAY);
  fs.writeText(PATH, blockLine(blocks[0]!) + "not json spam@example.org\n" + blockLine(blocks[1]!));
  const store = await BlockStore.open(deps);
  assert.deepEqual(logs, [{ event: "block_list_damaged_line", line: 2 }]);
  assert.equal(store.list(clock.wallNow()).length, 2);
  assert.ok(!fs.readText(PATH).includes("not json"));
  await store.close();
});

Deno.test("a symbolic link at the path is never followed, by the service or by unblock", async () => {
  const { fs, deps } = world();
  fs.writeText("/data/other", "keep\n");
  fs.symlink("/data/other", PATH);
  await assert.rejects(BlockStore.open(deps), Deno.errors.PermissionDenied);
  await assert.rejects(
    appendBlockLines(fs, PATH, liftKeyLine(keyOf("192.0.2.1"), "2026-11-22T14:03:09Z")),
    Deno.errors.PermissionDenied,
  );
  assert.equal(fs.readText("/data/other"), "keep\n");
});

Deno.test("unblock never creates the file, nor does a store opened with create false", async () => {
  const { fs, deps } = world();
  await assert.rejects(appendBlockLines(fs, PATH, "x\n"), Deno.errors.NotFound);
  await assert.rejects(BlockStore.open({ ...deps, create: false }), Deno.errors.NotFound);
  assert.equal(fs.exists(PATH), false);
});

Deno.test("compaction at open drops expired and lifted blocks and keeps the file's mode", async () => {
  const { fs, clock, deps } = world();
  const now = clock.wallNow();
  const expired = spamBlocks({ id: "old", ip: "192.0.2.1", contact: "" }, now - 2 * DAY, DAY);
  const lifted = spamBlocks({ id: "gone", ip: "192.0.2.2", contact: "x" }, now, DAY);
  const live = spamBlocks({ id: "live", ip: "192.0.2.3", contact: "" }, now, DAY);
  // The memory fs has no chmod: a mode other than 0600 is given at creation.
  const created = await fs.open(PATH, { write: true, create: true, mode: 0o640 });
  created.close();
  fs.writeText(
    PATH,
    [...expired, ...lifted, ...live].map(blockLine).join("") +
      liftLine("gone", "2026-11-22T14:03:09Z"),
  );
  const store = await BlockStore.open(deps);
  assert.equal(fs.readText(PATH), live.map(blockLine).join(""));
  assert.equal((await fs.lstat(PATH)).mode, 0o640);
  assert.equal(fs.exists(blockRewritePath(PATH)), false);
  assert.equal(fs.directorySyncs.get("/data"), 1);
  await store.close();
});

Deno.test("the service notices a lift unblock appended while it runs, at its next refresh", async () => {
  const { fs, clock, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block(SPAMMER, DAY);
  const sender = { ip: "2001:db8:1:2::99", contact: "" };
  await appendBlockLines(fs, PATH, liftKeyLine(keyOf("2001:db8:1:2::1"), "2026-11-22T14:03:10Z"));
  assert.notEqual(store.match(sender, clock.wallNow()), undefined); // not read yet
  await store.refresh();
  assert.equal(store.match(sender, clock.wallNow()), undefined);
  // The contact block stays: unblock lifted the address key only.
  assert.equal(
    store.match({ ip: "192.0.2.1", contact: SPAMMER.contact }, clock.wallNow())?.kind,
    "contact",
  );
  await store.close();
});

Deno.test("a line unblock is still writing (no line break yet) waits for the next refresh", async () => {
  const { fs, clock, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block(SPAMMER, DAY);
  const line = liftLine("s1", "2026-11-22T14:03:10Z");
  const file = await fs.open(PATH, { append: true });
  await file.write(new TextEncoder().encode(line.slice(0, 10)));
  await store.refresh();
  assert.notEqual(store.match({ ip: SPAMMER.ip, contact: "" }, clock.wallNow()), undefined);
  await file.write(new TextEncoder().encode(line.slice(10)));
  file.close();
  await store.refresh();
  assert.equal(store.match({ ip: SPAMMER.ip, contact: "" }, clock.wallNow()), undefined);
  await store.close();
});

Deno.test("an append after a torn line starts on a line of its own", async () => {
  const { fs } = world();
  fs.writeText(PATH, '{"op":"bl');
  await appendBlockLines(fs, PATH, liftLine("s1", "2026-11-22T14:03:10Z"));
  const { list, damaged } = await readBlockList(fs, PATH);
  assert.deepEqual(damaged, [1]);
  assert.equal(list.size, 0);
  assert.equal(fs.readText(PATH).split("\n")[1], liftLine("s1", "2026-11-22T14:03:10Z").trim());
});

Deno.test("not spam lifts the submission's blocks; another submission's block of the same key stays", async () => {
  const { clock, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block(SPAMMER, DAY);
  await store.block({ id: "s2", ip: "2001:db8:1:2::8", contact: "" }, DAY);
  assert.equal((await store.lift("s1")).length, 2);
  assert.equal(store.match({ ip: SPAMMER.ip, contact: "" }, clock.wallNow())?.submission, "s2");
  assert.equal(
    store.match({ ip: "192.0.2.1", contact: SPAMMER.contact }, clock.wallNow()),
    undefined,
  );
  assert.deepEqual(await store.lift("s1"), []);
  await store.close();
  const reopened = await BlockStore.open(deps);
  assert.equal(reopened.list(clock.wallNow()).length, 1);
  await reopened.close();
});

Deno.test("forget removes every line of the submissions it names, lifted ones included", async () => {
  const { fs, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block(SPAMMER, DAY);
  await store.lift("s1");
  await store.block({ id: "s2", ip: "192.0.2.7", contact: "Spam@Example.org" }, DAY);
  await store.block({ id: "s3", ip: "192.0.2.8", contact: "other" }, DAY);
  assert.equal(await store.forget({ by: "contact", value: "spam@example.org" }), 2);
  const text = fs.readText(PATH).toLowerCase();
  assert.ok(!text.includes("spam@example.org"), text);
  assert.ok(!text.includes("192.0.2.7"));
  assert.ok(!text.includes("2001:db8"));
  assert.ok(text.includes("192.0.2.8"));
  assert.equal(await store.forget({ by: "id", value: "s3" }), 2);
  assert.equal(fs.readText(PATH), "");
  await store.close();
});

Deno.test("prune removes the blocks made before the retention cut and rewrites the file", async () => {
  const { fs, clock, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block({ id: "old", ip: "192.0.2.1", contact: "" }, 30 * DAY);
  await clock.advance(10 * DAY);
  await store.block({ id: "new", ip: "192.0.2.2", contact: "" }, 30 * DAY);
  assert.equal(await store.prune(clock.wallNow() - 5 * DAY), 1);
  assert.deepEqual(store.list(clock.wallNow()).map((block) => block.submission), ["new"]);
  assert.ok(!fs.readText(PATH).includes('"old"'));
  assert.equal(await store.prune(clock.wallNow() - 5 * DAY), 0);
  await store.close();
});

Deno.test("an unblock during a rewrite waits for its lock and lands in the new file", async () => {
  const base = new MemoryFs();
  const rename = latch(false);
  const fs = hookFs(base, {
    before: (call) => call.op === "rename" ? rename.pass() : undefined,
  });
  const { clock, deps } = world(base);
  const store = await BlockStore.open({ ...deps, fs });
  await store.block(SPAMMER, DAY);
  await store.block({ id: "old", ip: "192.0.2.1", contact: "" }, DAY);
  rename.arm();
  const pruning = store.prune(clock.wallNow() + 1); // both blocks were made before it
  await rename.at;
  let waits = 0;
  const unblocking = appendBlockLines(
    base,
    PATH,
    liftKeyLine(keyOf("203.0.113.1"), "2026-11-22T14:03:10Z"),
    () => (waits++, rename.release(), idle()),
  );
  assert.equal(await pruning, 3);
  await unblocking;
  assert.ok(waits > 0);
  assert.ok(base.readText(PATH).includes("203.0.113.1"), base.readText(PATH)); // not lost
  await store.refresh();
  await store.close();
});

Deno.test("on a real disk: the rewrite keeps the mode exactly, and unblock's line reaches the service", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl.blocked`;
  try {
    const clock = fakeClock();
    const deps = {
      fs: denoRewriteFs,
      path,
      now: clock.wallNow,
      log: () => {},
    };
    const first = await BlockStore.open(deps);
    assert.equal((await Deno.lstat(path)).mode! & 0o777, 0o600);
    await first.block(SPAMMER, DAY);
    await first.lift("s1");
    await first.close();
    await Deno.chmod(path, 0o640);
    const store = await BlockStore.open(deps); // compacts: the lifted lines go
    assert.equal(await Deno.readTextFile(path), "");
    assert.equal((await Deno.lstat(path)).mode! & 0o777, 0o640);
    await store.block(SPAMMER, DAY);
    await appendBlockLines(denoRewriteFs, path, liftLine("s1", "2026-11-22T14:03:10Z"));
    await store.refresh();
    assert.equal(store.list(clock.wallNow()).length, 0);
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("blocks and lifts are logged with submission ids, never the address or the contact", async () => {
  const { fs, logs, deps } = world();
  const store = await BlockStore.open(deps);
  await store.block(SPAMMER, DAY);
  await store.block({ id: "s2", ip: "192.0.2.1", contact: "" }, DAY);
  await store.lift("s1");
  await appendBlockLines(fs, PATH, liftKeyLine(keyOf("192.0.2.1"), "2026-11-22T14:03:10Z"));
  await store.refresh();
  await store.refresh(); // read once, logged once
  assert.deepEqual(logs, [
    { event: "blocked", id: "s1", kinds: "address,contact", until: "2026-11-23T14:03:09Z" },
    { event: "blocked", id: "s2", kinds: "address", until: "2026-11-23T14:03:09Z" },
    { event: "unblocked", id: "s1", blocks: 2 },
    { event: "unblocked", blocks: 1, by: "command", ids: "s2" },
  ]);
  assert.ok(!JSON.stringify(logs).includes("2001:db8") && !JSON.stringify(logs).includes("spam@"));
  assert.ok(!JSON.stringify(logs).includes("192.0.2.1"));
  await store.close();
  logs.length = 0;
  await (await BlockStore.open(deps)).close(); // the lift lines are not logged again at a start
  assert.deepEqual(logs, []);
});
