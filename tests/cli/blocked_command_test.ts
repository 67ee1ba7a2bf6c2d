/**
 * `contactd blocked` and `contactd unblock`: listing, lifting by key (an address by its client
 * address key, anything else as an exact contact) in the database, the service stopped or
 * running, a missing database (nothing blocked, nothing created), usage and database errors.
 */
import assert from "node:assert/strict";
import { OWN_FILES_REVOKED, parseCommandLine, runCli } from "../../lib/cli/cli.ts";
import { BLOCKED_HEADER } from "../../lib/cli/blocked_command.ts";
import { BlockStore } from "../../lib/spam/block_store.ts";
import { spamBlocks } from "../../lib/spam/block_list.ts";
import { databasePath, openWorkerStore } from "../../lib/storage/store.ts";
import { fakeCliIo } from "./_cli_io.ts";
import { type TempStore, withTempStore } from "../support/temp_store.ts";

const NOW = Date.parse("2026-11-25T00:00:00Z");
const DAY = 86_400_000;

async function cli(args: string[], file: string, stdin?: string) {
  const { io, out, err, revoked } = fakeCliIo({
    env: (name) => name === "MESSAGES_FILE" ? file : undefined,
    now: () => new Date(NOW),
    ...(stdin === undefined ? {} : { readStdin: () => Promise.resolve(stdin) }),
  });
  return { code: await runCli(args, io), out, err, revoked };
}

/** A database holding blocks of s1 (address and contact), s2 (address) and an expired one. */
async function withBlocks(test: (temp: TempStore) => Promise<void>) {
  await withTempStore(async (temp) => {
    const blocks = [
      ...spamBlocks(
        { id: "s1", ip: "2001:db8:1:2::7", contact: "spam@example.org" },
        NOW - DAY,
        30 * DAY,
      ),
      ...spamBlocks({ id: "s2", ip: "192.0.2.1", contact: "" }, NOW - 2 * DAY, 30 * DAY),
      ...spamBlocks({ id: "old", ip: "192.0.2.9", contact: "" }, NOW - 40 * DAY, 30 * DAY),
    ];
    await temp.store.run("blocks.add", { blocks });
    await test(temp);
  });
}

Deno.test("blocked lists the blocks that hold now, oldest first: kind, value, until, submission", async () => {
  await withBlocks(async ({ messagesFile }) => {
    const { code, out, err, revoked } = await cli(["blocked"], messagesFile);
    assert.equal(code, 0, err.join());
    assert.deepEqual(out, [
      BLOCKED_HEADER,
      "address\t192.0.2.1\t2026-12-23T00:00:00Z\ts2",
      "address\t2001:db8:1:2::/64\t2026-12-24T00:00:00Z\ts1",
      "contact\tspam@example.org\t2026-12-24T00:00:00Z\ts1",
    ]);
    // SQLite opens the database for writing even to read it: the network and run go.
    assert.deepEqual(revoked, [...OWN_FILES_REVOKED]);
  });
});

Deno.test("unblock with an IPv6 address lifts its /64, prints how many, and blocked no longer lists it", async () => {
  await withBlocks(async ({ messagesFile, path }) => {
    const { code, out, revoked } = await cli(["unblock", "2001:DB8:1:2::ffff"], messagesFile);
    assert.equal(code, 0);
    assert.match(out[0]!, /^lifted 1 block\(s\) of address:2001:db8:1:2::\/64 /);
    assert.deepEqual(revoked, [...OWN_FILES_REVOKED]);
    assert.equal((await Deno.lstat(path)).mode! & 0o777, 0o600);
    const listed = await cli(["blocked"], messagesFile);
    assert.deepEqual(listed.out.slice(1).map((line) => line.split("\t")[1]), [
      "192.0.2.1",
      "spam@example.org",
    ]);
  });
});

Deno.test("unblock with a contact lifts that exact contact only; - reads it from standard input", async () => {
  await withBlocks(async ({ messagesFile }) => {
    const near = await cli(["unblock", "SPAM@example.org"], messagesFile);
    assert.equal(near.code, 0);
    assert.match(near.out[0]!, /^lifted 0 blocks: contact:SPAM@example.org is not blocked/);
    const exact = await cli(["unblock", "-"], messagesFile, "spam@example.org\nignored\n");
    assert.equal(exact.code, 0, exact.err.join());
    assert.match(exact.out[0]!, /^lifted 1 block\(s\) of contact:spam@example.org /);
    const listed = await cli(["blocked"], messagesFile);
    assert.equal(listed.out.length, 3); // header and the two addresses
  });
});

Deno.test("unblock of an expired block lifts it and says none held", async () => {
  await withBlocks(async ({ messagesFile, store }) => {
    const { code, out } = await cli(["unblock", "192.0.2.9"], messagesFile);
    assert.equal(code, 0);
    assert.match(out[0]!, /^lifted 0 block\(s\) of address:192.0.2.9 /);
    const rows = await store.run("blocks.all", undefined);
    assert.ok(!rows.some((block) => block.submission === "old"));
  });
});

Deno.test("unblock while the service runs: the service's block list takes the lift in at its refresh", async () => {
  await withBlocks(async ({ messagesFile }) => {
    // The service's own store: a worker that owns its connection.
    const store = await openWorkerStore(databasePath(messagesFile), { create: true });
    try {
      const blocks = await BlockStore.open({ store, now: () => NOW, log: () => {} });
      assert.equal(blocks.match({ ip: "192.0.2.1", contact: "" }, NOW)?.submission, "s2");
      const { code } = await cli(["unblock", "::ffff:192.0.2.1"], messagesFile);
      assert.equal(code, 0);
      assert.notEqual(blocks.match({ ip: "192.0.2.1", contact: "" }, NOW), undefined);
      await blocks.refresh();
      assert.equal(blocks.match({ ip: "192.0.2.1", contact: "" }, NOW), undefined);
      assert.notEqual(blocks.match({ ip: "2001:db8:1:2::1", contact: "" }, NOW), undefined);
    } finally {
      await store.close();
    }
  });
});

Deno.test("without a database, blocked lists nothing and unblock lifts nothing; neither creates one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/messages.jsonl`;
    const listed = await cli(["blocked"], file);
    assert.equal(listed.code, 0, listed.err.join());
    assert.deepEqual(listed.out, [`nothing blocked in ${databasePath(file)}`]);
    const lifted = await cli(["unblock", "192.0.2.1"], file);
    assert.equal(lifted.code, 0, lifted.err.join());
    assert.match(lifted.out[0]!, /^lifted 0 blocks: address:192.0.2.1 is not blocked/);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("blocked and unblock refuse a symbolic link at the database's path in one line, exit 1", async () => {
  await withBlocks(async ({ dir, path }) => {
    const file = `${dir}/linked.jsonl`;
    await Deno.symlink(path, databasePath(file));
    for (const args of [["blocked"], ["unblock", "192.0.2.1"]]) {
      const { code, err } = await cli(args, file);
      assert.equal(code, 1);
      assert.equal(err.length, 1);
      assert.match(err[0]!, /^contactd (blocked|unblock): cannot open .*\.db: .*symbolic link/);
    }
  });
});

Deno.test("unblock takes exactly one ADDRESS or CONTACT; blocked takes none", () => {
  assert.deepEqual(parseCommandLine(["unblock", "192.0.2.1"]), {
    kind: "run",
    command: "unblock",
    unblock: { target: "192.0.2.1" },
  });
  for (const args of [["unblock"], ["unblock", "a", "b"], ["unblock", " "], ["blocked", "x"]]) {
    assert.throws(() => parseCommandLine(args), /unblock takes one|unexpected argument/);
  }
});
