import assert from "node:assert/strict";
import { openReplyStore } from "../../lib/mail/reply_store.ts";
import { replySourceOf } from "../../lib/mail/reply_sources.ts";
import { keptReplies } from "../../lib/mail/reply_upkeep.ts";
import type { Store } from "../../lib/storage/store.ts";
import { addReply } from "../cli/_pending_db.ts";
import { withTempStore } from "../support/temp_store.ts";

const NOW = new Date("2026-11-22T14:00:00Z");
const MATCH = { by: "id", value: "x" } as const;

/** Two submissions, each with a waiting reply and its reply data; `s-old`'s reply is done. */
async function fill(store: Store): Promise<void> {
  for (const [id, ts] of [["old", "2026-09-01T00:00:00Z"], ["new", "2026-11-22T13:00:00Z"]]) {
    await addReply(store, id!, ts!);
    await store.run(
      "replySources.add",
      replySourceOf({ id: `s-${id}`, ts: ts!, contact: "carla@example.org", message: "hi" }),
    );
  }
  await store.run("replies.done", { id: "old", ts: "2026-09-01T00:05:00Z", result: "sent" });
}

Deno.test("with replies by email off, retention and erasure still reach the replies and their sources in the database", async () => {
  await withTempStore(async ({ store }) => {
    await fill(store);
    const [replies, sources] = keptReplies(store, undefined, () => NOW);
    const cutoff = Date.parse("2026-10-01T00:00:00Z");
    assert.deepEqual([await replies!.prune!(cutoff), await sources!.prune!(cutoff)], [1, 1]);
    const ids = new Set(["s-new"]);
    assert.deepEqual(
      [await replies!.forget!(MATCH, ids, true), await sources!.forget!(MATCH, ids, true)],
      [1, 1],
    );
    assert.deepEqual(await store.run("replies.pending", undefined).then((r) => r.length), 1);
    assert.deepEqual(
      [await replies!.forget!(MATCH, ids, false), await sources!.forget!(MATCH, ids, false)],
      [1, 1],
    );
    assert.deepEqual(await store.run("replies.pending", undefined), []);
    const [erased] = await store.run("replies.audits", undefined);
    assert.deepEqual(
      [erased!.submission, erased!.masked, erased!.done, erased!.reason],
      [null, null, "2026-11-22T14:00:00Z", "erased"],
    );
    assert.equal(await store.run("replySources.get", { id: "s-new" }), undefined);
  });
});

Deno.test("with replies by email on, erasure goes through the open replies, so the sender never sees an erased reply", async () => {
  await withTempStore(async ({ store }) => {
    await fill(store);
    const open = await openReplyStore(store, { now: () => NOW });
    assert.deepEqual(open.pending().map((r) => r.id), ["new"]);
    const [replies] = keptReplies(store, open, () => NOW);
    assert.equal(await replies!.forget!(MATCH, new Set(["s-new"]), false), 1);
    assert.deepEqual(open.pending(), []);
    assert.equal(await replies!.prune!(Date.parse("2026-10-01T00:00:00Z")), 1);
    assert.deepEqual(open.audits().map((a) => a.id), ["new"]);
  });
});
