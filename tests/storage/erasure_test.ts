/**
 * Erasure: what a request matches, and every trace removed (backup records, pending outbox
 * entries, their lines), by the service on request or by the command with the service stopped.
 */
import assert from "node:assert/strict";
import { formatRecord } from "../../lib/storage/backup.ts";
import {
  erase,
  type ErasureDeps,
  ForgottenIds,
  type KeptFile,
  matches,
  parseForgetMatch,
} from "../../lib/storage/erasure.ts";
import { denoRewriteFs, type RewriteFs } from "../../lib/storage/rewrite.ts";
import {
  askService,
  encodeAnswer,
  encodeRequest,
  FORGET_ANSWER_WAIT_MS,
  FORGET_NOTED_IDS_CAP,
  FORGET_REQUEST,
  FORGET_UNFINISHED,
  parseAnswer,
  parseRequest,
  serveForgetRequest,
} from "../../lib/storage/forget_request.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { MemoryFs } from "../support/memory_fs.ts";
import { type ChatDeletion, type Ledger, openLedger } from "../../lib/storage/ledger.ts";
import type { Store } from "../../lib/storage/store.ts";
import { openTempStore } from "../support/temp_store.ts";
import { SCAN_FROM_KEY } from "../../lib/storage/recovery.ts";
import { databaseText, open, submission } from "./_outbox_setup.ts";
import { rewriteFs } from "./_rewrite_setup.ts";

const BACKUP = "/data/messages.jsonl";
const NOW = Date.UTC(2026, 10, 25, 12);

function match(by: "id" | "contact" | "address", value: string) {
  const parsed = parseForgetMatch(by, value);
  assert.ok(!("error" in parsed), `${by} ${value}`);
  return parsed;
}

function recordOf(s: OutboxSubmission, ok = false): string {
  const { id, ts, name, contact, message, ip } = s;
  return formatRecord({
    ts,
    id,
    name,
    contact,
    message,
    ip,
    messenger_ok: ok,
    messenger_error: ok ? null : "timeout",
  });
}

Deno.test("an address matches in every written form of it: IPv6 case, zeros, brackets, IPv4-mapped", () => {
  const v6 = match("address", "2001:DB8::1");
  for (const ip of ["2001:db8::1", "2001:0db8:0:0:0:0:0:1", "2001:db8:0::0:1", "[2001:db8::1]"]) {
    assert.equal(matches(v6, { ip }), true, ip);
  }
  for (const ip of ["2001:db8::2", "2001:db8::1:0", "fe80::1", "", "junk"]) {
    assert.equal(matches(v6, { ip }), false, ip);
  }
  const v4 = match("address", "::ffff:192.0.2.1");
  assert.equal(matches(v4, { ip: "192.0.2.1" }), true);
  assert.equal(matches(v4, { ip: "::ffff:c000:201" }), true);
  assert.equal(matches(v4, { ip: "192.0.2.10" }), false);
  assert.deepEqual(parseForgetMatch("address", "300.1.1.1"), {
    error: "--address takes an IPv4 or IPv6 address",
  });
});

Deno.test("a contact matches the contact field or the whole value of another field the form kept (an email beside an @name), never a part of one", () => {
  const contact = match("contact", "Ann@Example.org");
  assert.equal(matches(contact, { contact: "@ann", fields: { email: "ann@example.org" } }), true);
  assert.equal(
    matches(contact, { contact: "@ann", fields: { note: "ann@example.org, bob" } }),
    false,
  );
  assert.equal(matches(contact, { contact: "@ann", fields: { email: "bob@example.org" } }), false);
  assert.equal(matches(contact, { fields: { Email: "ANN@example.org" } }), true);
});

Deno.test("a contact matches whatever its case and Unicode form; an id exactly, with or without #", () => {
  const contact = match("contact", "  Ann@Example.ORG ");
  assert.equal(matches(contact, { contact: "ann@example.org" }), true);
  assert.equal(matches(contact, { contact: "ann@example.org.evil" }), false);
  assert.equal(matches(contact, { contact: "bob@example.org" }), false);
  assert.equal(matches(contact, {}), false);
  const nfd = match("contact", "Jose\u0301");
  assert.equal(matches(nfd, { contact: "jos\u00e9" }), true);
  assert.deepEqual(match("id", "#k3x9q2ab"), { by: "id", value: "k3x9q2ab" });
  assert.equal(matches(match("id", "k3x9q2ab"), { id: "k3x9q2ab" }), true);
  // Any case, as the ids are made: lower-case Crockford base32 (I, L, O read as 1, 1, 0).
  assert.deepEqual(match("id", "#K3X9Q2AB"), { by: "id", value: "k3x9q2ab" });
  assert.deepEqual(match("id", "K3X9QZAO"), { by: "id", value: "k3x9qza0" });
  for (const bad of ["k3x9q2a_", "k3x9-q2ab", "k3x9q2au", "é"]) {
    assert.ok("error" in parseForgetMatch("id", bad), bad);
  }
  // A record without an id (written before ids were kept) is never matched by id.
  assert.equal(matches(match("id", "k3x9q2ab"), {}), false);
  assert.ok("error" in parseForgetMatch("id", "a b"));
  assert.ok("error" in parseForgetMatch("contact", "  "));
});

/** What erase works on, at {@linkcode BACKUP}, with no other appender; and its log lines. */
function depsOf(fs: RewriteFs, outbox: ErasureDeps["outbox"]) {
  const lines: LogFields[] = [];
  const deps = {
    appender: { exclusive: <T>(task: () => Promise<T>) => task() },
    fs,
    path: BACKUP,
    outbox,
    now: () => NOW,
    log: (_: string, fields: LogFields) => void lines.push(fields),
  };
  return { deps, lines };
}

/** A backup file and an outbox on one memory file system: `a` delivered, `b` and `c` pending. */
async function files() {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs, calls } = rewriteFs(memory);
  const outbox = await open(memory);
  const a = { ...submission("from Ann"), contact: "ann@example.org" };
  const b = { ...submission("Ann again"), contact: "ANN@example.org", ip: "2001:db8::7" };
  const c = { ...submission("from Bo"), id: "c0000b03", contact: "bo@example.org" };
  for (const s of [a, b, c]) await outbox.add(s);
  await outbox.done(a.id, "2026-11-22T14:03:10Z", "delivered");
  for (const s of [a, b, c]) await outbox.recorded(s.id, s === a ? 200 : 502);
  const old = JSON.stringify({ ts: "2025-01-01T00:00:00Z", contact: "ann@example.org" }) + "\n";
  memory.writeText(BACKUP, old + recordOf(a, true) + recordOf(b) + recordOf(c));
  return { memory, fs, calls, outbox, a, b, c };
}

Deno.test("erase removes the matching records (old ones without id too) and gives up the matching pending entries; the outbox's database keeps nothing of them", async () => {
  const { memory, fs, outbox, b, c } = await files();
  const { deps, lines } = depsOf(fs, outbox);
  const dry = await erase(deps, match("contact", "ann@example.org"), true);
  assert.deepEqual(dry, { records: 3, pending: 1 });
  assert.equal(outbox.pendingCount, 2); // a dry run changes nothing
  assert.match(memory.readText(BACKUP), /from Ann/);

  const outcome = await erase(deps, match("contact", "ann@example.org"), false);
  assert.deepEqual(outcome, { records: 3, pending: 1 });
  assert.equal(memory.readText(BACKUP), recordOf(c));
  assert.equal(outbox.pendingCount, 1);
  assert.deepEqual([...outbox.entries()].filter((e) => e.done === false).map((e) => e.id), [c.id]);
  // The database keeps nothing of them, in its file or its log (secure_delete, checkpoint).
  const outboxText = databaseText(memory);
  assert.doesNotMatch(outboxText, /from Ann|Ann again|ann@example|ANN@example|2001:db8::7/i);
  assert.match(outboxText, /from Bo/);
  assert.ok(!outboxText.includes(b.id));
  assert.deepEqual(lines, []);
  await outbox.close();
});

Deno.test("erase with the service stopped notes unanswered entries as recorded, so the next start writes no record for them", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const outbox = await open(memory);
  const crashed = { ...submission("never answered"), ip: "198.51.100.9" };
  await outbox.add(crashed); // a crash before its record: status undefined
  memory.writeText(BACKUP, "");
  const deps = { ...depsOf(fs, outbox).deps, stopped: true };
  assert.deepEqual(await erase(deps, match("address", "198.51.100.9"), false), {
    records: 0,
    pending: 1,
  });
  await outbox.close();
  const reopened = await open(memory);
  assert.deepEqual([...reopened.entries()], []);
  assert.doesNotMatch(databaseText(memory), /never answered/);
  await reopened.close();
});

Deno.test("erase while the service runs forgets the matching ids (pending and unanswered) and notes them recorded, so neither the queue, the sender's record nor crash recovery brings them back", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const outbox = await open(memory);
  // Pending, its sender waiting; and delivered with its sender not answered yet.
  const waiting = { ...submission("waits"), ip: "198.51.100.9" };
  const delivered = { ...submission("delivered"), ip: "198.51.100.9" };
  const other = { ...submission("other"), ip: "198.51.100.10" };
  for (const s of [waiting, delivered, other]) await outbox.add(s);
  await outbox.done(delivered.id, "2026-11-22T14:03:10Z", "delivered");
  memory.writeText(BACKUP, "");
  const forgotten = new ForgottenIds(60_000, () => 0);
  const deps = { ...depsOf(fs, outbox).deps, forgotten };
  assert.deepEqual(await erase(deps, match("address", "198.51.100.9"), false), {
    records: 0,
    pending: 1,
  });
  assert.equal(forgotten.has(waiting.id), true);
  assert.equal(forgotten.has(delivered.id), true);
  assert.equal(forgotten.has(other.id), false);
  await outbox.close();
  // A crash now: the next start writes no record for them (nothing unrecorded of them is left).
  const reopened = await open(memory);
  assert.deepEqual([...reopened.entries()].map((e) => e.id), [other.id]);
  await reopened.close();
});

Deno.test("the forgotten ids are bounded: kept for their time, at most the cap, the oldest going first", () => {
  let now = 0;
  const forgotten = new ForgottenIds(1000, () => now, 3);
  for (const id of ["a", "b", "c", "d"]) forgotten.add(id);
  assert.equal(forgotten.size, 3);
  assert.equal(forgotten.has("a"), false);
  assert.equal(forgotten.has("d"), true);
  now = 1001;
  assert.equal(forgotten.has("d"), false);
  forgotten.add("e");
  assert.equal(forgotten.size, 1);
});

Deno.test("erase says how many pending submissions wait on disk beyond the outbox's window, unsearched, and removes a rewrite's stale temporary file", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const outbox = await open(memory, { window: 2 });
  for (let i = 0; i < 5; i++) {
    const s = { ...submission(`m${i}`), ip: "198.51.100.9" };
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  await outbox.close();
  const reopened = await open(memory, { window: 2 });
  memory.writeText(BACKUP, "");
  memory.writeText(`${BACKUP}.rewrite`, "an erased record left by a crash\n");
  const outcome = await erase(depsOf(fs, reopened).deps, match("address", "198.51.100.9"), false);
  assert.equal(outcome.pending, 2);
  assert.equal(outcome.unsearched, 3);
  assert.equal(memory.exists(`${BACKUP}.rewrite`), false);
  // The running service's answer carries it to the command.
  assert.deepEqual(parseAnswer(encodeAnswer({ nonce: "n", ok: true, outcome })), {
    nonce: "n",
    ok: true,
    outcome: { records: 0, pending: 2, unsearched: 3 },
  });
  await reopened.close();
});

Deno.test("erase searches the pending submissions on disk beyond the outbox's window too: every match given up and forgotten, none left to deliver", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const outbox = await open(memory, { window: 2 });
  const all = [];
  for (let i = 0; i < 6; i++) {
    const s = { ...submission(`m${i}`), ip: i === 4 ? "198.51.100.10" : "198.51.100.9" };
    all.push(s);
    await outbox.add(s);
    await outbox.recorded(s.id, 502);
  }
  await outbox.close();
  const reopened = await open(memory, { window: 2 });
  memory.writeText(BACKUP, "");
  const forgotten = new ForgottenIds(60_000, () => 0);
  const deps = {
    ...depsOf(fs, reopened).deps,
    forgotten,
    pendingOnDisk: () => reopened.waiting(),
  };
  const dry = await erase(deps, match("address", "198.51.100.9"), true);
  assert.deepEqual(dry, { records: 0, pending: 5 });
  const outcome = await erase(deps, match("address", "198.51.100.9"), false);
  assert.deepEqual(outcome, { records: 0, pending: 5 });
  for (const s of all) assert.equal(forgotten.has(s.id), s !== all[4], s.id);
  assert.equal(reopened.pendingCount, 1);
  assert.deepEqual(
    [...reopened.entries()].filter((e) => e.done === false).map((e) => e.id),
    [all[4]!.id],
  );
  await reopened.close();
  const again = await open(memory, { window: 2 });
  assert.deepEqual([...again.entries()].map((e) => e.id), [all[4]!.id]);
  await again.close();
});

Deno.test("forget requests and answers round-trip their rows' text; a bad one is refused", () => {
  const request = { nonce: "n1", match: match("address", "2001:DB8::1"), dryRun: true };
  assert.deepEqual(parseRequest(encodeRequest(request)), {
    ...request,
    match: { by: "address", value: "2001:db8::1" },
  });
  for (const bad of ["", "{}", '{"nonce":"n","by":"name","value":"x","dry_run":false}']) {
    assert.ok("error" in parseRequest(bad), bad);
  }
  assert.equal(parseAnswer('{"nonce":"n1","ok":true,"records":2'), undefined);
  assert.deepEqual(parseAnswer('{"nonce":"n1","ok":true,"records":2,"pending":1}'), {
    nonce: "n1",
    ok: true,
    outcome: { records: 2, pending: 1 },
  });
});

Deno.test("forget while the service runs: the command's request is performed by the service, answered, and its row is gone; the log has counts only", async () => {
  const { memory, fs, outbox, c } = await files();
  const { deps, lines } = depsOf(fs, outbox);
  await using temp = await openTempStore();
  const service = { ...deps, store: temp };
  await temp.run("meta.set", { key: SCAN_FROM_KEY, value: "123456" });
  let polls = 0;
  // The command's waits are the service's polls.
  const sleep = async () => {
    if (++polls % 2 === 0) await serveForgetRequest(service);
  };
  const answer = await askService({ store: temp, sleep, now: () => new Date(NOW) }, {
    nonce: "n-1",
    match: match("id", c.id),
    dryRun: false,
  });
  assert.deepEqual(answer, { nonce: "n-1", ok: true, outcome: { records: 1, pending: 1 } });
  // The backup file was rewritten: the next start's search for unmarked records starts at its
  // beginning.
  assert.equal(await temp.run("meta.get", { key: SCAN_FROM_KEY }), "0");
  assert.equal(await temp.run("requests.next", { kind: FORGET_REQUEST }), undefined);
  assert.equal(await temp.run("requests.get", { seq: 1 }), undefined, "removed once read");
  assert.doesNotMatch(memory.readText(BACKUP), /from Bo/);
  assert.deepEqual(lines, [{ event: "forget", by: "id", dry_run: false, records: 1, pending: 1 }]);
  await outbox.close();
});

/**
 * Another file holding a part of submission `id` (its case, say): its forget removes what it
 * holds of the ids it is told (recorded in `told`); `failFirst`: its first call fails (a disk
 * error).
 */
function casesHolding(id: string, failFirst = false) {
  const held = new Set([id]);
  const told: string[][] = [];
  let fail = failFirst;
  const cases: KeptFile = {
    name: "cases",
    forget: (_match, ids) => {
      told.push([...ids]);
      if (fail) return (fail = false, Promise.reject(new Error("disk I/O error")));
      return Promise.resolve([...ids].filter((id) => held.delete(id)).length);
    },
  };
  return { held, told, cases };
}

/** Commits the forget request of submission `id` into `store`; resolves with it and its row. */
async function requestOfId(store: Pick<Store, "run">, id: string) {
  const request = { nonce: "n-1", match: match("id", id), dryRun: false };
  const seq = await store.run("requests.add", {
    kind: FORGET_REQUEST,
    body: encodeRequest(request),
    created: "2026-11-27T10:00:00Z",
  });
  return { request, seq };
}

Deno.test("a forget the service was killed doing, right before or right after its backup file's rename, answers at the next start what it removed, never twice, and still erases the other files' parts of the submissions it had found", async () => {
  for (const killedAt of ["before the rename", "after the rename"] as const) {
    const { memory, outbox, c } = await files();
    await using temp = await openTempStore();
    // Another file holding a part of c (its case, say), asked after the rename: by the next start
    // neither the outbox nor the backup file holds c any more (found only in the backup file
    // is the same), so only the interrupted run's note can name it. Found by review.
    const { held, told, cases } = casesHolding(c.id);
    const { seq } = await requestOfId(temp, c.id);
    // The kill: the file system's next call after that moment never returns.
    const killed = Promise.withResolvers<void>();
    let renamed = false;
    const { fs: dying } = rewriteFs(memory, (call) => {
      const now = killedAt === "before the rename" ? call.op === "rename" : renamed;
      if (call.op === "rename") renamed = true;
      if (!now) return;
      killed.resolve();
      return new Promise<void>(() => {});
    });
    void serveForgetRequest({ ...depsOf(dying, outbox).deps, store: temp, extra: [cases] });
    await killed.promise;
    assert.equal(/from Bo/.test(memory.readText(BACKUP)), killedAt === "before the rename");
    assert.deepEqual(told, []);

    await temp.run("requests.reset", undefined); // the next start
    const { deps, lines } = depsOf(rewriteFs(memory).fs, outbox);
    await serveForgetRequest({ ...deps, store: temp, extra: [cases] });
    const state = await temp.run("requests.get", { seq });
    assert.deepEqual(parseAnswer(state!.answer!), {
      nonce: "n-1",
      ok: true,
      outcome: { records: 1, pending: 1, extra: { cases: 1 } },
    }, killedAt);
    assert.deepEqual(lines, [{
      event: "forget",
      by: "id",
      dry_run: false,
      records: 1,
      pending: 1,
      cases: 1,
    }]);
    assert.deepEqual(told, [[c.id]], killedAt);
    assert.equal(held.size, 0);
    assert.doesNotMatch(memory.readText(BACKUP), /from Bo/);
    await outbox.close();
  }
});

Deno.test("a forget the service was killed doing while it read the backup file, a pending submission given up by then, counts it at the next start and still erases the other files' parts of it", async () => {
  const { memory, outbox, a, c } = await files();
  memory.writeText(BACKUP, recordOf(a, true)); // c is found in the outbox only
  await using temp = await openTempStore();
  const { seq } = await requestOfId(temp, c.id);
  const { held, told, cases } = casesHolding(c.id);
  // The kill: the backup file's first call never returns (the outbox's part is done by then).
  const killed = Promise.withResolvers<void>();
  const { fs: dying } = rewriteFs(memory, () => {
    killed.resolve();
    return new Promise<void>(() => {});
  });
  void serveForgetRequest({ ...depsOf(dying, outbox).deps, store: temp, extra: [cases] });
  await killed.promise;
  assert.equal(outbox.pendingCount, 1);

  await temp.run("requests.reset", undefined); // the next start
  const { deps } = depsOf(rewriteFs(memory).fs, outbox);
  await serveForgetRequest({ ...deps, store: temp, extra: [cases] });
  const state = await temp.run("requests.get", { seq });
  assert.deepEqual(parseAnswer(state!.answer!), {
    nonce: "n-1",
    ok: true,
    outcome: { records: 0, pending: 1, extra: { cases: 1 } },
  });
  assert.deepEqual(told, [[c.id]]);
  assert.equal(held.size, 0);
  await outbox.close();
});

Deno.test("a forget that fails after its backup file's rename keeps its note: the next forget of the same match takes it over, erases the other files' parts of what it had found and counts them", async () => {
  const { memory, outbox, c } = await files();
  await using temp = await openTempStore();
  const { held, told, cases } = casesHolding(c.id, true);
  const answers = [];
  // The run, then the person's run again (the contact written otherwise: the same match).
  for (const [nonce, contact] of [["n-1", "bo@example.org"], ["n-2", " BO@example.org"]]) {
    const seq = await temp.run("requests.add", {
      kind: FORGET_REQUEST,
      body: encodeRequest({ nonce: nonce!, match: match("contact", contact!), dryRun: false }),
      created: "2026-11-27T10:00:00Z",
    });
    const { deps } = depsOf(rewriteFs(memory).fs, outbox);
    await serveForgetRequest({ ...deps, store: temp, extra: [cases] });
    answers.push(parseAnswer((await temp.run("requests.get", { seq }))!.answer!));
    if (nonce === "n-1") {
      const kept = await temp.run("requests.list", { kind: FORGET_UNFINISHED });
      assert.equal(kept.length, 1, "the failed run's note is kept");
    }
  }
  assert.deepEqual(answers, [
    { nonce: "n-1", ok: false, error: "Error: disk I/O error" },
    { nonce: "n-2", ok: true, outcome: { records: 1, pending: 1, extra: { cases: 1 } } },
  ]);
  assert.deepEqual(told, [[c.id], [c.id]]);
  assert.equal(held.size, 0);
  assert.deepEqual(await temp.run("requests.list", { kind: FORGET_UNFINISHED }), [], "done");
  await outbox.close();
});

Deno.test("a forget killed right after the outbox's part is committed, before anything else, still has its ids noted: the run again erases the other files' parts", async () => {
  const { memory, outbox, a, c } = await files();
  memory.writeText(BACKUP, recordOf(a, true)); // c is found in the outbox only
  await using temp = await openTempStore();
  const { seq } = await requestOfId(temp, c.id);
  const { held, cases } = casesHolding(c.id);
  // The kill: the outbox's rows are deleted, and the call never returns.
  const killed = Promise.withResolvers<void>();
  const dying: ErasureDeps["outbox"] = {
    entries: () => outbox.entries(),
    read: (id) => outbox.read(id),
    done: (...args) => outbox.done(...args),
    recorded: (...args) => outbox.recorded(...args),
    compact: () => outbox.compact(),
    forget: async (ids) => {
      await outbox.forget(ids);
      killed.resolve();
      return new Promise<void>(() => {});
    },
  };
  void serveForgetRequest({
    ...depsOf(rewriteFs(memory).fs, dying).deps,
    store: temp,
    extra: [cases],
  });
  await killed.promise;
  assert.equal(outbox.get(c.id), undefined, "its row is gone");

  await temp.run("requests.reset", undefined); // the next start
  const { deps } = depsOf(rewriteFs(memory).fs, outbox);
  await serveForgetRequest({ ...deps, store: temp, extra: [cases] });
  const state = await temp.run("requests.get", { seq });
  assert.deepEqual(parseAnswer(state!.answer!), {
    nonce: "n-1",
    ok: true,
    outcome: { records: 0, pending: 0, extra: { cases: 1 } },
  });
  assert.equal(held.size, 0);
  await outbox.close();
});

Deno.test("a forget's note of what an interrupted run found holds at most FORGET_NOTED_IDS_CAP ids; the run again takes them as found and logs how many more there were (forget_ids_unnoted)", async () => {
  const { outbox, c } = await files();
  await using temp = await openTempStore();
  const many = Array.from({ length: FORGET_NOTED_IDS_CAP + 1 }, (_, i) => `x${i}`);
  const done = { records: 0, pending: 0, file: "", ids: [c.id, ...many], unnoted: 7 };
  const request = { nonce: "n-1", match: match("id", "nobody00"), dryRun: false };
  const parsed = parseRequest(encodeRequest({ ...request, done }));
  assert.ok(!("error" in parsed));
  assert.equal(parsed.done?.ids.length, FORGET_NOTED_IDS_CAP);
  await temp.run("requests.add", {
    kind: FORGET_REQUEST,
    body: encodeRequest({ ...request, done: { ...done, ids: [c.id] } }),
    created: "2026-11-27T10:00:00Z",
  });
  const told: string[][] = [];
  const cases: KeptFile = {
    name: "cases",
    forget: (_match, ids) => (told.push([...ids]), Promise.resolve(0)),
  };
  const { deps, lines } = depsOf(rewriteFs(new MemoryFs()).fs, outbox);
  await serveForgetRequest({ ...deps, store: temp, extra: [cases] });
  assert.deepEqual(told, [[c.id]]);
  assert.deepEqual(lines[0], { event: "forget_ids_unnoted", count: 7 });
  await outbox.close();
});

Deno.test("forget while the service runs: none is left behind when no answer comes; a request the service cannot read is answered as invalid, naming no value", async () => {
  await using temp = await openTempStore();
  const request = { nonce: "n", match: match("id", "x1"), dryRun: true };
  let waited = 0;
  const sleep = (ms: number) => (waited += ms, Promise.resolve());
  const ask = { store: temp, sleep, now: () => new Date(NOW) };
  assert.equal(await askService(ask, request), undefined);
  assert.ok(waited >= FORGET_ANSWER_WAIT_MS);
  assert.equal(await temp.run("requests.next", { kind: FORGET_REQUEST }), undefined);

  const seq = await temp.run("requests.add", {
    kind: FORGET_REQUEST,
    body: '{"nonce":"bad1","by":"name","value":"Ann Example","dry_run":false}',
    created: "2026-11-27T10:00:00Z",
  });
  const lines: LogFields[] = [];
  await serveForgetRequest({
    appender: { exclusive: (task) => task() },
    fs: denoRewriteFs,
    path: BACKUP,
    store: temp,
    outbox: {
      entries: () => [][Symbol.iterator](),
      read: () => Promise.reject(new Error("none")),
      done: () => Promise.resolve(),
      recorded: () => Promise.resolve(),
      compact: () => Promise.resolve(),
    },
    now: () => NOW,
    log: (_, fields) => void lines.push(fields),
  });
  assert.deepEqual(lines.map((line) => line.event), ["forget_request_invalid"]);
  const state = await temp.run("requests.get", { seq });
  assert.equal(state?.state, "failed");
  assert.doesNotMatch(String(state?.answer), /Ann Example/);
  assert.deepEqual(parseAnswer(state!.answer!), {
    nonce: "bad1",
    ok: false,
    error: "invalid request: not a forget request",
  });
});

const CHAT = -1001234567890;

/**
 * The chat ledger beside {@linkcode files}' backup file: `a` sent in two parts, `c` in one, and
 * two submissions only the ledger still knows: `z9` (contact Ann's, its record gone) and `y8`
 * (another contact, its record naming Ann's address in another field).
 */
async function withLedger(
  memory: MemoryFs,
  store: Store,
  a: OutboxSubmission,
  c: OutboxSubmission,
) {
  const ledger = await openLedger(store);
  const sent = (id: string, messageId: number, first: boolean, contact: string) =>
    ledger.noteSent({ id, ts: a.ts, chat: CHAT, messageId, first, ip: "192.0.2.1", contact });
  await sent(a.id, 10, true, a.contact);
  await sent(a.id, 11, false, a.contact);
  await sent(c.id, 12, true, c.contact);
  await sent("z9", 13, true, "Ann@Example.org");
  await sent("y8", 14, true, "@ann");
  const y8 = JSON.stringify({
    ts: a.ts,
    id: "y8",
    contact: "@ann",
    fields: { email: "ann@example.org" },
    ip: "192.0.2.1",
  }) + "\n";
  memory.writeText(BACKUP, memory.readText(BACKUP) + y8);
  return ledger;
}

Deno.test("erase forgets the chat ledger entries of the submissions it found and of those the ledger matches itself; a dry run only counts; the service is told what to delete from the chat", async () => {
  const { memory, fs, outbox, a, b, c } = await files();
  await using store = await openTempStore();
  const ledger = await withLedger(memory, store, a, c);
  const told: ChatDeletion[][] = [];
  const seen: Array<[string, string[], boolean]> = [];
  const blocked = {
    name: "blocked",
    forget: (_match: unknown, ids: ReadonlySet<string>, dryRun: boolean) => {
      seen.push(["blocked", [...ids].sort(), dryRun]);
      return Promise.resolve(dryRun ? 2 : 1);
    },
  };
  const deps = {
    ...depsOf(fs, outbox).deps,
    ledger,
    onChatDeletions: (deletions: ChatDeletion[]) => void told.push(deletions),
    extra: [blocked, { name: "replies" }],
  };
  const rows = () => store.run("ledger.list", undefined);
  const ledgerRows = await rows();
  const dry = await erase(deps, match("contact", "ann@example.org"), true);
  assert.deepEqual(dry, {
    records: 4,
    pending: 1,
    chatEntries: 3,
    chatMessages: 4,
    extra: { blocked: 2 },
  });
  assert.deepEqual(await rows(), ledgerRows);
  assert.equal(ledger.get(a.id)?.id, a.id);
  assert.deepEqual(told, []);

  const done = await erase(deps, match("contact", "ann@example.org"), false);
  assert.deepEqual(done, { ...dry, extra: { blocked: 1 } });
  assert.deepEqual(told, [[{ chat: CHAT, messages: [10, 11, 13, 14] }]]);
  const ids = [a.id, b.id, "y8", "z9"].sort();
  assert.deepEqual(seen, [["blocked", ids, true], ["blocked", ids, false]]);
  assert.deepEqual([...ledger.entries()].map((entry) => entry.id), [c.id]);
  await store.checkpoint();
  const text = new TextDecoder("latin1").decode(await Deno.readFile(store.path));
  for (const trace of [a.id, "z9", "y8", "ann@example.org", "Ann@Example.org", "@ann"]) {
    assert.ok(!text.includes(trace), trace);
  }
  assert.deepEqual(ledger.pendingDeletions(), told[0]);
  await ledger.close();
  await outbox.close();
});

Deno.test("forget while the service runs with the chat ledger: the answer and the log carry the chat counts, and the bot is handed the messages to delete", async () => {
  const { memory, fs, outbox, a, c } = await files();
  await using store = await openTempStore();
  const ledger: Ledger = await withLedger(memory, store, a, c);
  const told: ChatDeletion[][] = [];
  const { deps, lines } = depsOf(fs, outbox);
  const service = {
    ...deps,
    store,
    ledger,
    onChatDeletions: (deletions: ChatDeletion[]) => void told.push(deletions),
  };
  let polls = 0;
  const sleep = async () => {
    if (++polls % 2 === 0) await serveForgetRequest(service);
  };
  const ask = (id: string, dryRun: boolean) =>
    askService(
      { store, sleep, now: () => new Date(NOW) },
      { nonce: id, match: match("id", id), dryRun },
    );
  assert.deepEqual(await ask(c.id, true), {
    nonce: c.id,
    ok: true,
    outcome: { records: 1, pending: 1, chatEntries: 1, chatMessages: 1 },
  });
  assert.deepEqual(told, []);
  assert.deepEqual(await ask(c.id, false), {
    nonce: c.id,
    ok: true,
    outcome: { records: 1, pending: 1, chatEntries: 1, chatMessages: 1 },
  });
  assert.deepEqual(told, [[{ chat: CHAT, messages: [12] }]]);
  assert.equal(ledger.byMessage(CHAT, 12), undefined);
  assert.deepEqual(lines.at(-1), {
    event: "forget",
    by: "id",
    dry_run: false,
    records: 1,
    pending: 1,
    chatEntries: 1,
    chatMessages: 1,
  });
  await ledger.close();
  await outbox.close();
});

Deno.test("a forget answer round-trips the chat counts and the other files' counts", () => {
  const answer = {
    nonce: "n",
    ok: true as const,
    outcome: { records: 1, pending: 0, chatEntries: 2, chatMessages: 3, extra: { blocked: 4 } },
  };
  assert.deepEqual(parseAnswer(encodeAnswer(answer)), answer);
});

Deno.test("forget while the service runs waits past the first 30 s while the service works on the request, and a request a stopped service was working on is taken again at its next start", async () => {
  await using temp = await openTempStore();
  const request = { nonce: "n2", match: match("id", "x1"), dryRun: false };
  let waited = 0;
  let taken: { seq: number } | undefined;
  const sleep = async (ms: number) => {
    waited += ms;
    // The service takes it at once, works 45 s (a large backup file), then answers.
    taken ??= await temp.run("requests.next", { kind: FORGET_REQUEST });
    if (waited >= 45_000 && taken !== undefined) {
      await temp.run("requests.answer", {
        seq: taken.seq,
        state: "done",
        answer: encodeAnswer({ nonce: "n2", ok: true, outcome: { records: 1, pending: 0 } }),
      });
    }
  };
  const answer = await askService({ store: temp, sleep, now: () => new Date(NOW) }, request);
  assert.deepEqual(answer, { nonce: "n2", ok: true, outcome: { records: 1, pending: 0 } });
  assert.ok(waited > FORGET_ANSWER_WAIT_MS);

  const seq = await temp.run("requests.add", {
    kind: FORGET_REQUEST,
    body: encodeRequest({ ...request, nonce: "n3" }),
    created: "2026-11-27T10:00:00Z",
  });
  assert.equal((await temp.run("requests.next", { kind: FORGET_REQUEST }))?.seq, seq);
  assert.equal(await temp.run("requests.next", { kind: FORGET_REQUEST }), undefined, "working");
  // The service stopped while working on it: its next start takes it again.
  assert.equal(await temp.run("requests.reset", undefined), 1);
  assert.equal((await temp.run("requests.next", { kind: FORGET_REQUEST }))?.seq, seq);
});

Deno.test("erase deletes a matching submission beyond the outbox's window outright: its text is gone from the database and no recovery writes it back", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const outbox = await open(memory, { window: 1 });
  const all = [];
  for (let i = 0; i < 3; i++) {
    // Never recorded: a crash before their records (the service stopped since).
    const s = { ...submission(`secret-${i}`), contact: i === 2 ? "gone@example.org" : "x@y.org" };
    all.push(s);
    await outbox.add(s);
  }
  memory.writeText(BACKUP, "");
  const deps = { ...depsOf(fs, outbox).deps, stopped: true, pendingOnDisk: () => outbox.waiting() };
  assert.deepEqual(await erase(deps, match("contact", "gone@example.org"), false), {
    records: 0,
    pending: 1,
  });
  assert.doesNotMatch(databaseText(memory), /secret-2/);
  await outbox.close();
  const reopened = await open(memory, { window: 1 });
  const waiting: string[] = [];
  for await (const s of reopened.waiting()) waiting.push(s.id);
  assert.deepEqual(waiting, [all[0]!.id, all[1]!.id], "nothing of it left to deliver or record");
  assert.equal(reopened.pendingCount, 2);
  await reopened.close();
});

Deno.test("erasing a case's first submission erases its follow-ups: their records (by id, contact or address) and the ones still waiting", async () => {
  for (const named of [["id", ""], ["contact", "ann@example.org"], ["address", "192.0.2.77"]]) {
    const memory = new MemoryFs();
    memory.mkdir("/data");
    const { fs } = rewriteFs(memory);
    const outbox = await open(memory);
    const first = {
      ...submission("the question"),
      id: "c0000f01",
      contact: "ann@example.org",
      ip: "192.0.2.77",
    };
    // Written back on the case page from elsewhere: no contact, another address.
    const sent = { ...submission("follow-up sent"), ip: "198.51.100.1", followUp: first.id };
    const waiting = { ...submission("follow-up waiting"), ip: "198.51.100.2", followUp: first.id };
    const other = { ...submission("someone else"), ip: "198.51.100.3" };
    for (const s of [sent, waiting, other]) await outbox.add(s);
    await outbox.done(sent.id, "2026-11-22T14:03:10Z", "delivered");
    for (const s of [sent, waiting, other]) await outbox.recorded(s.id, 200);
    const followRecord = (s: OutboxSubmission) =>
      recordOf(s).replace(`"id":"${s.id}"`, `"id":"${s.id}","follow_up":"${first.id}"`);
    memory.writeText(
      BACKUP,
      recordOf(first, true) + followRecord(sent) + recordOf(other) + followRecord(waiting),
    );
    const { deps } = depsOf(fs, outbox);
    const [by, value] = named as ["id" | "contact" | "address", string];
    const outcome = await erase(deps, match(by, by === "id" ? first.id : value), false);
    assert.equal(outcome.records, 3, by);
    assert.equal(outcome.pending, 1, by);
    assert.equal(memory.readText(BACKUP), recordOf(other), by);
    assert.deepEqual([...outbox.entries()].filter((e) => e.done === false).map((e) => e.id), [
      other.id,
    ]);
    assert.doesNotMatch(databaseText(memory), /follow-up (sent|waiting)/);
    await outbox.close();
  }
});

Deno.test("erase commits the answers noted in memory first: a delivered row whose note waited leaves the database too, and no recovery writes it back", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  // The note's own flush never comes by itself here: only the erasure's.
  const outbox = await open(memory, { later: () => () => {} });
  const sent = { ...submission("delivered, note waiting"), contact: "dora@example.org" };
  await outbox.add(sent);
  await outbox.done(sent.id, "2026-11-22T14:03:10Z", "delivered");
  void outbox.recordedSoon(sent.id, 200);
  assert.equal(outbox.get(sent.id), undefined, "finished in memory");
  memory.writeText(BACKUP, recordOf(sent, true));
  const { deps } = depsOf(fs, outbox);
  const outcome = await erase(deps, match("contact", "dora@example.org"), false);
  assert.equal(outcome.records, 1);
  assert.equal(memory.readText(BACKUP), "");
  assert.doesNotMatch(databaseText(memory), /delivered, note waiting|dora@example/);
  await outbox.close();
});

Deno.test("erasing a case by its contact also erases a follow-up a crash left delivered but unrecorded, so the next start writes no record of it", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const outbox = await open(memory);
  const first = { ...submission("the first"), id: "c0000f02", contact: "eve@example.org" };
  const crashed = { ...submission("follow-up cut short"), ip: "198.51.100.9", followUp: first.id };
  await outbox.add(crashed);
  await outbox.done(crashed.id, "2026-11-22T14:03:10Z", "delivered"); // its record never written
  memory.writeText(BACKUP, recordOf(first, true));
  const deps = { ...depsOf(fs, outbox).deps, stopped: true };
  await erase(deps, match("contact", "eve@example.org"), false);
  assert.equal(memory.readText(BACKUP), "");
  assert.doesNotMatch(databaseText(memory), /follow-up cut short/);
  await outbox.close();
  const reopened = await open(memory);
  assert.equal(reopened.get(crashed.id), undefined, "nothing left for recovery");
  await reopened.close();
});
