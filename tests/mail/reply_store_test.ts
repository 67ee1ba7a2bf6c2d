import assert from "node:assert/strict";
import { replyDesk } from "../../lib/inbox/reply_desk.ts";
import type { ReplyEvent } from "../../lib/bot/updates.ts";
import {
  auditRow,
  type NewReply,
  openReplyStore,
  parseReplies,
  readReplies,
  replyRow,
} from "../../lib/mail/reply_store.ts";
import { findReplySource, replySourceOf } from "../../lib/mail/reply_sources.ts";
import { call, type Store } from "../../lib/storage/store.ts";
import { withTempStore } from "../support/temp_store.ts";
import { MemoryFs } from "../support/memory_fs.ts";

const NOW = new Date("2026-11-22T14:00:00Z");
const TEXT = "we-open-at-nine-sharp";
const ADDRESS = "carla.rossi@example.org";
const QUOTED = "when-do-you-open-on-sundays";

function reply(id: string, submission = `s-${id}`, ts = "2026-11-22T13:00:00Z"): NewReply {
  return {
    id,
    submission,
    ts,
    chat: -100123,
    message: 42,
    topic: 7,
    draft: {
      to: ADDRESS,
      subject: "Re: hours",
      text: TEXT,
      quoted: { ts: "2026-11-22T12:00:00Z", message: QUOTED },
    },
  };
}

/** A real database in a temp dir; `open` opens the replies on it (a restart: a new connection). */
function withDatabase(
  test: (t: {
    store: () => Store;
    open: (retentionMs?: number, now?: Date) => ReturnType<typeof openReplyStore>;
    fileText: () => Promise<string>;
  }) => Promise<void>,
): Promise<void> {
  return withTempStore(({ path, other }) =>
    test({
      store: other,
      open: (retentionMs, now = NOW) => openReplyStore(other(), { now: () => now, retentionMs }),
      /** The database file and its write-ahead log, as text. */
      fileText: async () => {
        let text = "";
        for (const file of [path, `${path}-wal`]) {
          try {
            text += new TextDecoder().decode(await Deno.readFile(file));
          } catch (error) {
            if (!(error instanceof Deno.errors.NotFound)) throw error;
          }
        }
        return text;
      },
    })
  );
}

Deno.test("an accepted reply is committed before add resolves, and waits after a restart with its tries", async () => {
  await withDatabase(async ({ open }) => {
    const replies = await open();
    assert.equal(await replies.add(reply("r1")), true);
    await replies.failed("r1", "2026-11-22T13:01:00Z", "mail server unreachable");
    // A crash here: nothing closed. The next start finds it waiting, with its tries.
    const again = await open();
    assert.deepEqual(again.pending().map((r) => [r.id, r.attempts, r.lastError]), [
      ["r1", 1, "mail server unreachable"],
    ]);
    assert.deepEqual(again.pending()[0]!.draft, reply("r1").draft);
    assert.equal(again.pending()[0]!.topic, 7);
  });
});

Deno.test("once done, the database keeps the reply's audit and never its text nor its address", async () => {
  await withDatabase(async ({ open, store, fileText }) => {
    const replies = await open();
    await replies.add(reply("r1"));
    await replies.failed("r1", "2026-11-22T13:01:00Z", `4xx for ${ADDRESS}`);
    await replies.done("r1", "2026-11-22T13:02:00Z", "sent");
    assert.deepEqual(replies.pending(), []);
    const audit = {
      id: "r1",
      submission: "s-r1",
      ts: "2026-11-22T13:00:00Z",
      to: "c•••@example.org",
      result: "sent",
      done: "2026-11-22T13:02:00Z",
      attempts: 2,
    };
    assert.deepEqual(replies.audits(), [audit]);
    assert.deepEqual((await open()).audits(), [audit]);
    // With secure_delete and a checkpoint, the text is gone from the files themselves.
    await store().checkpoint();
    const text = await fileText();
    for (const secret of [TEXT, QUOTED, "carla.rossi"]) {
      assert.equal(text.includes(secret), false, secret);
    }
    assert.ok(text.includes("c•••@example.org"), "the audit is kept");
  });
});

Deno.test("a write the database refuses rejects, so the caller never sends it, and nothing waits in memory", async () => {
  await withDatabase(async ({ store }) => {
    const broken = store();
    const replies = await openReplyStore(broken, { now: () => NOW });
    await broken.close();
    await assert.rejects(() => replies.add(reply("r1")));
    assert.deepEqual(replies.pending(), []);
  });
});

Deno.test("retention at open and prune drop old audits; waiting replies stay", async () => {
  await withDatabase(async ({ open }) => {
    const replies = await open();
    await replies.add(reply("old", "s1", "2026-10-01T00:00:00Z"));
    await replies.done("old", "2026-10-01T00:01:00Z", "sent");
    await replies.add(reply("new", "s2", "2026-11-22T13:00:00Z"));
    await replies.done("new", "2026-11-22T13:01:00Z", "sent");
    await replies.add(reply("wait", "s3", "2026-09-01T00:00:00Z"));
    await replies.close();
    const kept = await open(30 * 86_400_000);
    assert.deepEqual(kept.audits().map((a) => a.id), ["new"]);
    assert.deepEqual(kept.pending().map((r) => r.id), ["wait"]);
    assert.equal(await kept.prune("2026-11-22T13:05:00Z"), 1);
    assert.deepEqual(kept.audits(), []);
    assert.deepEqual((await open()).audits(), []);
  });
});

Deno.test("forget erases a submission's replies, waiting or done: never sent, nothing of the sender kept", async () => {
  await withDatabase(async ({ open, store, fileText }) => {
    const replies = await open();
    await replies.add(reply("r1", "sub-erased-1"));
    await replies.add(reply("r2", "sub-erased-2"));
    await replies.done("r2", "2026-11-22T13:02:00Z", "given_up", `550 no such user ${ADDRESS}`);
    await replies.add({
      ...reply("r3", "sub-kept-3"),
      draft: { ...reply("r3").draft, to: "x@y.org" },
    });
    assert.equal(await replies.forget(new Set(["sub-erased-1", "sub-erased-2"])), 2);
    assert.deepEqual(replies.pending().map((r) => r.id), ["r3"]);
    const erased = [
      {
        id: "r1",
        submission: "",
        ts: "2026-11-22T13:00:00Z",
        to: "",
        result: "given_up",
        done: "2026-11-22T14:00:00Z",
        attempts: 0,
        reason: "erased",
        erased: true,
      },
      {
        id: "r2",
        submission: "",
        ts: "2026-11-22T13:00:00Z",
        to: "",
        result: "given_up",
        done: "2026-11-22T13:02:00Z",
        attempts: 0,
        erased: true,
      },
    ];
    assert.deepEqual(replies.audits(), erased);
    // A restart reads the same; a second forget finds nothing more.
    const again = await open();
    assert.deepEqual(again.audits(), erased);
    assert.deepEqual(again.pending().map((r) => r.id), ["r3"]);
    assert.equal(await again.forget(new Set(["sub-erased-1", "sub-erased-2"])), 0);
    // A late outcome for an erased reply writes nothing.
    await replies.done("r1", "2026-11-22T14:03:00Z", "sent");
    assert.deepEqual((await open()).audits(), erased);
    await store().checkpoint();
    const text = await fileText();
    for (const secret of ["sub-erased", "carla.rossi", "@example.org", "550 no such"]) {
      assert.equal(text.includes(secret), false, secret);
    }
  });
});

Deno.test("REPLY_LIMIT still counts the replies of an erased submission (forget frees no budget)", async () => {
  await withDatabase(async ({ open, store }) => {
    const db = store();
    const at = (minutes: number) => Date.parse("2026-11-22T13:00:00Z") + minutes * 60_000;
    const source = (id: string) =>
      replySourceOf({ id, ts: "2026-11-22T12:00:00Z", contact: ADDRESS, message: QUOTED });
    await db.run("replySources.add", source("sub-1"));
    await db.run("replySources.add", source("sub-2"));
    const replies = await open();
    let now = at(0);
    const desk = replyDesk({
      store: replies,
      wake: () => {},
      findRecord: (id) => findReplySource(db, id),
      from: "site@example.org",
      formTitle: () => undefined,
      limit: { limit: 2, windowMs: 3_600_000 },
      now: () => now,
      log: () => {},
    });
    const ask = (submission: string, message: number) => {
      now = at(message);
      const event: ReplyEvent = {
        kind: "reply",
        updateId: message,
        chatId: -100,
        messageId: message,
        from: { id: 1, name: "Anna" },
        text: TEXT,
        replyTo: 12,
        replyToBot: true,
      };
      return desk({ event, submission });
    };
    assert.equal(await ask("sub-1", 1), undefined);
    assert.equal(await ask("sub-1", 2), undefined);
    await replies.done("-100:1", "2026-11-22T13:01:30Z", "sent");
    assert.equal(await replies.forget(new Set(["sub-1"])), 2);
    await db.run("replySources.forget", { ids: ["sub-1"] });
    // Two replies in the hour, though their submission is erased: a third is refused, also
    // after a restart.
    assert.match(String(await ask("sub-2", 3)), /REPLY_LIMIT/);
    const reopened = await open();
    assert.equal(reopened.audits().length, 2);
    assert.deepEqual(reopened.pending(), []);
    assert.equal(
      reopened.audits().every((audit) => audit.submission === "" && audit.to === ""),
      true,
    );
  });
});

Deno.test("a reply id already known, waiting or done, is not added again (a redelivered update)", async () => {
  await withDatabase(async ({ open }) => {
    const replies = await open();
    assert.equal(await replies.add(reply("chat1:42")), true);
    assert.equal(await replies.add(reply("chat1:42")), false);
    assert.equal(replies.pending().length, 1);
    await replies.done("chat1:42", "2026-11-22T13:02:00Z", "sent");
    assert.equal(await replies.add(reply("chat1:42")), false);
    assert.deepEqual(replies.pending(), []);
    // The database refuses it too, whatever this connection's memory holds.
    const stale = await open();
    assert.equal(await (await open()).add(reply("chat1:43")), true);
    assert.equal(await stale.add(reply("chat1:43")), false);
    assert.deepEqual((await open()).pending().map((r) => r.id), ["chat1:43"]);
  });
});

// The replies file of older releases is read for its import only.

Deno.test("an older release's replies file: damaged lines are skipped; lines for unknown replies change nothing", () => {
  const read = parseReplies(
    'not json\n{"op":"failed","id":"x","ts":"t","error":"e"}\n{"op":"add","id":"r"}\n',
  );
  assert.equal(read.skipped, 2);
  assert.equal(read.torn, false);
  assert.deepEqual(read.pending, []);
});

Deno.test("an older release's replies file folds add, failed and done lines into waiting replies and audits", () => {
  const add = (id: string) =>
    JSON.stringify({
      op: "add",
      id,
      submission: `s-${id}`,
      ts: "2026-11-22T13:00:00Z",
      chat: 1,
      message: 2,
      to: ADDRESS,
      subject: "Re: hours",
      text: TEXT,
      quoted: { ts: "2026-11-22T12:00:00Z", message: QUOTED },
    });
  const read = parseReplies(
    [
      add("r1"),
      add("r2"),
      '{"op":"failed","id":"r1","ts":"2026-11-22T13:01:00Z","error":"down"}',
      '{"op":"done","id":"r2","ts":"2026-11-22T13:02:00Z","result":"sent"}',
      '{"op":"add","id":"r3","subm',
    ].join("\n"),
  );
  assert.deepEqual(read.pending.map((r) => [r.id, r.attempts, r.lastError]), [["r1", 1, "down"]]);
  assert.deepEqual(read.audits.map((a) => [a.id, a.to, a.attempts]), [
    ["r2", "c•••@example.org", 1],
  ]);
  assert.deepEqual([read.skipped, read.torn], [1, true]);
});

Deno.test("an older release's replies imported by replyRow and auditRow wait and are audited as they were; a redo adds nothing", async () => {
  await withDatabase(async ({ open, store }) => {
    const read = parseReplies(
      [
        JSON.stringify({ op: "add", ...reply("r1").draft, ...reply("r1"), draft: undefined }),
        '{"op":"failed","id":"r1","ts":"2026-11-22T13:01:00Z","error":"down"}',
        JSON.stringify({
          op: "audit",
          id: "r0",
          submission: "s-r0",
          ts: "2026-11-22T12:00:00Z",
          to: "c•••@example.org",
          result: "given_up",
          done: "2026-11-22T12:30:00Z",
          attempts: 3,
          reason: "550 5.1.1",
        }),
        "",
      ].join("\n"),
    );
    const calls = [
      ...read.pending.map((waiting) => call("replies.add", replyRow(waiting))),
      ...read.audits.map((audit) => call("replies.addAudit", auditRow(audit))),
    ];
    assert.deepEqual(await store().transaction(calls), [true, true]);
    assert.deepEqual(await store().transaction(calls), [false, false]);
    const replies = await open();
    assert.deepEqual(replies.pending(), [{ ...reply("r1"), attempts: 1, lastError: "down" }]);
    assert.deepEqual(replies.audits(), read.audits);
  });
});

Deno.test("a missing replies file reads as empty; one behind a symbolic link is refused", async () => {
  const fs = new MemoryFs();
  const path = "/data/messages.jsonl.replies";
  const read = await readReplies(fs, path);
  assert.deepEqual([read.pending, read.audits, read.skipped], [[], [], 0]);
  fs.mkdir("/data");
  fs.writeText("/data/elsewhere", "");
  fs.symlink("/data/elsewhere", path);
  await assert.rejects(() => readReplies(fs, path), Deno.errors.PermissionDenied);
});
