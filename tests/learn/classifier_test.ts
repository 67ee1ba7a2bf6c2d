/**
 * The classifier's rules: a trained model tells spam it has not seen from mail it has not seen,
 * presses and their undo move the counts exactly, counts never go negative, pruning bounds the
 * model, `ready` waits for enough examples, scores stay in [0, 1].
 */
import assert from "node:assert/strict";
import {
  dayOf,
  emptyModel,
  learn,
  MIN_EXAMPLES,
  type Model,
  prune,
  ready,
  score,
  SCORE_OPTIONS,
  SPAM_THRESHOLD,
  tokenProbability,
  type TokenRow,
} from "../../lib/learn/classifier.ts";
import { tokens } from "../../lib/learn/tokens.ts";
import { mulberry32 } from "../support/random.ts";

const DAY = 20_400;

const SPAM_WORDS = (
  "seo ranking guaranteed first page google backlinks cheap offer discount crypto bitcoin " +
  "investment profit casino bonus free click now limited deal traffic boost marketing agency " +
  "виагра 赚钱 ถูก"
).split(" ");
const HAM_WORDS = (
  "hello thanks your article question about the concert tickets order invoice meeting " +
  "tomorrow could you please send recipe garden photos weekend family project repository " +
  "спасибо 谢谢 ขอบคุณ"
).split(" ");
const COMMON = "the a and to of you we is for with this that".split(" ");

/** A submission of `length` words drawn from `words` and common ones. */
function text(random: () => number, words: readonly string[], length: number): string {
  return Array.from({ length }, () => {
    const pool = random() < 0.4 ? COMMON : words;
    return pool[Math.floor(random() * pool.length)]!;
  }).join(" ");
}

function submission(random: () => number, spam: boolean) {
  return tokens({
    message: text(random, spam ? SPAM_WORDS : HAM_WORDS, 12 + Math.floor(random() * 30)),
    name: spam ? "SEO Expert" : "Ann",
    contact: spam ? "promo@seo-boost.example" : "ann@example.org",
  });
}

function trainedModel(seed: number, each: number): Model {
  const random = mulberry32(seed);
  const model = emptyModel();
  for (let i = 0; i < each; i++) {
    learn(model, submission(random, true), "spam", 1, DAY);
    learn(model, submission(random, false), "ham", 1, DAY);
  }
  return model;
}

/** The model as plain values, for exact comparison. */
function snapshot(model: Model) {
  const rows = [...model.tokens.entries()].sort(([a], [b]) => a < b ? -1 : 1);
  return { rows, totals: { ...model.totals } };
}

Deno.test("a trained model marks spam it has not seen and leaves not-spam alone", () => {
  const model = trainedModel(1, 20);
  const random = mulberry32(2);
  for (let i = 0; i < 50; i++) {
    const spam = score(model, submission(random, true));
    const ham = score(model, submission(random, false));
    assert.ok(spam >= SPAM_THRESHOLD, `unseen spam scored ${spam}`);
    assert.ok(ham < 0.1, `unseen not-spam scored ${ham}`);
  }
});

Deno.test("a short message of words learnt is scored by them: spam's high, not-spam's low", () => {
  const model = trainedModel(3, 20);
  assert.ok(
    score(model, tokens({ message: "guaranteed first page ranking, cheap backlinks" })) >=
      SPAM_THRESHOLD,
  );
  assert.ok(
    score(model, tokens({ message: "thanks for the concert photos, see you tomorrow" })) < 0.1,
  );
});

Deno.test("learning then unlearning an example on the same day restores the exact model", () => {
  const model = trainedModel(4, 10);
  const before = snapshot(model);
  const example = tokens({ message: "brand new words: seo zebra quokka, thanks", name: "Zed" });
  learn(model, example, "spam", 1, DAY);
  assert.notDeepEqual(snapshot(model), before);
  learn(model, example, "spam", -1, DAY);
  assert.deepEqual(snapshot(model), before);
});

Deno.test("an undo on a later day restores counts and totals; tokens only it taught are gone", () => {
  const model = trainedModel(5, 10);
  const before = snapshot(model);
  const example = tokens({ message: "seo quokka" });
  learn(model, example, "ham", 1, DAY + 3);
  assert.equal(model.tokens.get("quokka")?.seen, DAY + 3);
  assert.equal(model.tokens.get("seo")?.seen, DAY + 3);
  learn(model, example, "ham", -1, DAY + 4);
  assert.equal(model.tokens.get("quokka"), undefined);
  const counts = (s: ReturnType<typeof snapshot>) =>
    s.rows.map(([token, row]) => [token, row.spam, row.ham]);
  assert.deepEqual(counts(snapshot(model)), counts(before));
  assert.deepEqual(model.totals, before.totals);
});

Deno.test("unlearning what was never learnt leaves no negative count", () => {
  const model = emptyModel();
  learn(model, ["a", "b"], "spam", 1, DAY);
  learn(model, ["a", "c"], "ham", -1, DAY);
  learn(model, ["a", "b"], "spam", -1, DAY);
  learn(model, ["a", "b"], "spam", -1, DAY);
  assert.deepEqual(model.totals, { spam: 0, ham: 0 });
  assert.equal(model.tokens.size, 0);
});

Deno.test("a token counts once per example, however often it appears", () => {
  const model = emptyModel();
  learn(model, ["win", "win", "win", "prize"], "spam", 1, DAY);
  assert.deepEqual(model.tokens.get("win"), { spam: 1, ham: 0, seen: DAY });
  assert.deepEqual(model.totals, { spam: 1, ham: 0 });
});

Deno.test("prune removes rows not taught since the day given, then the rarest, oldest first", () => {
  const model = emptyModel();
  const rows: Array<[string, TokenRow]> = [
    ["ancient", { spam: 50, ham: 0, seen: 10 }],
    ["rare-old", { spam: 1, ham: 0, seen: 100 }],
    ["rare-new", { spam: 0, ham: 1, seen: 200 }],
    ["common", { spam: 5, ham: 5, seen: 100 }],
    ["frequent", { spam: 3, ham: 0, seen: 150 }],
  ];
  for (const [token, row] of rows) model.tokens.set(token, row);
  const removed = prune(model, { maxTokens: 2, olderThanDay: 50 });
  assert.equal(removed, 3);
  assert.deepEqual([...model.tokens.entries()].map(([token]) => token).sort(), [
    "common",
    "frequent",
  ]);
});

Deno.test("prune bounds a large model to maxTokens and keeps the totals", () => {
  const model = trainedModel(6, 40);
  const random = mulberry32(7);
  for (let i = 0; i < 3000; i++) learn(model, [`noise${i}`, `x${random()}`], "ham", 1, DAY + 1);
  const totals = { ...model.totals };
  assert.ok(model.tokens.size > 6000);
  prune(model, { maxTokens: 500, olderThanDay: 0 });
  assert.equal(model.tokens.size, 500);
  assert.deepEqual(model.totals, totals);
  // The rows learnt from many examples survive the single-use noise.
  assert.ok(model.tokens.get("seo") !== undefined && model.tokens.get("thanks") !== undefined);
});

Deno.test("the model is ready once it has the minimum examples of both kinds", () => {
  const model = emptyModel();
  for (let i = 0; i < MIN_EXAMPLES.spam; i++) learn(model, [`s${i}`], "spam", 1, DAY);
  for (let i = 0; i < MIN_EXAMPLES.ham - 1; i++) learn(model, [`h${i}`], "ham", 1, DAY);
  assert.equal(ready(model), false);
  learn(model, ["h"], "ham", 1, DAY);
  assert.equal(ready(model), true);
  learn(model, ["s0"], "spam", -1, DAY);
  assert.equal(ready(model), false);
});

Deno.test("scores stay within [0, 1], and are 0.5 when no token says anything", () => {
  assert.equal(score(emptyModel(), ["anything", "at", "all"]), 0.5);
  assert.equal(score(trainedModel(8, 10), []), 0.5);
  const model = trainedModel(9, 30);
  const random = mulberry32(10);
  const vocabulary = [...SPAM_WORDS, ...HAM_WORDS, ...COMMON, "unknown"];
  for (let i = 0; i < 500; i++) {
    const picked = Array.from(
      { length: Math.floor(random() * 400) },
      () => vocabulary[Math.floor(random() * vocabulary.length)]!,
    );
    const value = score(model, picked);
    assert.ok(value >= 0 && value <= 1 && !Number.isNaN(value), `${value}`);
  }
});

Deno.test("a token never seen has probability x; evidence moves it by Robinson's s", () => {
  const totals = { spam: 10, ham: 10 };
  assert.equal(tokenProbability(undefined, totals), SCORE_OPTIONS.x);
  const once = tokenProbability({ spam: 1, ham: 0, seen: DAY }, totals);
  const often = tokenProbability({ spam: 9, ham: 0, seen: DAY }, totals);
  assert.ok(once > 0.5 && once < often && often < 1, `${once} ${often}`);
  // Ratios, not raw counts: 1 in 1 spam example outweighs 5 in 100 not-spam.
  assert.ok(tokenProbability({ spam: 1, ham: 5, seen: DAY }, { spam: 1, ham: 100 }) > 0.5);
});

Deno.test("a day is a whole UTC day since the epoch: the same from midnight to midnight", () => {
  const midnight = Date.parse("2026-11-27T00:00:00Z");
  assert.equal(dayOf(midnight), 20_784);
  assert.equal(dayOf(midnight + 86_399_999), 20_784);
  assert.equal(dayOf(midnight + 86_400_000), 20_785);
});
