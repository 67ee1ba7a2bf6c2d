/**
 * `contactd pending` as a process, with the flags `deno task contactd pending` gives it (the
 * database alone): it reads what the service committed while the service still holds the
 * database open, and never creates one.
 */
import assert from "node:assert/strict";
import { databasePath } from "../../lib/storage/store.ts";
import { addReply, addWaiting } from "../cli/_pending_db.ts";
import { runPending } from "../support/service.ts";
import { withTempStore } from "../support/temp_store.ts";

Deno.test("e2e: pending reads the database while another connection (the service) holds it open", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await addWaiting(store, "pend0001", "2026-11-22T14:03:09Z", {
      failures: ["400 Bad Request: chat not found"],
    });
    await addReply(store, "42:7", "2026-11-22T14:04:00Z");
    // Committed, still in the write-ahead log: this connection stays open, as a service's does.
    const listed = await runPending(messagesFile);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^pend0001\t2026-11-22T14:03:09Z\t1\t-\t400 Bad Request/m);
    assert.match(listed.stdout, /^42:7\ts-42:7\t/m);
    assert.match(listed.stdout, /1 reply waiting to be emailed/);
    assert.equal(listed.stdout.includes("we open at nine"), false);
    const withText = await runPending(messagesFile, "--with-text");
    assert.match(withText.stdout, /\n {2}contact: ann@example\.org\n/);
    // The service goes on writing meanwhile.
    await store.run("outbox.done", { id: "pend0001", result: "delivered" });
    await store.run("outbox.recorded", { id: "pend0001", status: 502 });
    assert.match((await runPending(messagesFile)).stdout, /^nothing pending/);
  });
});

Deno.test("e2e: pending without a database says nothing is pending and creates none", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-pending-" });
  try {
    const listed = await runPending(`${dir}/messages.jsonl`);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^nothing pending in .*messages\.jsonl\.db: there is no database/);
    await assert.rejects(
      () => Deno.lstat(databasePath(`${dir}/messages.jsonl`)),
      Deno.errors.NotFound,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
