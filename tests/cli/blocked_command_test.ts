/**
 * `contactd blocked` and `contactd unblock`: listing, lifting by key (an address by its client
 * address key, anything else as an exact contact), the service stopped or running, usage and
 * file errors.
 */
import assert from "node:assert/strict";
import {
  OWN_FILES_REVOKED,
  parseCommandLine,
  READ_ONLY_REVOKED,
  runCli,
} from "../../lib/cli/cli.ts";
import { BLOCKED_HEADER } from "../../lib/cli/blocked_command.ts";
import { blockListPath } from "../../lib/common/state_files.ts";
import { BlockStore } from "../../lib/spam/block_file.ts";
import { spamBlocks } from "../../lib/spam/block_list.ts";
import { blockLine } from "../../lib/spam/block_lines.ts";
import { denoRewriteFs } from "../../lib/storage/rewrite.ts";
import { fakeCliIo } from "./_cli_io.ts";

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

async function withBlocks(test: (file: string, blocked: string) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  const blocked = blockListPath(file);
  const lines = [
    ...spamBlocks(
      { id: "s1", ip: "2001:db8:1:2::7", contact: "spam@example.org" },
      NOW - DAY,
      30 * DAY,
    ),
    ...spamBlocks({ id: "s2", ip: "192.0.2.1", contact: "" }, NOW - 2 * DAY, 30 * DAY),
    ...spamBlocks({ id: "old", ip: "192.0.2.9", contact: "" }, NOW - 40 * DAY, 30 * DAY),
  ].map(blockLine);
  await Deno.writeTextFile(blocked, lines.join(""), { mode: 0o600 });
  try {
    await test(file, blocked);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("blocked lists the blocks that hold now, oldest first: kind, value, until, submission", async () => {
  await withBlocks(async (file) => {
    const { code, out, err, revoked } = await cli(["blocked"], file);
    assert.equal(code, 0, err.join());
    assert.deepEqual(out, [
      BLOCKED_HEADER,
      "address\t192.0.2.1\t2026-12-23T00:00:00Z\ts2",
      "address\t2001:db8:1:2::/64\t2026-12-24T00:00:00Z\ts1",
      "contact\tspam@example.org\t2026-12-24T00:00:00Z\ts1",
    ]);
    assert.deepEqual(revoked, [...READ_ONLY_REVOKED]);
  });
});

Deno.test("unblock with an IPv6 address lifts its /64, prints how many, and blocked no longer lists it", async () => {
  await withBlocks(async (file, blocked) => {
    const before = await Deno.readTextFile(blocked);
    const { code, out, revoked } = await cli(["unblock", "2001:DB8:1:2::ffff"], file);
    assert.equal(code, 0);
    assert.match(out[0]!, /^lifted 1 block\(s\) of address:2001:db8:1:2::\/64 /);
    assert.deepEqual(revoked, [...OWN_FILES_REVOKED]);
    const after = await Deno.readTextFile(blocked);
    assert.ok(after.startsWith(before)); // appended, nothing rewritten
    assert.equal((await Deno.lstat(blocked)).mode! & 0o777, 0o600);
    const listed = await cli(["blocked"], file);
    assert.deepEqual(listed.out.slice(1).map((line) => line.split("\t")[1]), [
      "192.0.2.1",
      "spam@example.org",
    ]);
  });
});

Deno.test("unblock with a contact lifts that exact contact only; - reads it from standard input", async () => {
  await withBlocks(async (file) => {
    const near = await cli(["unblock", "SPAM@example.org"], file);
    assert.equal(near.code, 0);
    assert.match(near.out[0]!, /^lifted 0 blocks: contact:SPAM@example.org is not blocked/);
    const exact = await cli(["unblock", "-"], file, "spam@example.org\nignored\n");
    assert.equal(exact.code, 0, exact.err.join());
    assert.match(exact.out[0]!, /^lifted 1 block\(s\) of contact:spam@example.org /);
    const listed = await cli(["blocked"], file);
    assert.equal(listed.out.length, 3); // header and the two addresses
  });
});

Deno.test("unblock while the service runs: the service takes the lift in at its refresh", async () => {
  await withBlocks(async (file, blocked) => {
    const store = await BlockStore.open({
      fs: denoRewriteFs,
      path: blocked,
      now: () => NOW,
      log: () => {},
    });
    try {
      assert.equal(store.match({ ip: "192.0.2.1", contact: "" }, NOW)?.submission, "s2");
      const { code } = await cli(["unblock", "::ffff:192.0.2.1"], file);
      assert.equal(code, 0);
      await store.refresh();
      assert.equal(store.match({ ip: "192.0.2.1", contact: "" }, NOW), undefined);
      assert.notEqual(store.match({ ip: "2001:db8:1:2::1", contact: "" }, NOW), undefined);
    } finally {
      await store.close();
    }
  });
});

Deno.test("blocked and unblock fail in one line, exit 1, for a missing file, and unblock creates none", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/messages.jsonl`;
    for (const args of [["blocked"], ["unblock", "192.0.2.1"]]) {
      const { code, err } = await cli(args, file);
      assert.equal(code, 1);
      assert.equal(err.length, 1);
      assert.match(err[0]!, /^contactd (blocked|unblock): cannot read .*\.blocked: no such file/);
    }
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("blocked refuses a symbolic link at the block list's path", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/messages.jsonl`;
    await Deno.writeTextFile(`${dir}/elsewhere`, "");
    await Deno.symlink(`${dir}/elsewhere`, blockListPath(file));
    const { code, err } = await cli(["blocked"], file);
    assert.equal(code, 1);
    assert.match(err[0]!, /symbolic link/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
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
