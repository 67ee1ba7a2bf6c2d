import assert from "node:assert/strict";
import { Waiter } from "../../lib/delivery/_waiter.ts";

Deno.test("a waiter is answered once: later answers are refused and its deadline is cancelled", () => {
  const answers: string[] = [];
  let cancelled = 0;
  const waiter = new Waiter<string>((value) => answers.push(value));
  waiter.onAnswer(() => cancelled++);
  assert.equal(waiter.waiting, true);
  assert.equal(waiter.answer("delivered"), true);
  assert.equal(waiter.waiting, false);
  assert.equal(waiter.answer("queued: contactd is stopping"), false);
  assert.deepEqual(answers, ["delivered"]);
  assert.equal(cancelled, 1);
  waiter.onAnswer(() => cancelled++); // nothing left to cancel
  assert.equal(cancelled, 1);
});
