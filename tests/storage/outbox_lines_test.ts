import assert from "node:assert/strict";
import {
  applyOp,
  encodeOp,
  newEntry,
  type OutboxChange,
  parseChange,
  parseHead,
} from "../../lib/storage/outbox_lines.ts";

Deno.test("encodeOp writes each operation with its keys in a fixed order, an add line's state before the sender's fields", () => {
  assert.equal(
    encodeOp({ op: "recorded", id: "a", status: null }),
    '{"op":"recorded","id":"a","status":null}\n',
  );
  assert.equal(
    encodeOp({ op: "failed", id: "a", ts: "t", error: "timeout" }),
    '{"op":"failed","id":"a","ts":"t","error":"timeout"}\n',
  );
  assert.equal(
    encodeOp({ op: "done", id: "a", ts: "t", result: "given_up" }),
    '{"op":"done","id":"a","ts":"t","result":"given_up"}\n',
  );
  const add = encodeOp({
    op: "add",
    id: "a",
    ts: "t",
    name: "N",
    contact: "C",
    message: '"name":',
    ip: "203.0.113.7",
    status: 502,
    attempts: 1,
    first_error: "e",
    last_error: "e",
    last_ts: "t",
  });
  assert.ok(add.indexOf('"status"') < add.indexOf('"name"'));
  assert.deepEqual(parseHead(new TextEncoder().encode(add.trimEnd())), {
    op: "add",
    id: "a",
    ts: "t",
    status: 502,
    attempts: 1,
    first_error: "e",
    last_error: "e",
    last_ts: "t",
  });
});

Deno.test("every change read back from its line is the change written, and lines of the wrong shape are damage", () => {
  const changes: OutboxChange[] = [
    { op: "recorded", id: "a", status: 200 },
    { op: "recorded", id: "a", status: null },
    { op: "failed", id: "a", ts: "t", error: "timeout" },
    { op: "done", id: "a", ts: "t", result: "delivered" },
  ];
  for (const change of changes) assert.deepEqual(parseChange(JSON.parse(encodeOp(change))), change);
  for (
    const bad of [
      { op: "recorded", id: "a", status: "200" },
      { op: "failed", id: "a", ts: "t" },
      { op: "done", id: "a", ts: "t", result: "maybe" },
      { op: "frobnicate", id: "a" },
      { op: "add", id: "a" },
    ]
  ) assert.equal(parseChange(bad), undefined, JSON.stringify(bad));
});

Deno.test("applyOp folds a failed attempt, keeps the first error, and a second done changes nothing", () => {
  const entry = newEntry({ id: "a", ts: "t" }, 0, 10);
  applyOp(entry, { op: "failed", id: "a", ts: "t1", error: "timeout" });
  applyOp(entry, { op: "failed", id: "a", ts: "t2", error: "502" });
  assert.equal(entry.attempts, 2);
  assert.equal(entry.firstError, "timeout");
  assert.equal(entry.lastError, "502");
  assert.equal(entry.lastTs, "t2");
  applyOp(entry, { op: "done", id: "a", ts: "t3", result: "given_up" });
  applyOp(entry, { op: "done", id: "a", ts: "t4", result: "delivered" });
  assert.equal(entry.done, "given_up");
});
