/**
 * `contactd forget` through the command line: its options, and the erasure with the service
 * stopped (the command takes the lock and does it itself). While the service runs: e2e/data_test.
 */
import assert from "node:assert/strict";
import { OWN_FILES_REVOKED, parseCommandLine, runCli } from "../../lib/cli/cli.ts";
import { formatRecord } from "../../lib/storage/backup.ts";
import { lockFiles } from "../../lib/storage/lock.ts";
import { databasePath } from "../../lib/common/state_files.ts";
import { openLedger } from "../../lib/storage/ledger.ts";
import { openLocalStore } from "../../lib/storage/store.ts";
import { copyFixtures, FIXTURE, OLD_SUFFIXES } from "../fixtures/release_6c90727.ts";
import { isRoot } from "../support/service.ts";
import { fakeCliIo } from "./_cli_io.ts";
import { forgetCommand } from "../../lib/cli/forget_command.ts";
import { FORGET_UNFINISHED } from "../../lib/storage/forget_request.ts";
import { denoRewriteFs, type RewriteFs } from "../../lib/storage/rewrite.ts";

async function cli(args: string[], file: string) {
  const { io, out, err, revoked } = fakeCliIo({
    env: (name) => name === "MESSAGES_FILE" ? file : undefined,
    now: () => new Date(Date.UTC(2026, 10, 25)),
  });
  return { code: await runCli(args, io), out, err, revoked };
}

function record(id: string, ip: string): string {
  return formatRecord({
    ts: "2026-11-20T10:00:00Z",
    id,
    name: "Ann",
    contact: "@ann",
    message: `message ${id}`,
    ip,
    messenger_ok: true,
    messenger_error: null,
  });
}

Deno.test("forget takes exactly one of --id, --contact, --address, each checked; --dry-run is forget's", () => {
  assert.deepEqual(parseCommandLine(["forget", "--address", "2001:DB8::1", "--dry-run"]), {
    kind: "run",
    command: "forget",
    forget: { match: { by: "address", value: "2001:db8::1" }, dryRun: true },
  });
  assert.deepEqual(parseCommandLine(["forget", "--id", "#k3x9q2ab"]), {
    kind: "run",
    command: "forget",
    forget: { match: { by: "id", value: "k3x9q2ab" }, dryRun: false },
  });
});

Deno.test("forget usage errors exit 2 in one line and touch nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (
      const args of [
        ["forget"],
        ["forget", "--id", "a", "--contact", "b"],
        ["forget", "--address", "not-an-ip"],
        ["forget", "--id", "two words"],
        ["forget", "--contact", " "],
        ["export", "--dry-run"],
        ["pending", "--id", "x"],
      ]
    ) {
      const { code, err, revoked } = await cli(args, `${dir}/messages.jsonl`);
      assert.equal(code, 2, args.join(" "));
      assert.equal(err.length, 1);
      assert.match(err[0]!, /^contactd: .*\(see contactd --help\)$/);
      assert.deepEqual(revoked, []);
    }
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("forget with the service stopped removes the matching records under the lock, gives up network first, and prints the counts and what it cannot reach", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  try {
    await Deno.writeTextFile(file, record("a1", "10.0.0.1") + record("b2", "10.0.0.2"), {
      mode: 0o600,
    });
    const dry = await cli(["forget", "--address", "::ffff:10.0.0.1", "--dry-run"], file);
    assert.equal(dry.code, 0, dry.err.join());
    assert.match(dry.out[0]!, /^would remove 1 record\(s\) from .* \(dry run: nothing changed\)$/);
    assert.equal((await Deno.readTextFile(file)).split("\n").length, 3);

    const done = await cli(["forget", "--address", "10.0.0.1"], file);
    assert.equal(done.code, 0, done.err.join());
    assert.deepEqual(done.revoked, [...OWN_FILES_REVOKED]);
    assert.equal(
      done.out[0],
      `removed 1 record(s) from ${file} and 0 pending message(s) from its outbox`,
    );
    assert.match(done.out[1]!, /^note: Telegram lets the bot delete its messages for 48 hours/);
    assert.equal(await Deno.readTextFile(file), record("b2", "10.0.0.2"));
    // The lock was released: a service could start now.
    (await lockFiles(file, 1)).release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("forget --dry-run with the service stopped creates nothing and opens nothing for writing", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  try {
    await Deno.writeTextFile(file, record("a1", "10.0.0.1"), { mode: 0o600 });
    const dry = await cli(["forget", "--id", "a1", "--dry-run"], file);
    assert.equal(dry.code, 0, dry.err.join());
    assert.match(dry.out[0]!, /^would remove 1 record\(s\)/);
    // No .lock, no .outbox: the dry run reads as `pending` does.
    const names = [];
    for await (const entry of Deno.readDir(dir)) names.push(entry.name);
    assert.deepEqual(names, ["messages.jsonl"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "forget as root with the service stopped and the backup file rotated away gives what it creates to the directory's owner",
  ignore: !isRoot(),
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const file = `${dir}/messages.jsonl`;
    try {
      await Deno.chown(dir, 65534, 65534);
      const done = await cli(["forget", "--contact", "@nobody"], file);
      assert.equal(done.code, 0, done.err.join());
      for (const name of [`${file}.lock`]) {
        const info = await Deno.lstat(name);
        assert.deepEqual([info.uid, info.gid], [65534, 65534], name);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("forget --contact - reads the value from standard input's first line, out of the process list", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  try {
    await Deno.writeTextFile(file, record("a1", "10.0.0.1"), { mode: 0o600 });
    const run = async (args: string[], stdin: string | undefined) => {
      const { io, out, err } = fakeCliIo({
        env: (name) => name === "MESSAGES_FILE" ? file : undefined,
        now: () => new Date(Date.UTC(2026, 10, 25)),
        readStdin: () => Promise.resolve(stdin),
      });
      return { code: await runCli(args, io), out, err };
    };
    assert.deepEqual(parseCommandLine(["forget", "--contact", "-"]), {
      kind: "run",
      command: "forget",
      forget: { match: { by: "contact", value: "-" }, dryRun: false, fromStdin: true },
    });
    const dry = await run(["forget", "--contact", "-", "--dry-run"], "@ANN\r\nignored\n");
    assert.equal(dry.code, 0, dry.err.join());
    assert.match(dry.out[0]!, /^would remove 1 record\(s\)/);
    const empty = await run(["forget", "--address", "-"], "\n");
    assert.equal(empty.code, 2);
    assert.match(empty.err[0]!, /--address takes an IPv4 or IPv6 address/);
    const none = await run(["forget", "--contact", "-"], undefined);
    assert.equal(none.code, 2);
    assert.match(none.err[0]!, /reads the value from standard input/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("forget with the service stopped removes the chat ledger's entries and leaves their messages as deletions for the service's next start; --dry-run counts them and changes nothing", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  const db = databasePath(file);
  const sent = (id: string, messageId: number, first: boolean, ip: string) => ({
    id,
    ts: "2026-11-20T10:00:00Z",
    chat: -100,
    messageId,
    first,
    ip,
    contact: "@ann",
  });
  try {
    await Deno.writeTextFile(file, record("a1", "10.0.0.1") + record("b2", "10.0.0.2"), {
      mode: 0o600,
    });
    const seeded = openLocalStore(db, { create: true });
    const seed = await openLedger(seeded);
    for (
      const part of [
        sent("a1", 10, true, "10.0.0.1"),
        sent("a1", 11, false, "10.0.0.1"),
        sent("b2", 12, true, "10.0.0.2"),
      ]
    ) await seed.noteSent(part);
    await seeded.close();
    const bytes = await Deno.readFile(db);

    const dry = await cli(["forget", "--address", "10.0.0.1", "--dry-run"], file);
    assert.equal(dry.code, 0, dry.err.join());
    assert.equal(
      dry.out[1],
      "would remove 1 submission(s) from the chat ledger and delete their 2 message(s) in the chat",
    );
    assert.deepEqual(await Deno.readFile(db), bytes, "the dry run changed nothing");
    const names = [];
    for await (const entry of Deno.readDir(dir)) names.push(entry.name);
    assert.deepEqual(names.sort(), ["messages.jsonl", "messages.jsonl.db"]);

    const done = await cli(["forget", "--address", "10.0.0.1"], file);
    assert.equal(done.code, 0, done.err.join());
    assert.equal(
      done.out[1],
      "removed 1 submission(s) from the chat ledger; their 2 message(s) in the chat are deleted " +
        "by contactd when the service starts next",
    );
    const after = new TextDecoder("latin1").decode(await Deno.readFile(db));
    assert.ok(!after.includes("10.0.0.1"), "the erased address is gone from the database file");
    assert.equal((await Deno.lstat(db)).mode! & 0o777, 0o600);
    const store = openLocalStore(db, { create: false });
    const opened = await openLedger(store);
    assert.deepEqual(opened.pendingDeletions(), [{ chat: -100, messages: [10, 11] }]);
    assert.equal(opened.byMessage(-100, 12)?.id, "b2");
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("forget with the service stopped notes its progress: stopped half-way after the rename, its run again still removes the files of what it had found and counts the records it removed", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  const db = databasePath(file);
  try {
    await Deno.writeTextFile(file, record("a1", "10.0.0.1") + record("b2", "10.0.0.2"), {
      mode: 0o600,
    });
    const seeded = openLocalStore(db, { create: true });
    const kept = { idx: 0, ts: "2026-11-20T10:00:00Z", form: null, name: "a.png", size: 1 };
    const row = { ...kept, type: "image/png", sha256: "00", silent: false };
    await seeded.run("files.add", {
      files: [{ ...row, submission: "a1", stored: "a1-0" }, {
        ...row,
        submission: "b2",
        stored: "b2-0",
      }],
    });
    await seeded.close();
    await Deno.mkdir(`${file}.files`);
    for (const name of ["a1-0", "b2-0"]) await Deno.writeTextFile(`${file}.files/${name}`, "x");
    // The backup file renamed into place, then a failure (its directory's sync): stopped there.
    const failing: RewriteFs = {
      ...denoRewriteFs,
      rename: async (from, to) => {
        await denoRewriteFs.rename(from, to);
        throw new Error("disk I/O error");
      },
    };
    const first = fakeCliIo({
      env: (name) => name === "MESSAGES_FILE" ? file : undefined,
      now: () => new Date(Date.UTC(2026, 10, 25)),
    });
    const options = { match: { by: "address", value: "10.0.0.1" }, dryRun: false } as const;
    const code = await forgetCommand(
      { MESSAGES_FILE: file },
      { ...first.io, pid: 777, fs: failing },
      options,
    );
    assert.equal(code, 1);
    assert.match(first.err.at(-1)!, /stopped half-way \(run it again\): .*disk I\/O error/);
    assert.equal(await Deno.readTextFile(file), record("b2", "10.0.0.2"), "renamed");

    const again = await cli(["forget", "--address", "10.0.0.1"], file);
    assert.equal(again.code, 0, again.err.join());
    assert.equal(
      again.out[0],
      `removed 1 record(s) from ${file} and 0 pending message(s) from its outbox`,
    );
    assert.ok(again.out.includes("removed 1 entry of files"), again.out.join("\n"));
    assert.deepEqual([...Deno.readDirSync(`${file}.files`)].map((entry) => entry.name), ["b2-0"]);
    const store = openLocalStore(db, { create: false });
    assert.deepEqual(await store.run("requests.list", { kind: FORGET_UNFINISHED }), [], "done");
    assert.equal((await store.run("files.of", { id: "b2" })).length, 1);
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("forget with the service stopped right after an upgrade imports the older release's files first, so the next start brings nothing erased back; --dry-run asks for a start first", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = await copyFixtures(dir);
    const dry = await cli(["forget", "--id", FIXTURE.pendingUnrecorded, "--dry-run"], file);
    assert.equal(dry.code, 1);
    assert.match(dry.err.join("\n"), /not imported yet: start contactd once/);
    const done = await cli(["forget", "--id", FIXTURE.pendingUnrecorded], file);
    assert.equal(done.code, 0, done.err.join("\n"));
    assert.match(done.out[0]!, /and 1 pending message\(s\)/);
    for (const suffix of OLD_SUFFIXES) {
      await assert.rejects(Deno.lstat(`${file}${suffix}`), Deno.errors.NotFound, suffix);
    }
    const store = openLocalStore(databasePath(file), { create: false });
    assert.equal(await store.run("outbox.read", { id: FIXTURE.pendingUnrecorded }), undefined);
    assert.notEqual(await store.run("outbox.read", { id: FIXTURE.pendingRecorded }), undefined);
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
