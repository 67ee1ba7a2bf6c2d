/**
 * A submission the learned spam filter held (`SPAM_FILTER=hold`) gets a real case page, opened in
 * the same transaction as its held row: its `case_url` shows the sender's message as any other's
 * does (a decoy's 404 would reveal the hold); when that transaction fails, neither is kept and a
 * decoy is answered. A follow-up written on a case page and held is posted to that page alike.
 */
import assert from "node:assert/strict";
import { createHandler, type HandlerDeps } from "../../lib/http/handler.ts";
import type { AcceptSpam } from "../../lib/http/accept.ts";
import { parseCidr } from "../../lib/common/ip.ts";
import { RateLimiter } from "../../lib/net/rate_limit.ts";
import { postBudget } from "../../lib/http/budgets.ts";
import { parseConfig } from "../../lib/config/config.ts";
import { CaseBook } from "../../lib/cases/case_book.ts";
import { SpamFilter } from "../../lib/spam/spam_filter.ts";
import type { Store } from "../../lib/storage/store.ts";
import { failingStore, withTempStore } from "../support/temp_store.ts";
import { PEER, post } from "../support/handler_setup.ts";

const NOW = Date.parse("2026-11-22T14:03:09.500Z");
const SPAMMY = { name: "SEO", contact: "seo@example.com", message: "page one of google" };

async function heldWorld(store: Store) {
  const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
  const scores = { next: 0.97 };
  const spam: AcceptSpam = {
    score: () => ({ score: scores.next, features: [] }),
    lesson: (submission) => filter.lesson(submission),
    keepHeld: (submission, spamScore, also) => filter.hold(submission, spamScore, also),
    hold: true,
  };
  const sent: string[] = [];
  const ids = ["heldcase1", "heldcase2"];
  const deps: HandlerDeps = {
    now: () => NOW,
    trustedProxies: [parseCidr("127.0.0.1/8")!],
    limiter: new RateLimiter(postBudget(parseConfig({}).rateLimit)),
    queue: { submit: (submission) => (sent.push(submission.id), Promise.resolve({ ok: true })) },
    // What goes with an outbox row (its case) is committed; the row itself is not kept here.
    outbox: {
      add: async (_submission, also = []) => void await store.transaction(also),
      recordedSoon: () => Promise.resolve(),
    },
    newId: () => ids.shift() ?? "heldcase9",
    append: () => Promise.resolve(),
    log: () => {},
    bodyDeadline: () => new AbortController().signal,
    spam,
    cases: new CaseBook(store),
  };
  return { filter, sent, scores, handler: createHandler(deps) };
}

Deno.test("a submission held as spam gets a real case page, opened with its held row", async () => {
  await withTempStore(async ({ store }) => {
    const { filter, sent, handler } = await heldWorld(store);
    const response = await handler(post(SPAMMY), PEER);
    assert.equal(response.status, 200);
    const { case_url } = await response.json();
    assert.deepEqual(sent, [], "held, not sent");
    assert.equal((await filter.held(10)).count, 1);
    const found = await new CaseBook(store).find(case_url);
    assert.equal(found?.id, "heldcase1", "its page is there, as any other's");
    assert.equal(found?.posts[0]?.text, SPAMMY.message);
  });
});

Deno.test("a held submission whose held row cannot be written opens no case either, and is answered a decoy", async () => {
  await withTempStore(async ({ store }) => {
    const broken = failingStore(store, (op) => op === "spam.hold");
    const { filter, handler } = await heldWorld(broken);
    const response = await handler(post(SPAMMY), PEER);
    assert.equal(response.status, 200);
    const { case_url } = await response.json();
    assert.match(case_url, /^\/api\/case\//);
    const found = await new CaseBook(store).find(case_url);
    assert.ok(found?.decoy !== undefined && found.id === "", "a decoy's page, of no case");
    assert.equal(await new CaseBook(store).has("heldcase1"), false, "nothing half-kept");
    assert.equal((await filter.held(10)).count, 0);
  });
});

Deno.test("a follow-up held as spam is posted to its case page with its held row, as any follow-up is", async () => {
  await withTempStore(async ({ store }) => {
    const { filter, sent, scores, handler } = await heldWorld(store);
    scores.next = 0.1;
    const first = await handler(post(SPAMMY), PEER);
    const { case_url } = await first.json();
    scores.next = 0.97;
    const followUp = await handler(
      new Request(`http://localhost${case_url}`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-forwarded-for": "198.51.100.1",
        },
        body: new URLSearchParams({ message: "buy links now" }).toString(),
      }),
      PEER,
    );
    assert.equal(followUp.headers.get("location"), `${case_url}?sent=1`);
    assert.deepEqual(sent, ["heldcase1"], "the follow-up is held, not sent");
    assert.equal((await filter.held(10)).items[0]?.id, "heldcase2");
    const page = await new CaseBook(store).find(case_url);
    assert.deepEqual(page?.posts.map((p) => p.text), [SPAMMY.message, "buy links now"]);
  });
});
