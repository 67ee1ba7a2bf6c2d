/**
 * `contactd pending` reads the database (`MESSAGES_FILE.db`): the submissions waiting for the
 * chat (ids, attempts, the answer, the last error; their text only when asked), then the owner's
 * replies waiting to be emailed: ids, when, age, attempts, the last error; never an address or a
 * reply's text.
 */
import assert from "node:assert/strict";
import { pendingCommand } from "../../lib/cli/commands.ts";
import { call, databasePath } from "../../lib/storage/store.ts";
import { fakeCliIo } from "./_cli_io.ts";
import { addReply, addWaiting } from "./_pending_db.ts";
import { withTempStore } from "../support/temp_store.ts";

/** `contactd pending [args]` with `MESSAGES_FILE` set to `messagesFile`. */
async function pending(messagesFile: string, args: string[] = []) {
  const { io, out, err } = fakeCliIo({ now: () => new Date("2026-11-22T14:00:00Z") });
  const settings = {
    MESSENGER_BOT_TOKEN: "424242:AAE_secret-token-value",
    MESSENGER_CHAT_ID: "42",
    MESSAGES_FILE: messagesFile,
  };
  const code = await pendingCommand(settings, io, args.includes("--with-text"));
  return { code, out, err };
}

Deno.test("pending lists the replies waiting to be emailed, with ages and attempts, no address or text", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await addReply(store, "r1", "2026-11-22T13:55:00Z");
    await store.run("replies.failed", { id: "r1", error: "mail server unreachable" });
    await addReply(store, "r2", "2026-11-22T11:00:00Z");
    await addReply(store, "r3", "2026-11-22T12:00:00Z");
    await store.run("replies.done", { id: "r3", ts: "2026-11-22T12:01:00Z", result: "sent" });
    for (const args of [[], ["--with-text"]]) {
      const { code, out } = await pending(messagesFile, args);
      assert.equal(code, 0);
      const at = out.indexOf("reply\tsubmission\taccepted\tage\tattempts\tlast error");
      assert.ok(at > 0, out.join("\n"));
      assert.deepEqual(out.slice(at + 1), [
        "r2\ts-r2\t2026-11-22T11:00:00Z\t3h\t0\t-",
        "r1\ts-r1\t2026-11-22T13:55:00Z\t5m\t1\tmail server unreachable",
        "2 replies waiting to be emailed, oldest 2026-11-22T11:00:00Z: contactd sends them while it runs",
      ]);
      const all = out.join("\n");
      for (const secret of ["carla", "we open at nine", "when do you open"]) {
        assert.equal(all.includes(secret), false, secret);
      }
    }
  });
});

Deno.test("pending lists the submissions waiting in the database, oldest first; their text only with --with-text", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await addWaiting(store, "aaaa1111", "2026-11-22T10:00:00Z", {
      failures: ["timeout", "400 Bad Request: chat not found"],
      status: 502,
      submission: { form: "sales", fields: { phone: "+1 555" }, message: "first\nline" },
    });
    await addWaiting(store, "bbbb2222", "2026-11-22T11:00:00Z", { status: null });
    await addWaiting(store, "cccc3333", "2026-11-22T12:00:00Z");
    await addWaiting(store, "dddd4444", "2026-11-22T12:30:00Z", { status: 200 });
    await store.run("outbox.done", { id: "dddd4444", result: "delivered" });
    const listed = await pending(messagesFile);
    assert.equal(listed.code, 0, listed.err.join("\n"));
    assert.deepEqual(listed.out, [
      "id\treceived\tattempts\tanswered\tlast error",
      "aaaa1111\t2026-11-22T10:00:00Z\t2\t502\t400 Bad Request: chat not found",
      "bbbb2222\t2026-11-22T11:00:00Z\t0\tnone\t-",
      "cccc3333\t2026-11-22T12:00:00Z\t0\t-\t-",
      "3 pending, oldest 2026-11-22T10:00:00Z: contactd delivers them while it runs",
    ]);
    const withText = await pending(messagesFile, ["--with-text"]);
    assert.deepEqual(withText.out.slice(1, 8), [
      "aaaa1111\t2026-11-22T10:00:00Z\t2\t502\t400 Bad Request: chat not found",
      "  name: Ann",
      "  contact: ann@example.org",
      "  ip: 192.0.2.1",
      '  message: "first\\nline"',
      "  form: sales",
      "  field phone: +1 555",
    ]);
  });
});

Deno.test("pending pages through a backlog larger than one read", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await store.transaction(Array.from({ length: 600 }, (_, i) =>
      call("outbox.add", {
        id: `id${String(i).padStart(6, "0")}`,
        ts: "2026-11-22T10:00:00Z",
        submission: "{}",
      })));
    const { out } = await pending(messagesFile);
    assert.equal(out.length, 602);
    assert.equal(
      out.at(-1),
      "600 pending, oldest 2026-11-22T10:00:00Z: contactd delivers them while it runs",
    );
    assert.ok(out[600]!.startsWith("id000599\t"));
  });
});

Deno.test("with no database, pending says nothing is pending and exits 0", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-pending-" });
  try {
    const { code, out } = await pending(`${dir}/messages.jsonl`);
    assert.equal(code, 0);
    assert.deepEqual(out, [
      `nothing pending in ${dir}/messages.jsonl.db: there is no database (contactd makes it when it starts)`,
    ]);
    // A command never creates the database.
    await assert.rejects(() => Deno.lstat(`${dir}/messages.jsonl.db`), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("with nothing waiting, pending says so and adds no reply lines", async () => {
  await withTempStore(async ({ messagesFile, store }) => {
    await addReply(store, "r1", "2026-11-22T13:00:00Z");
    await store.run("replies.done", { id: "r1", ts: "2026-11-22T13:01:00Z", result: "sent" });
    const { code, out } = await pending(messagesFile);
    assert.equal(code, 0);
    assert.equal(out.length, 1, out.join("\n"));
    assert.match(out[0]!, /^nothing pending in .*messages\.jsonl\.db: every message was delivered/);
  });
});

Deno.test("a database that cannot be read fails pending in one line naming it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-pending-" });
  try {
    const path = databasePath(`${dir}/messages.jsonl`);
    await Deno.writeTextFile(path, "not a database, only text ".repeat(200), { mode: 0o600 });
    const { code, out, err } = await pending(`${dir}/messages.jsonl`);
    assert.equal(code, 1);
    assert.deepEqual(out, []);
    assert.equal(err.length, 1, err.join("\n"));
    assert.match(err[0]!, new RegExp(`^contactd pending: cannot read ${path}: .*not a database`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
