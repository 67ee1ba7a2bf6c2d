import assert from "node:assert/strict";
import type { Store } from "../../lib/storage/store.ts";
import { withTempStore } from "../support/temp_store.ts";
import type { FileRow } from "../../lib/storage/sqlite/files_sql.ts";

/** Runs `test` on a new database, closed and removed after it. */
function withStore(test: (store: Store) => Promise<void>): Promise<void> {
  return withTempStore(({ store }) => test(store));
}

const file = (submission: string, idx: number, ts = "2026-11-27T10:00:00Z"): FileRow => ({
  submission,
  idx,
  ts,
  form: null,
  name: `f${idx}.pdf`,
  size: 100 + idx,
  type: "application/pdf",
  sha256: "ab".repeat(32),
  stored: `${submission}-${idx}`,
});

Deno.test("a submission's files wait in order until sent or refused, and a redone add writes nothing", async () => {
  await withStore(async (store) => {
    await store.run("files.add", { files: [file("a1", 0), file("a1", 1)] });
    await store.run("files.add", { files: [{ ...file("a1", 0), name: "other" }] });
    assert.deepEqual((await store.run("files.of", { id: "a1" })).map((f) => [f.name, f.state]), [
      ["f0.pdf", "waiting"],
      ["f1.pdf", "waiting"],
    ]);
    assert.equal(await store.run("files.waitingCount", undefined), 2);
    await store.run("files.failed", { submission: "a1", idx: 0, error: "timeout" });
    await store.run("files.settled", {
      submission: "a1",
      idx: 0,
      state: "sent",
      chat: -100,
      message: 42,
      error: null,
    });
    await store.run("files.settled", {
      submission: "a1",
      idx: 1,
      state: "refused",
      chat: -100,
      message: null,
      error: "400 Bad Request: file is too big",
    });
    const [sent, refused] = await store.run("files.of", { id: "a1" });
    assert.deepEqual([sent!.state, sent!.message, sent!.attempts], ["sent", 42, 2]);
    assert.deepEqual([refused!.state, refused!.error], [
      "refused",
      "400 Bad Request: file is too big",
    ]);
    assert.equal(await store.run("files.waitingCount", undefined), 0);
  });
});

Deno.test("retention and erasure remove a submission's file rows and hand them back", async () => {
  await withStore(async (store) => {
    await store.run("files.add", {
      files: [file("old", 0, "2026-01-01T00:00:00Z"), file("new", 0), file("gone", 0)],
    });
    const pruned = await store.run("files.prune", { before: "2026-06-01T00:00:00Z" });
    assert.deepEqual(pruned.map((f) => f.stored), ["old-0"]);
    assert.deepEqual((await store.run("files.list", { ids: ["gone"] })).map((f) => f.stored), [
      "gone-0",
    ]);
    const forgotten = await store.run("files.forget", { ids: ["gone", "nothing"] });
    assert.deepEqual(forgotten.map((f) => f.stored), ["gone-0"]);
    assert.deepEqual(await store.run("files.storedNames", undefined), ["new-0"]);
  });
});
