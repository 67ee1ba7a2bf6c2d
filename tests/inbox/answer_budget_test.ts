import assert from "node:assert/strict";
import { ANSWER_LIMITS, AnswerBudget, PEOPLE_KEPT } from "../../lib/inbox/answer_budget.ts";

const GROUP = -100_500;
const ANNA = 41;
const MAX = 43;

Deno.test("the same refusal to the same person is answered once within repeatMs, then again", () => {
  const budget = new AnswerBudget();
  assert.equal(budget.take(GROUP, ANNA, "not_admin", 0), "answer");
  assert.equal(budget.take(GROUP, ANNA, "not_admin", 120_000), "repeat");
  assert.equal(budget.take(GROUP, ANNA, "not_admin", ANSWER_LIMITS.repeatMs - 1), "repeat");
  assert.equal(budget.take(GROUP, ANNA, "not_admin", ANSWER_LIMITS.repeatMs), "answer");
  // Another person, or another refusal, is another answer.
  assert.equal(budget.take(GROUP, MAX, "not_admin", 0), "answer");
  assert.equal(budget.take(GROUP, ANNA, "not_notification", 1), "answer");
});

Deno.test("a person gets at most person.count answers in any person.windowMs, then more after it", () => {
  const budget = new AnswerBudget();
  const { count, windowMs } = ANSWER_LIMITS.person;
  for (let i = 0; i < count; i++) assert.equal(budget.take(GROUP, ANNA, undefined, i), "answer");
  assert.equal(budget.take(GROUP, ANNA, undefined, 10_000), "person");
  assert.equal(budget.take(GROUP, ANNA, undefined, windowMs - 1), "person");
  assert.equal(budget.take(GROUP, ANNA, undefined, windowMs), "answer");
  // Not in another chat.
  assert.equal(budget.take(-100_600, ANNA, undefined, 10_000), "answer");
});

Deno.test("a chat gets at most chat.count answers in any chat.windowMs, whoever asks", () => {
  const budget = new AnswerBudget();
  const { count, windowMs } = ANSWER_LIMITS.chat;
  for (let i = 0; i < count; i++) {
    assert.equal(budget.take(GROUP, 1000 + i, undefined, i), "answer");
  }
  assert.equal(budget.take(GROUP, 2000, undefined, 100), "chat");
  assert.equal(budget.take(GROUP, 2000, undefined, windowMs), "answer");
});

Deno.test("a withheld answer spends nothing: a refusal withheld by the budget is given once the budget allows", () => {
  const budget = new AnswerBudget();
  const { count, windowMs } = ANSWER_LIMITS.person;
  for (let i = 0; i < count; i++) budget.take(GROUP, ANNA, undefined, 0);
  assert.equal(budget.take(GROUP, ANNA, "not_admin", 1), "person");
  assert.equal(budget.take(GROUP, ANNA, "not_admin", windowMs), "answer");
});

Deno.test("at most PEOPLE_KEPT people are remembered: the least recent is forgotten first", () => {
  const budget = new AnswerBudget();
  budget.take(GROUP, 0, "not_admin", 0);
  for (let i = 1; i <= PEOPLE_KEPT; i++) budget.take(-1, i, undefined, 0);
  // Person 0 was forgotten: the same refusal is answered again.
  assert.equal(budget.take(GROUP, 0, "not_admin", 1), "answer");
});
