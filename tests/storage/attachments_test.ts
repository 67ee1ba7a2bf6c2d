import assert from "node:assert/strict";
import { openSpool } from "../../lib/files/spool.ts";
import {
  keepAttachments,
  keepingAttachments,
  keptAttachments,
  keptName,
  sweepSpool,
} from "../../lib/storage/attachments.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import { openLocalStore } from "../../lib/storage/store.ts";

const submission = (id: string, ts: string, stored: string[]): OutboxSubmission => ({
  id,
  ts,
  name: "",
  contact: "",
  message: "m",
  ip: "192.0.2.1",
  files: stored.map((name, i) => ({
    field: "cv",
    name: `f${i}.pdf`,
    size: 4,
    type: "application/pdf",
    kind: "pdf",
    sha256: "00".repeat(32),
    stored: name,
  })),
});

Deno.test("kept files are renamed to their submission's id; retention and forget remove them from the disk, and a start sweeps strays", async () => {
  const dir = await Deno.makeTempDir();
  const store = await openLocalStore(`${dir}/m.jsonl.db`, { create: true });
  try {
    const spool = await openSpool(`${dir}/m.jsonl.files`);
    for (const name of ["u1-0", "u1-1", "u2-0", "stray-0"]) {
      const writer = await spool.create(name);
      await writer.write(new TextEncoder().encode("%PDF"));
      await writer.close();
    }
    await keepAttachments(
      store,
      spool,
      submission("old", "2026-01-01T00:00:00Z", ["u1-0", "u1-1"]),
    );
    await keepAttachments(store, spool, submission("new", "2026-11-01T00:00:00Z", ["u2-0"]));
    assert.deepEqual(await spool.list(), ["new-0", "old-0", "old-1", "stray-0"]);
    assert.equal(keptName("new", 0), "new-0");
    // A start: what no submission lists goes.
    assert.deepEqual(await sweepSpool(store, spool, await spool.list()), ["stray-0"]);
    const kept = keptAttachments(store, spool);
    assert.equal(await kept.prune!(Date.parse("2026-06-01T00:00:00Z")), 2);
    assert.deepEqual(await spool.list(), ["new-0"]);
    const match = { by: "id", value: "new" } as const;
    assert.equal(await kept.forget!(match, new Set(["new"]), true), 1, "a dry run counts");
    assert.deepEqual(await spool.list(), ["new-0"]);
    assert.equal(await kept.forget!(match, new Set(["new"]), false), 1);
    assert.deepEqual(await spool.list(), []);
    assert.equal(await store.run("files.waitingCount", undefined), 0);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the files of a notification sent silently (marked as likely spam) are kept silent, the others not", async () => {
  const dir = await Deno.makeTempDir();
  const store = openLocalStore(`${dir}/m.jsonl.db`, { create: true });
  try {
    const spool = await openSpool(`${dir}/m.jsonl.files`);
    for (const name of ["q1-0", "q2-0"]) {
      const writer = await spool.create(name);
      await writer.write(new TextEncoder().encode("%PDF"));
      await writer.close();
    }
    const quiet = await keepingAttachments(
      spool,
      submission("q1", "2026-11-27T10:00:00Z", ["q1-0"]),
      {
        silent: true,
      },
    );
    const loud = await keepingAttachments(
      spool,
      submission("q2", "2026-11-27T10:00:00Z", ["q2-0"]),
    );
    await store.transaction([...quiet, ...loud]);
    assert.equal((await store.run("files.of", { id: "q1" }))[0]?.silent, true);
    assert.equal((await store.run("files.of", { id: "q2" }))[0]?.silent, undefined);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
