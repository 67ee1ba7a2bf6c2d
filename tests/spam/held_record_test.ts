/** The held record: the usual record, then `held` and the block, as one JSON line. */
import assert from "node:assert/strict";
import { formatRecord } from "../../lib/storage/backup.ts";
import { HELD_SPAM_ERROR, heldRecord } from "../../lib/spam/held_record.ts";

const RECORD = {
  ts: "2026-11-22T14:03:09Z",
  id: "k3x9q2ab",
  name: "Bot",
  contact: 'a"b\nc',
  message: "buy",
  ip: "192.0.2.1",
  messenger_ok: false,
  messenger_error: HELD_SPAM_ERROR,
  form: "shop",
  fields: { subject: "x" },
};

Deno.test("a held record is the usual record with held and its block last, one whole line", () => {
  const line = heldRecord(RECORD, { kind: "contact", value: 'a"b\nc' });
  assert.equal(line.indexOf("\n"), line.length - 1);
  const parsed = JSON.parse(line);
  assert.deepEqual(Object.keys(parsed), [
    ...Object.keys(JSON.parse(formatRecord(RECORD))),
    "held",
    "block",
  ]);
  assert.equal(parsed.held, "spam");
  assert.equal(parsed.block, 'contact:a"b\nc');
  assert.deepEqual(parsed.fields, { subject: "x" });
});
