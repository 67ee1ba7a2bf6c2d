/**
 * The one-time import of release 6c90727's files (lib/upgrade/import_files.ts), on copies of the
 * files that release's own code wrote (tests/fixtures/release-6c90727/).
 */
import assert from "node:assert/strict";
import type { Logger } from "../../lib/log/logger.ts";
import { openLocalStore, type Store } from "../../lib/storage/store.ts";
import { importFiles } from "../../lib/upgrade/import_files.ts";
import {
  copyFixtures,
  FIXTURE,
  FIXTURE_CHAT,
  OLD_SUFFIXES,
  RELEASE,
} from "../fixtures/release_6c90727.ts";

/** After the fixtures' clock (2026-11-26T10:00Z), before the spam block's end (2126). */
const NOW = Date.parse("2026-11-27T12:00:00Z");

interface Setup {
  readonly dir: string;
  readonly messagesFile: string;
  readonly store: Store;
  readonly logs: Record<string, unknown>[];
  readonly log: Logger;
}

async function withFixtures(run: (setup: Setup) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "contactd-upgrade-" });
  const messagesFile = await copyFixtures(dir);
  const store = openLocalStore(`${messagesFile}.db`, { create: true });
  const logs: Record<string, unknown>[] = [];
  const log: Logger = (level, fields) => void logs.push({ level, ...fields });
  try {
    await run({ dir, messagesFile, store, logs, log });
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Everything the database holds that an import writes, for comparing before and after. */
async function contents(store: Store) {
  return {
    outbox: await store.run("outbox.texts", { afterSeq: 0, limit: 100 }),
    ledger: await store.run("ledger.list", undefined),
    deletions: await store.run("ledger.pendingDeletions", undefined),
    blocks: await store.run("blocks.all", undefined),
    replies: await store.run("replies.pending", undefined),
    audits: await store.run("replies.audits", undefined),
    offset: await store.run("meta.get", { key: "updates_offset" }),
  };
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

Deno.test(`an upgrade from ${RELEASE.slice(0, 7)} imports every old file's state, then removes the files`, async () => {
  await withFixtures(async ({ messagesFile, store, logs, log }) => {
    await Deno.writeTextFile(`${messagesFile}.chat.tmp`, "half a rewrite");
    const report = await importFiles(store, messagesFile, log, { now: () => NOW });
    assert.deepEqual(report.imported, {
      ".outbox": 4,
      ".chat": 6, // 4 entries, 2 messages waiting for deletion
      ".blocked": 2,
      ".replies": 2,
      ".updates": 1,
    });
    const got = await contents(store);

    // Pending entries keep their order, tries, errors and times; unrecorded ones stay so.
    assert.deepEqual(got.outbox.map((row) => row.id), [
      FIXTURE.pendingRecorded,
      FIXTURE.pendingUnrecorded,
      FIXTURE.deliveredUnrecorded,
      FIXTURE.pendingFields,
    ]);
    const [a1, a2, a3, a4] = got.outbox;
    assert.deepEqual(
      {
        ts: a1!.ts,
        attempts: a1!.attempts,
        firstError: a1!.firstError,
        lastError: a1!.lastError,
        lastTs: a1!.lastTs,
        recorded: a1!.recorded,
        status: a1!.status,
        done: a1!.done,
      },
      {
        ts: "2026-11-26T10:00:00Z",
        attempts: 3,
        firstError: "http_502",
        lastError: "http_429",
        lastTs: "2026-11-26T10:09:00Z",
        recorded: 1,
        status: 502,
        done: null,
      },
    );
    assert.deepEqual([a2!.recorded, a2!.attempts, a2!.lastError, a2!.done], [
      0,
      1,
      "network",
      null,
    ]);
    assert.deepEqual([a3!.recorded, a3!.done], [0, "delivered"]);
    assert.deepEqual([a4!.recorded, a4!.status], [1, 503]);
    assert.deepEqual(JSON.parse(a4!.submission).fields, { company: "Example Ltd", topic: "Quote" });
    assert.match(JSON.parse(a1!.submission).message, /^Fixture message 1 .*\nSecond line ✓$/);

    // The ledger: entries with their parts and states, the deletions still waiting.
    const byId = new Map(got.ledger.map((entry) => [entry.id, entry]));
    assert.deepEqual(
      [...byId.keys()].sort(),
      [
        FIXTURE.deliveredUnrecorded,
        FIXTURE.open,
        FIXTURE.handled,
        FIXTURE.spam,
      ].sort(),
    );
    const handled = byId.get(FIXTURE.handled)!;
    assert.deepEqual(
      [handled.chat, handled.buttons, handled.messages, handled.state, handled.by, handled.byName],
      [FIXTURE_CHAT, [702], [702, 703], "handled", 5550001, "Owner"],
    );
    assert.deepEqual([byId.get(FIXTURE.open)!.state, byId.get(FIXTURE.open)!.buttons], [
      "open",
      [701],
    ]);
    assert.equal(byId.get(FIXTURE.spam)!.state, "spam");
    assert.deepEqual(got.deletions, [{
      chat: FIXTURE_CHAT,
      messages: [...FIXTURE.deletionsWaiting],
    }]);

    // Blocks: the spam sender's two, live; the lifted and the expired ones are not imported.
    assert.deepEqual(got.blocks.map((block) => [block.kind, block.value, block.submission]), [
      ["address", "203.0.113.13", FIXTURE.spam],
      ["contact", "person13@example.org", FIXTURE.spam],
    ]);

    // Replies: the waiting one with its draft and try, the sent one's audit.
    assert.deepEqual(got.replies.map((reply) => [reply.id, reply.attempts, reply.lastError]), [
      [FIXTURE.waitingReply, 1, "connection"],
    ]);
    assert.equal(JSON.parse(got.replies[0]!.draft).to, "person12@example.org");
    assert.deepEqual(got.audits.map((audit) => [audit.id, audit.result, audit.masked]), [
      [FIXTURE.sentReply, "sent", "p•••@example.org"],
    ]);

    // The offset, still tied to its bot.
    assert.deepEqual(JSON.parse(got.offset!), { offset: FIXTURE.offset, bot: FIXTURE.bot });

    // Marked, and the old files (and a leftover temporary file) gone; the backup file stays.
    assert.deepEqual(
      (await store.run("imports.list", undefined)).map((row) => row.file).sort(),
      [...OLD_SUFFIXES].sort(),
    );
    for (const suffix of OLD_SUFFIXES) {
      assert.equal(await exists(`${messagesFile}${suffix}`), false);
    }
    assert.equal(await exists(`${messagesFile}.chat.tmp`), false);
    assert.equal(await exists(messagesFile), true);
    assert.ok(logs.some((line) => line.event === "import_done" && line.outbox === 4));
    assert.ok(!logs.some((line) => line.event === "import_lines_skipped"));
  });
});

Deno.test("a second start after an upgrade imports nothing and changes nothing", async () => {
  await withFixtures(async ({ messagesFile, store, log }) => {
    await importFiles(store, messagesFile, log, { now: () => NOW });
    const before = await contents(store);
    const again = await importFiles(store, messagesFile, log, { now: () => NOW });
    assert.deepEqual(again, { imported: {}, removed: [] });
    assert.deepEqual(await contents(store), before);
  });
});

Deno.test("old files a crash left after the import's commit are removed unread at the next start, nothing imported twice", async () => {
  await withFixtures(async ({ dir, messagesFile, store, logs, log }) => {
    const kept = `${dir}/kept`;
    await Deno.mkdir(kept);
    for (const suffix of OLD_SUFFIXES) {
      await Deno.copyFile(`${messagesFile}${suffix}`, `${kept}/${suffix}`);
    }
    await importFiles(store, messagesFile, log, { now: () => NOW });
    const before = await contents(store);
    // The crash: committed, the files not removed. Meanwhile the service moved on.
    for (const suffix of OLD_SUFFIXES) {
      await Deno.copyFile(`${kept}/${suffix}`, `${messagesFile}${suffix}`);
    }
    await store.run("outbox.done", { id: FIXTURE.pendingRecorded, result: "delivered" });
    await store.run("ledger.setState", {
      id: FIXTURE.open,
      state: "handled",
      by: 1,
      byName: "Owner",
      at: "2026-11-27T12:00:00Z",
    });
    const after = await contents(store);
    const again = await importFiles(store, messagesFile, log, { now: () => NOW });
    assert.deepEqual(again.imported, {});
    assert.deepEqual(await contents(store), after);
    assert.notDeepEqual(after, before); // the redo did not put the old state back
    for (const suffix of OLD_SUFFIXES) {
      assert.equal(await exists(`${messagesFile}${suffix}`), false);
    }
    assert.equal(logs.filter((line) => line.event === "import_leftover_removed").length, 5);
  });
});

Deno.test("damaged lines of the old files are logged and skipped, the rest imported", async () => {
  await withFixtures(async ({ messagesFile, store, logs, log }) => {
    const damage = async (suffix: string, text: string) => {
      const path = `${messagesFile}${suffix}`;
      await Deno.writeTextFile(path, (await Deno.readTextFile(path)) + text);
    };
    await damage(".outbox", '{"op":"failed","id":"a1pendng"\n{"op":"nonsense","id":"x"}\n');
    await damage(".chat", "not json\n");
    await damage(".blocked", '{"op":"block","kind":"address"}\n{"op":"lif'); // and a torn line
    await damage(".replies", "{}\n");
    await Deno.writeTextFile(`${messagesFile}.updates`, "{offset:");
    const report = await importFiles(store, messagesFile, log, { now: () => NOW });
    assert.deepEqual(report.imported, {
      ".outbox": 4,
      ".chat": 6,
      ".blocked": 2,
      ".replies": 2,
      ".updates": 0,
    });
    const skipped = Object.fromEntries(
      logs.filter((line) => line.event === "import_lines_skipped").map((line) => [
        line.file,
        line.lines,
      ]),
    );
    assert.deepEqual(skipped, { ".outbox": 2, ".chat": 1, ".blocked": 2, ".replies": 1 });
    assert.ok(logs.some((line) => line.event === "updates_offset_damaged"));
    assert.equal(await store.run("meta.get", { key: "updates_offset" }), undefined);
    // The damaged `failed` line counted no try.
    const rows = await store.run("outbox.texts", { afterSeq: 0, limit: 100 });
    assert.equal(rows.find((row) => row.id === FIXTURE.pendingRecorded)!.attempts, 3);
    // No log line carries contact data or text.
    const text = JSON.stringify(logs);
    assert.ok(!text.includes("example.org") && !text.includes("Fixture message"), text);
  });
});

Deno.test("an import whose transaction fails writes nothing and removes nothing; the next start imports all", async () => {
  await withFixtures(async ({ messagesFile, store, log }) => {
    const failing: Store = {
      ...store,
      transaction: () => Promise.reject(new Error("disk full")),
    };
    await assert.rejects(
      () => importFiles(failing, messagesFile, log, { now: () => NOW }),
      /disk full/,
    );
    for (const suffix of OLD_SUFFIXES) assert.equal(await exists(`${messagesFile}${suffix}`), true);
    assert.deepEqual(await store.run("imports.list", undefined), []);
    const report = await importFiles(store, messagesFile, log, { now: () => NOW });
    assert.equal(report.imported[".outbox"], 4);
  });
});

Deno.test("a file marked imported is never imported again, even by an import that did not see the mark", async () => {
  await withFixtures(async ({ messagesFile, store, log }) => {
    await store.run("imports.done", { file: ".replies", at: "2026-11-27T11:00:00Z", rows: 2 });
    // An import that read the marks before that one was written.
    const blind: Store = {
      ...store,
      run: ((op: string, args: unknown) =>
        op === "imports.list"
          ? Promise.resolve([])
          : store.run(op as never, args as never)) as Store["run"],
    };
    await assert.rejects(
      () =>
        importFiles(blind, messagesFile, log, { now: () => NOW }),
      /UNIQUE constraint failed: imports\.file/,
    );
    assert.deepEqual(await store.run("outbox.texts", { afterSeq: 0, limit: 100 }), []);
    assert.deepEqual(await store.run("replies.pending", undefined), []);
  });
});

Deno.test("a symbolic link at an old file's path is refused: nothing imported, nothing removed", async () => {
  await withFixtures(async ({ dir, messagesFile, store, log }) => {
    await Deno.rename(`${messagesFile}.blocked`, `${dir}/elsewhere`);
    await Deno.symlink(`${dir}/elsewhere`, `${messagesFile}.blocked`);
    await assert.rejects(
      () => importFiles(store, messagesFile, log, { now: () => NOW }),
      /symbolic link/,
    );
    assert.deepEqual(await store.run("imports.list", undefined), []);
    assert.equal(await exists(`${messagesFile}.outbox`), true);
    assert.equal(await exists(`${dir}/elsewhere`), true);
  });
});
