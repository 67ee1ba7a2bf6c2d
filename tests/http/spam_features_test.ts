/**
 * A submission's spam features are computed once: the filter's score hands them on
 * (lib/spam/spam_filter.ts `scored`), and the lesson kept with its row (its outbox row, or a
 * held submission's) is exactly those, so a press teaches what the submission was scored by.
 */
import assert from "node:assert/strict";
import { createHandler } from "../../lib/http/handler.ts";
import type { AcceptSpam } from "../../lib/http/accept.ts";
import { features } from "../../lib/learn/features.ts";
import { SpamFilter } from "../../lib/spam/spam_filter.ts";
import { storeHandlerDeps } from "../support/store_handler.ts";
import { withTempStore } from "../support/temp_store.ts";
import { PEER, post } from "../support/handler_setup.ts";
import { madeUp } from "../support/spam_texts.ts";

const NOW = Date.parse("2026-11-22T14:03:09.500Z");

Deno.test("the filter's scored gives the score and the features it scored by, also before it scores", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
    const sample = madeUp(21)(true);
    assert.deepEqual(filter.scored(sample), { score: undefined, features: features(sample) });
  });
});

Deno.test("an accepted or held submission's lesson keeps exactly the features it was scored by", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
    // Scores that tell their features apart from any computed again from the text.
    const scores = [
      { score: 0.1, features: ["~scored:accepted"] },
      { score: 0.97, features: ["~scored:held"] },
    ];
    const spam: AcceptSpam = {
      score: () => scores.shift()!,
      lesson: (submission, found) => filter.lesson(submission, found),
      keepHeld: (submission, spamScore, also) => filter.hold(submission, spamScore, also),
      hold: true,
    };
    const ids = ["scored1", "scored2"];
    const deps = storeHandlerDeps(store, NOW, {
      newId: () => ids.shift()!,
      spam,
    });
    const handler = createHandler(deps);
    const message = { name: "Ann", contact: "ann@example.org", message: "hello there" };
    for (let i = 0; i < 2; i++) await (await handler(post(message), PEER)).body?.cancel();
    assert.equal((await filter.held(10)).items[0]?.id, "scored2");

    // What a press teaches is the lesson kept: the model then holds exactly those tokens.
    assert.equal(await filter.teach("scored1", "ham"), true);
    assert.equal(await filter.teach("scored2", "spam"), true);
    const model = await store.run("spam.model", undefined);
    assert.deepEqual(model.tokens.map(([token, s, h]) => [token, s, h]).sort(), [
      ["~scored:accepted", 0, 1],
      ["~scored:held", 1, 0],
    ]);
  });
});
