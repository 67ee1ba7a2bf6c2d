import assert from "node:assert/strict";
import { MAX_UNANSWERED, unanswered, waitsForReply } from "../../lib/cases/waiting.ts";

const sender = { author: "sender" } as const;
const owner = { author: "owner" } as const;

Deno.test("the sender's messages after the owner's last reply count, the first one included", () => {
  assert.equal(unanswered([sender]), 1);
  assert.equal(unanswered([sender, sender, owner]), 0);
  assert.equal(unanswered([sender, owner, sender, sender]), 2);
  assert.equal(unanswered([]), 0);
});

Deno.test("a case waits for the owner's reply once the sender wrote MAX_UNANSWERED in a row; a reply opens it again", () => {
  const many = Array.from({ length: MAX_UNANSWERED }, () => sender);
  assert.equal(waitsForReply(many.slice(1)), false);
  assert.equal(waitsForReply(many), true);
  assert.equal(waitsForReply([...many, owner]), false);
  assert.equal(waitsForReply([...many, owner, sender]), false);
});
