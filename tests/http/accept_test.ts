/**
 * lib/http/accept.ts: what is written for a submission `contactd forget` erased while its sender
 * waited (nothing).
 *
 * @module
 */
import assert from "node:assert/strict";
import { accept } from "../../lib/http/accept.ts";
import { jsonAnswers } from "../../lib/http/answer.ts";
import { FORGOTTEN } from "../../lib/delivery/queue.ts";
import { ForgottenIds } from "../../lib/storage/erasure.ts";

Deno.test("accept writes no record, and notes nothing in the outbox, for a submission forgotten while its sender waited; it answers it as stored", async () => {
  const forgotten = new ForgottenIds(60_000, () => 0);
  const lines: string[] = [];
  const recorded: string[] = [];
  const deps = {
    outbox: {
      add: () => Promise.resolve(),
      recordedSoon: (id: string) => (recorded.push(id), Promise.resolve()),
    },
    // The queue's answer comes after forget ran (lib/delivery/queue.ts drops the job).
    queue: {
      submit: (submission: { id: string }) => (
        forgotten.add(submission.id), Promise.resolve({ ok: false as const, error: FORGOTTEN })
      ),
    },
    append: (line: string) => (lines.push(line), Promise.resolve()),
    log: () => {},
    onStorage: () => {},
    newId: () => "k3x9q2ab",
    forgotten,
  };
  const fields = {
    name: "Ann",
    contact: "ann@example.org",
    message: "erase me",
    ip: "203.0.113.7",
    ts: "2026-11-22T14:03:09Z",
  };
  const response = await accept(deps, jsonAnswers(), fields);
  assert.equal(response.status, 502);
  assert.equal((await response.json()).stored, true);
  assert.deepEqual(lines, []);
  assert.deepEqual(recorded, []);

  // Not forgotten: the record is written as before.
  const kept = await accept(
    { ...deps, newId: () => "m4n5p6q7", queue: undefined },
    jsonAnswers(),
    fields,
  );
  assert.equal(kept.status, 503);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /"id":"m4n5p6q7"/);
});
