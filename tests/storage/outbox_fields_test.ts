import assert from "node:assert/strict";
import {
  addLine,
  compactedLine,
  entryOf,
  newEntry,
  type OutboxSubmission,
  parseHead,
  parseSubmissionLine,
} from "../../lib/storage/outbox_lines.ts";

const SUBMISSION: OutboxSubmission = {
  id: "k3x9q2ab",
  ts: "2026-11-22T14:03:09Z",
  name: "Carl",
  contact: "carl@example.org",
  message: "Please call me",
  ip: "203.0.113.9",
  contactFrom: "email",
  fields: { subject: "Quote", phone: "+1 555" },
};

Deno.test("an outbox add line keeps the form's fields and the contact's source, after the sender's head", () => {
  const line = addLine(SUBMISSION);
  assert.deepEqual(parseSubmissionLine(line), SUBMISSION);
  assert.ok(line.indexOf('"contact_from":"email"') > line.indexOf(',"name":'));
  const head = parseHead(new TextEncoder().encode(line));
  assert.equal(head?.fields, undefined, "the head stops before the sender's fields");
  const entry = { ...newEntry(SUBMISSION, 0, line.length), attempts: 1, lastError: "timeout" };
  assert.deepEqual(parseSubmissionLine(compactedLine(SUBMISSION, entry)), SUBMISSION);
});

Deno.test("an outbox add line of the spec's fields alone has no fields or contact_from key", () => {
  const { contactFrom: _c, fields: _f, ...plain } = SUBMISSION;
  const line = addLine(plain);
  assert.equal(line.includes("fields"), false);
  assert.equal(line.includes("contact_from"), false);
  assert.deepEqual(parseSubmissionLine(line), plain);
});

Deno.test("an add line's fields that are not all strings are not read back as fields", () => {
  const line = addLine(SUBMISSION).replace('"phone":"+1 555"', '"phone":1');
  assert.equal(parseSubmissionLine(line)?.fields, undefined);
});

Deno.test("an outbox add line keeps its form in the head: the entry knows where it goes without its text", () => {
  const line = addLine({ ...SUBMISSION, form: "sales" });
  assert.ok(line.indexOf('"form":"sales"') < line.indexOf(',"name":'));
  const head = parseHead(new TextEncoder().encode(line))!;
  assert.equal(entryOf(head, 0, line.length)?.form, "sales");
  assert.equal(newEntry({ ...SUBMISSION, form: "sales" }, 0, 1).form, "sales");
  assert.equal(parseSubmissionLine(line)?.form, "sales");
  const entry = newEntry({ ...SUBMISSION, form: "sales" }, 0, line.length);
  assert.equal(
    parseSubmissionLine(compactedLine({ ...SUBMISSION, form: "sales" }, entry))?.form,
    "sales",
  );
  assert.equal(
    entryOf(parseHead(new TextEncoder().encode(addLine(SUBMISSION)))!, 0, 1)?.form,
    undefined,
  );
});
