import { call } from "../../lib/storage/store.ts";
/**
 * What the learned spam filter's score does on the POST path: the record carries `spam_score`
 * (absent when not scored), the notification of what looks like spam is marked, `SPAM_FILTER=hold`
 * keeps it out of the chat (recorded, held, counted), every accepted submission's lesson is kept
 * for a later press, and the sender's answer is the same whatever the score.
 */
import assert from "node:assert/strict";
import { createHandler, type HandlerDeps } from "../../lib/http/handler.ts";
import type { AcceptSpam } from "../../lib/http/accept.ts";
import { parseCidr } from "../../lib/common/ip.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { postBudget } from "../../lib/http/budgets.ts";
import { parseConfig } from "../../lib/config/config.ts";
import { notificationParts, spamMarkLine } from "../../lib/bot/notification.ts";
import { SPAM_THRESHOLD } from "../../lib/learn/classifier.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import { PEER, post, postForm } from "../support/handler_setup.ts";

const NOW = Date.parse("2026-11-22T14:03:09.500Z");

/** A handler whose filter scores every submission `score` (`undefined`: not scored). */
function scoredWorld(score: number | undefined, hold = false) {
  const state = {
    sent: [] as OutboxSubmission[],
    lines: [] as string[],
    logs: [] as LogFields[],
    counted: [] as string[],
    kept: [] as string[],
    held: [] as [string, number][],
  };
  const spam: AcceptSpam = {
    score: () => ({ score, features: [] }),
    lesson: (submission) => (
      state.kept.push(submission.id), call("meta.set", { key: "lesson", value: submission.id })
    ),
    keepHeld: (
      submission,
      spamScore,
    ) => (state.held.push([submission.id, spamScore]), Promise.resolve()),
    hold,
  };
  let ids = 0;
  const deps: HandlerDeps = {
    now: () => NOW,
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    limiter: new RateLimiter(postBudget(parseConfig({}).rateLimit)),
    queue: {
      submit: (submission) => (state.sent.push(submission), Promise.resolve({ ok: true })),
    },
    outbox: { add: () => Promise.resolve(), recordedSoon: () => Promise.resolve() },
    newId: () => `id${String(++ids).padStart(6, "0")}`,
    append: (line) => (state.lines.push(line), Promise.resolve()),
    log: (_level, fields) => void state.logs.push(fields),
    count: (what) => void state.counted.push(what),
    bodyDeadline: () => new AbortController().signal,
    spam,
  };
  return { state, handler: createHandler(deps) };
}

const SPAMMY = { name: "SEO", contact: "seo@example.com", message: "page one of google" };

/** Everything a sender can see of an answer: status, headers, body. */
async function seen(response: Response) {
  return { status: response.status, headers: [...response.headers], body: await response.text() };
}

Deno.test("the spam score never changes the sender's answer, in mark or hold, JSON or form post", async () => {
  for (const request of [() => post(SPAMMY), () => postForm({ ...SPAMMY, _redirect: "/t" })]) {
    const answers = [];
    for (const [score, hold] of [[undefined, false], [0.01, false], [0.99, false], [0.99, true]]) {
      const { handler } = scoredWorld(score as number | undefined, hold as boolean);
      answers.push(await seen(await handler(request(), PEER)));
    }
    for (const answer of answers.slice(1)) assert.deepEqual(answer, answers[0]);
  }
});

Deno.test("a scored submission's record carries spam_score; an unscored one's has none", async () => {
  const scored = scoredWorld(0.42);
  await (await scored.handler(post(SPAMMY), PEER)).body?.cancel();
  assert.equal(JSON.parse(scored.state.lines[0]!).spam_score, 0.42);
  assert.equal(scored.state.sent[0]!.spamScore, 0.42);
  const unscored = scoredWorld(undefined);
  await (await unscored.handler(post(SPAMMY), PEER)).body?.cancel();
  assert.ok(!("spam_score" in JSON.parse(unscored.state.lines[0]!)));
  // Each accepted submission's lesson is kept, by its id, for a press to teach.
  assert.deepEqual(scored.state.kept, ["id000001"]);
});

Deno.test("a notification at or above the threshold starts with the spam line saying how sure; below, it does not", () => {
  const base = { ...SPAMMY, ip: "198.51.100.1", ts: "2026-11-22T14:03:09Z", id: "k3x9q2ab" };
  const marked = notificationParts({ ...base, spamScore: 0.973 })[0]!;
  assert.equal(marked.split("\n")[0], spamMarkLine(0.973));
  assert.match(marked.split("\n")[0]!, /Looks like spam \(97 % sure\)/);
  assert.equal(marked.split("\n")[1], "New contact message #k3x9q2ab");
  assert.equal(spamMarkLine(0.9999), spamMarkLine(0.995), "never 100 % sure");
  for (const spamScore of [undefined, SPAM_THRESHOLD - 0.001]) {
    const plain = notificationParts({ ...base, spamScore })[0]!;
    assert.ok(plain.startsWith("New contact message #k3x9q2ab"), plain);
  }
});

Deno.test("SPAM_FILTER=hold keeps what looks like spam out of the chat: recorded held with its score, counted", async () => {
  const { state, handler } = scoredWorld(0.97, true);
  const response = await handler(post(SPAMMY), PEER);
  assert.equal(response.status, 200);
  assert.deepEqual(state.sent, []);
  const record = JSON.parse(state.lines[0]!);
  assert.equal(record.held, "spam");
  assert.equal(record.spam_score, 0.97);
  assert.equal(record.messenger_ok, false);
  assert.ok(!("block" in record));
  assert.deepEqual(state.counted, ["held_spam"]);
  assert.equal(state.logs.find((fields) => fields.result === "held_spam")?.block, "filter");
  // Kept for its release from the chat, with its lesson (what a release teaches).
  assert.deepEqual(state.held, [["id000001", 0.97]]);
  assert.deepEqual(state.kept, ["id000001"]);
  // Below the threshold it goes through as usual.
  const low = scoredWorld(SPAM_THRESHOLD - 0.01, true);
  await (await low.handler(post(SPAMMY), PEER)).body?.cancel();
  assert.equal(low.state.sent.length, 1);
  assert.deepEqual(low.state.counted, []);
});
