/**
 * The learned spam filter as the service assembles it (lib/service/spam.ts): opened with
 * `SPAM_FILTER=off` too, so that retention and erasure reach what an earlier on-period kept, but
 * then given to neither the form nor the chat; a release commits the held row's removal with the
 * outbox row (a crash between them cannot drop the submission); `/held` lists the newest first and
 * a release finds any held row by its id.
 */
import assert from "node:assert/strict";
import { parseConfig } from "../../lib/config/config.ts";
import { heldInChat, openSpamFilter, scoringFilter } from "../../lib/service/spam.ts";
import { SpamFilter } from "../../lib/spam/spam_filter.ts";
import type { OutboxSubmission } from "../../lib/storage/outbox.ts";
import type { Store, StoreCall } from "../../lib/storage/store.ts";
import { withTempStore } from "../support/temp_store.ts";

const NOW = Date.parse("2026-11-27T10:00:00Z");

function held(id: string, ts: string, form?: string): OutboxSubmission & { spamScore: number } {
  return {
    id,
    ts,
    name: "SEO",
    contact: "",
    message: `rank first ${id}`,
    ip: "192.0.2.1",
    spamScore: 0.97,
    ...(form === undefined ? {} : { form }),
  };
}

Deno.test("with SPAM_FILTER=off the filter still opens and ages what an earlier on-period kept, but the form and the chat get none", async () => {
  await withTempStore(async ({ store }) => {
    // Kept while the filter was on: a lesson and a held submission, both past RETENTION now.
    const earlier = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
    const old = held("old1", "2026-01-01T00:00:00Z");
    await store.transaction([earlier.lesson(old)]);
    await earlier.teach("old1", "spam");
    await earlier.hold(old, 0.97);
    await earlier.close();
    const config = parseConfig({ SPAM_FILTER: "off", RETENTION: "90d" });
    const stack = new AsyncDisposableStack();
    const filter = await openSpamFilter(
      config,
      { log: () => {}, wallNow: () => NOW },
      stack,
      store,
    );
    assert.ok(filter instanceof SpamFilter, "opened with SPAM_FILTER=off");
    assert.equal(await store.run("spam.count", { submissions: ["old1"] }), 0, "aged at open");
    // And erasure reaches what is kept (a running service's forget).
    await store.transaction([filter.lesson(held("new1", "2026-11-27T09:00:00Z"))]);
    await filter.hold(held("new1", "2026-11-27T09:00:00Z"), 0.97);
    assert.equal(await filter.forget(new Set(["new1"]), false), 2);
    assert.equal(scoringFilter(config, filter), undefined, "nothing is scored, kept or taught");
    assert.equal(scoringFilter(parseConfig({ SPAM_FILTER: "mark" }), filter), filter);
    await stack.disposeAsync();
  });
});

/** An outbox over `store` that commits its row (a stand-in) with `also`, as lib/storage/outbox.ts does. */
function outboxOn(store: Store, fails = false) {
  const added: string[] = [];
  return {
    added,
    add: async (submission: OutboxSubmission, also: readonly StoreCall[] = []) => {
      if (fails) throw new Error("disk full");
      await store.transaction([...also]);
      added.push(submission.id);
    },
    recordedSoon: () => Promise.resolve(),
  };
}

Deno.test("a release removes the held row only in the outbox's own transaction: when the outbox add fails it stays held", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
    await filter.hold(held("r1", "2026-11-27T09:00:00Z"), 0.97);
    const calls: (readonly StoreCall[])[] = [];
    const broken = outboxOn(store, true);
    const failing = heldInChat(
      filter,
      () => 1,
      {
        ...broken,
        add: (submission, also = []) => (calls.push(also), broken.add(submission, also)),
      },
      { submit: () => Promise.resolve({ ok: true }) },
      () => {},
    );
    await assert.rejects(failing.release("r1", 1));
    assert.deepEqual(calls.map((also) => also.map((c) => c.op)), [["spam.unhold"]]);
    assert.equal((await filter.held(10)).count, 1, "still held: the press can be repeated");
    const working = outboxOn(store);
    const sent: string[] = [];
    const chat = heldInChat(filter, () => 1, working, {
      submit: (submission) => (sent.push(submission.id), Promise.resolve({ ok: true })),
    }, () => {});
    assert.equal(await chat.release("r1", 1), true);
    assert.deepEqual(working.added, ["r1"]);
    assert.deepEqual(sent, ["r1"]);
    assert.equal((await filter.held(10)).count, 0);
    assert.equal(await chat.release("r1", 1), false, "released once");
  });
});

Deno.test("/held lists the newest held first, and a release finds a held row beyond any list by its id", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
    for (let i = 0; i < 30; i++) {
      const minute = String(i).padStart(2, "0");
      await filter.hold(held(`h${minute}`, `2026-11-27T08:${minute}:00Z`), 0.97);
    }
    // Another chat's form: not listed, not releasable here.
    await filter.hold(held("shop1", "2026-11-27T09:30:00Z", "shop"), 0.97);
    const chatOf = (form: string | undefined) => form === "shop" ? 2 : 1;
    const chat = heldInChat(filter, chatOf, outboxOn(store), {
      submit: () => Promise.resolve({ ok: true }),
    }, () => {});
    const listed = await chat.held(1);
    assert.equal(listed.items[0]?.id, "h29", "the newest first");
    assert.equal(listed.count, 30);
    assert.equal(await chat.release("shop1", 1), false, "another chat's");
    assert.equal(await chat.release("h00", 1), true, "the oldest, never listed, released by id");
  });
});
