/**
 * Erasure: what a request matches, and every trace removed (backup records, pending outbox
 * entries, their lines), by the service on request or by the command with the service stopped.
 */
import assert from "node:assert/strict";
import { formatRecord } from "../../lib/storage/backup.ts";
import {
  erase,
  type ErasureDeps,
  lineMatches,
  matches,
  parseForgetMatch,
} from "../../lib/storage/erasure.ts";
import type { RewriteFs } from "../../lib/storage/rewrite.ts";
import {
  askService,
  encodeRequest,
  FORGET_ANSWER_WAIT_MS,
  ForgetRequestPending,
  parseAnswer,
  parseRequest,
  serveForgetRequest,
} from "../../lib/storage/forget_request.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { MemoryFs } from "../support/memory_fs.ts";
import { open, PATH as OUTBOX, submission } from "./_outbox_setup.ts";
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
  assert.equal(matches(match("id", "k3x9q2ab"), { id: "K3X9Q2AB" }), false);
  // A record without an id (written before ids were kept) is never matched by id.
  assert.equal(matches(match("id", "k3x9q2ab"), {}), false);
  assert.ok("error" in parseForgetMatch("id", "a b"));
  assert.ok("error" in parseForgetMatch("contact", "  "));
  assert.equal(lineMatches(match("id", "x1"), "not json"), false);
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
  const c = { ...submission("from Bo"), contact: "bo@example.org" };
  for (const s of [a, b, c]) await outbox.add(s);
  await outbox.done(a.id, "2026-11-22T14:03:10Z", "delivered");
  for (const s of [a, b, c]) await outbox.recorded(s.id, s === a ? 200 : 502);
  const old = JSON.stringify({ ts: "2025-01-01T00:00:00Z", contact: "ann@example.org" }) + "\n";
  memory.writeText(BACKUP, old + recordOf(a, true) + recordOf(b) + recordOf(c));
  return { memory, fs, calls, outbox, a, b, c };
}

Deno.test("erase removes the matching records (old ones without id too) and gives up the matching pending entries; the outbox keeps no line of them", async () => {
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
  const outboxText = memory.readText(OUTBOX);
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
  assert.doesNotMatch(memory.readText(OUTBOX), /never answered/);
  await reopened.close();
});

Deno.test("forget requests and answers round-trip their files; a bad one is refused", () => {
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

Deno.test("forget while the service runs: the command's request is performed by the service, answered, and both files are gone; the log has counts only", async () => {
  const { memory, fs, calls, outbox, c } = await files();
  const { deps, lines } = depsOf(fs, outbox);
  const service = { ...deps, messagesFile: BACKUP };
  let polls = 0;
  // The command's waits are the service's polls.
  const sleep = async () => {
    if (++polls % 2 === 0) await serveForgetRequest(service);
  };
  const answer = await askService({ fs, messagesFile: BACKUP, sleep }, {
    nonce: "n-1",
    match: match("id", c.id),
    dryRun: false,
  });
  assert.deepEqual(answer, { nonce: "n-1", ok: true, outcome: { records: 1, pending: 1 } });
  assert.equal(memory.exists(`${BACKUP}.forget`), false);
  assert.equal(memory.exists(`${BACKUP}.forget.answer`), false);
  // Given the lock's owner (the service's user), so a forget run as root can be read.
  assert.ok(calls.includes(`chown ${BACKUP}.forget 1001:1002`), calls.join());
  assert.doesNotMatch(memory.readText(BACKUP), /from Bo/);
  assert.deepEqual(lines, [{ event: "forget", by: "id", dry_run: false, records: 1, pending: 1 }]);
  await outbox.close();
});

Deno.test("forget while the service runs: a request already waiting is refused, none is left behind when no answer comes, and a half-written one waits", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  const { fs } = rewriteFs(memory);
  const request = { nonce: "n", match: match("id", "x1"), dryRun: true };
  let waited = 0;
  const sleep = (ms: number) => (waited += ms, Promise.resolve());
  assert.equal(await askService({ fs, messagesFile: BACKUP, sleep }, request), undefined);
  assert.ok(waited >= FORGET_ANSWER_WAIT_MS);
  assert.equal(memory.exists(`${BACKUP}.forget`), false);

  memory.writeText(`${BACKUP}.forget`, '{"nonce":"other"');
  await assert.rejects(
    askService({ fs, messagesFile: BACKUP, sleep }, request),
    ForgetRequestPending,
  );
  // The service leaves a request still being written alone.
  const lines: LogFields[] = [];
  await serveForgetRequest({
    appender: { exclusive: (task) => task() },
    fs,
    path: BACKUP,
    messagesFile: BACKUP,
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
  assert.equal(memory.exists(`${BACKUP}.forget`), true);
  assert.deepEqual(lines, []);
});

Deno.test("a request file the service cannot read is logged once and taken away, not reported every poll", async () => {
  const memory = new MemoryFs();
  memory.mkdir("/data");
  memory.writeText(`${BACKUP}.forget`, '{"nonce":"n"}\n');
  const { fs } = rewriteFs(memory, (call) => {
    if (call.op === "open" && call.path === `${BACKUP}.forget` && memory.exists(call.path)) {
      throw new Deno.errors.PermissionDenied("another user's file");
    }
  });
  const outbox = await open(memory);
  const { deps, lines } = depsOf(fs, outbox);
  const service = { ...deps, messagesFile: BACKUP };
  await serveForgetRequest(service);
  await serveForgetRequest(service);
  assert.deepEqual(lines.map((line) => line.event), ["forget_request_unreadable"]);
  assert.equal(memory.exists(`${BACKUP}.forget`), false);
  await outbox.close();
});
