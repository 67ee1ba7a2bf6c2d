import assert from "node:assert/strict";
import { isSubmissionId, newSubmissionId } from "../../lib/form/submission_id.ts";

Deno.test("newSubmissionId gives 8 unambiguous lower-case characters from 40 random bits", () => {
  assert.equal(newSubmissionId((bytes) => bytes.fill(0)), "00000000");
  assert.equal(newSubmissionId((bytes) => bytes.fill(255)), "zzzzzzzz");
  const ids = new Set(Array.from({ length: 10_000 }, () => newSubmissionId()));
  assert.equal(ids.size, 10_000);
  for (const id of ids) {
    assert.ok(isSubmissionId(id), id);
    assert.doesNotMatch(id, /[ilou]/);
  }
  assert.equal(isSubmissionId("k3x9q2ab"), true);
  assert.equal(isSubmissionId("K3X9Q2AB"), false);
  assert.equal(isSubmissionId("k3x9q2a"), false);
});
