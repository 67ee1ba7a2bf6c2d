/**
 * The service's learned spam filter on the database: trained by presses it marks spam it has not
 * seen and leaves not-spam alone; a press and its undo move the model exactly; forget removes an
 * erased submission's contribution; retention drops lessons and ages tokens (dated by the day
 * their submission came); the size is bounded; another connection's training is taken in at the
 * next refresh.
 */
import assert from "node:assert/strict";
import { looksLikeSpam, MIN_EXAMPLES, SPAM_THRESHOLD } from "../../lib/learn/classifier.ts";
import {
  type FilterSubmission,
  MAX_MODEL_TOKENS,
  SpamFilter,
  type SpamFilterDeps,
} from "../../lib/spam/spam_filter.ts";
import type { Store, StoreCall } from "../../lib/storage/store.ts";
import { features } from "../../lib/learn/features.ts";
import { fakeClock } from "../support/fake_clock.ts";
import { failingStore, withTempStore } from "../support/temp_store.ts";
import { madeUp } from "../support/spam_texts.ts";

const TS = "2026-11-27T10:00:00Z";

function deps(store: Store): SpamFilterDeps & { clock: ReturnType<typeof fakeClock> } {
  const clock = fakeClock();
  return { store, now: clock.wallNow, log: () => {}, clock };
}

/** Keeps `submission`'s lesson (as its acceptance does) and presses `label` on it. */
async function press(
  filter: SpamFilter,
  store: Store,
  submission: FilterSubmission,
  label: "spam" | "ham",
): Promise<boolean> {
  const lesson = filter.lesson(submission);
  await store.transaction([lesson]);
  return await filter.teach(submission.id, label);
}

/** Trains `filter` with `spam` spam and `ham` not-spam presses from `seed`. */
async function train(filter: SpamFilter, store: Store, seed: number, spam: number, ham: number) {
  const next = madeUp(seed);
  for (let i = 0; i < Math.max(spam, ham); i++) {
    if (i < spam) {
      await press(filter, store, { id: `s${seed}-${i}`, ts: TS, ...next(true) }, "spam");
    }
    if (i < ham) await press(filter, store, { id: `h${seed}-${i}`, ts: TS, ...next(false) }, "ham");
  }
}

Deno.test("a filter trained by presses marks spam it has not seen and leaves not-spam alone", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    await train(filter, store, 1, MIN_EXAMPLES.spam, MIN_EXAMPLES.ham);
    const unseen = madeUp(99);
    for (let i = 0; i < 20; i++) {
      const spam = filter.score(unseen(true));
      const ham = filter.score(unseen(false));
      assert.ok(looksLikeSpam(spam), `unseen spam scored ${spam}`);
      assert.ok(!looksLikeSpam(ham) && ham !== undefined && ham < 0.5, `unseen ham ${ham}`);
    }
    // The same model, read again from the database (a restart), scores the same.
    const reopened = await SpamFilter.open(deps(store));
    const sample = unseen(true);
    assert.equal(reopened.score(sample), filter.score(sample));
  });
});

Deno.test("the filter scores nothing until it has learnt MIN_EXAMPLES of both kinds", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    await train(filter, store, 2, MIN_EXAMPLES.spam, MIN_EXAMPLES.ham - 1);
    assert.equal(filter.score(madeUp(3)(true)), undefined);
    assert.deepEqual(filter.counts(), {
      spam: MIN_EXAMPLES.spam,
      ham: MIN_EXAMPLES.ham - 1,
      ready: false,
    });
    await train(filter, store, 4, 0, 1);
    assert.equal(filter.counts().ready, true);
    assert.ok(filter.score(madeUp(3)(true))! >= SPAM_THRESHOLD);
  });
});

Deno.test("a press moves the model and its undo takes back exactly what it taught", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    await train(filter, store, 5, MIN_EXAMPLES.spam, MIN_EXAMPLES.ham);
    const before = await store.run("spam.model", undefined);
    const borderline = { id: "b1", ts: TS, name: "", contact: "", message: "zebra quokka bitcoin" };
    const scoreBefore = filter.score(borderline)!;
    assert.equal(await press(filter, store, borderline, "spam"), true);
    const taught = await store.run("spam.model", undefined);
    assert.deepEqual(taught.totals, { spam: before.totals.spam + 1, ham: before.totals.ham });
    assert.ok(filter.score(borderline)! > scoreBefore, "a Spam press makes it look more like spam");
    // A repeated press teaches nothing twice.
    assert.equal(await filter.teach("b1", "spam"), false);
    // Spam, then Not spam: the spam taken back, the not-spam taught.
    assert.equal(await filter.teach("b1", "ham"), true);
    const moved = await store.run("spam.model", undefined);
    assert.deepEqual(moved.totals, { spam: before.totals.spam, ham: before.totals.ham + 1 });
    assert.ok(filter.score(borderline)! < scoreBefore, "Not spam makes it look less like spam");
    // Undone: exactly the model before the press (the rows and the totals).
    assert.equal(await filter.teach("b1", null), true);
    const after = await store.run("spam.model", undefined);
    const sorted = (rows: typeof after.tokens) =>
      rows.map(([t, s, h]) => [t, s, h]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    assert.deepEqual(sorted(after.tokens), sorted(before.tokens));
    assert.deepEqual(after.totals, before.totals);
    assert.equal(filter.score(borderline), scoreBefore);
  });
});

Deno.test("a press on a submission whose lesson is not kept (past retention, erased) changes nothing", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    assert.equal(await filter.teach("never-kept", "spam"), false);
    assert.deepEqual(filter.counts(), { spam: 0, ham: 0, ready: false });
  });
});

Deno.test("a press teaches the submission's features: its tokens, its fields' words unprefixed and its message's cues; undo takes them all back", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    const offer = {
      id: "f1",
      ts: TS,
      name: "",
      contact: "",
      message: "CHEAP backlinks!! Only $5",
      fields: { subject: "Rank" },
    };
    await press(filter, store, offer, "spam");
    const taught = (await store.run("spam.model", undefined)).tokens.map(([t]) => t);
    for (const feature of ["cheap", "subject:rank", "rank", "~upper:CHEAP", "~!!", "~amount"]) {
      assert.ok(taught.includes(feature), feature);
    }
    assert.equal(await filter.teach("f1", null), true);
    assert.deepEqual((await store.run("spam.model", undefined)).tokens, []);
  });
});

Deno.test("forget removes an erased submission's contribution, and its lesson", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    await train(filter, store, 6, 3, 3);
    const before = await store.run("spam.model", undefined);
    const secret = {
      id: "e1",
      ts: TS,
      name: "Zacharias Quimby",
      contact: "zq@private-domain.example",
      message: "my unusual surname",
    };
    await press(filter, store, secret, "ham");
    const held = (await store.run("spam.model", undefined)).tokens.map(([t]) => t);
    assert.ok(held.includes("name:quimby"));
    assert.equal(await filter.forget(new Set(["e1"]), true), 1, "a dry run counts it");
    assert.ok((await store.run("spam.model", undefined)).tokens.some(([t]) => t === "name:quimby"));
    assert.equal(await filter.forget(new Set(["e1", "unknown"]), false), 1);
    const after = await store.run("spam.model", undefined);
    assert.ok(
      !after.tokens.some(([t]) => t === "name:quimby" || t === "contact:private-domain.example"),
    );
    assert.deepEqual(after.totals, before.totals);
    assert.equal(await store.run("spam.count", { submissions: ["e1"] }), 0);
    // Its press can no longer teach anything.
    assert.equal(await filter.teach("e1", "spam"), false);
  });
});

Deno.test("retention drops lessons received before the cutoff and tokens not taught since; the rows are bounded", async () => {
  await withTempStore(async ({ store }) => {
    const d = deps(store);
    const filter = await SpamFilter.open(d);
    const old = { id: "o1", ts: "2026-01-01T00:00:00Z", name: "", contact: "", message: "ancient" };
    await press(filter, store, old, "spam");
    await d.clock.advance(200 * 86_400_000);
    const recent = {
      id: "r1",
      ts: "2027-06-01T00:00:00Z",
      name: "",
      contact: "",
      message: "fresh",
    };
    await press(filter, store, recent, "ham");
    const cutoff = d.clock.wallNow() - 100 * 86_400_000;
    assert.ok((await filter.prune(cutoff)) >= 2);
    const rows = (await store.run("spam.model", undefined)).tokens.map(([t]) => t);
    assert.ok(!rows.includes("ancient") && rows.includes("fresh"));
    // The old lesson is gone (no longer undoable); the recent one stays.
    assert.equal(await store.run("spam.count", { submissions: ["o1", "r1"] }), 1);
    // Bounded: beyond maxTokens the rarest go.
    await store.run("spam.prune", { maxTokens: 1 });
    assert.equal((await store.run("spam.model", undefined)).tokens.length, 1);
  });
});

Deno.test("what another connection taught (contactd train) is scored with after the next refresh", async () => {
  await withTempStore(async ({ store, other }) => {
    const filter = await SpamFilter.open(deps(store));
    const command = other();
    const next = madeUp(7);
    const examples = Array.from({ length: MIN_EXAMPLES.spam + MIN_EXAMPLES.ham }, (_, i) => {
      const spam = i < MIN_EXAMPLES.spam;
      const fields = next(spam);
      return {
        submission: `t${i}`,
        ts: TS,
        label: spam ? "spam" as const : "ham" as const,
        tokens: features(fields),
      };
    });
    assert.equal(await command.run("spam.train", { examples, day: 20_000 }), examples.length);
    assert.equal(filter.score(next(true)), undefined);
    await filter.refresh();
    assert.ok(looksLikeSpam(filter.score(next(true))));
    assert.equal(filter.counts().ready, true);
  });
});

Deno.test("a held submission is listed without its text, released once (teaching not spam), then gone; forget and retention reach it", async () => {
  await withTempStore(async ({ store }) => {
    const filter = await SpamFilter.open(deps(store));
    const held = {
      id: "hd1",
      ts: "2026-11-27T10:00:00Z",
      name: "SEO",
      contact: "",
      message: "rank first",
      ip: "192.0.2.1",
      form: "shop",
      spamScore: 0.97,
    };
    await store.transaction([filter.lesson(held)]);
    await filter.hold(held, 0.97);
    // As the outbox commits a release: its row with the held row's removal.
    const send = (_s: unknown, also: readonly StoreCall[]) =>
      store.transaction([...also]).then(() => {});
    const listed = await filter.held(10);
    assert.deepEqual(listed, {
      count: 1,
      items: [{ id: "hd1", ts: held.ts, score: 0.97, form: "shop" }],
    });
    const released = await filter.release("hd1", send);
    assert.equal(released?.message, "rank first");
    assert.equal(released?.form, "shop");
    assert.equal(released?.spamScore, undefined, "sent without its mark");
    assert.deepEqual(filter.counts(), { spam: 0, ham: 1, ready: false }, "a release teaches ham");
    assert.equal(await filter.release("hd1", send), undefined);
    assert.equal((await filter.held(10)).count, 0);
    // Erasure and retention remove a held copy too.
    await filter.hold({ ...held, id: "hd2" }, 0.95);
    await filter.hold({ ...held, id: "hd3", ts: "2020-01-01T00:00:00Z" }, 0.95);
    assert.equal(await filter.forget(new Set(["hd2"]), true), 1);
    await filter.forget(new Set(["hd2"]), false);
    await filter.prune(Date.parse("2025-01-01T00:00:00Z"));
    assert.equal((await filter.held(10)).count, 0);
  });
});

Deno.test("a release whose teaching fails still hands the held submission over to be sent", async () => {
  await withTempStore(async ({ store }) => {
    const events: string[] = [];
    const broken = failingStore(store, (op) => op === "spam.teach");
    const filter = await SpamFilter.open({
      store: broken,
      now: () => Date.parse(TS),
      log: (_level, entry) => void events.push(String(entry.event)),
    });
    const held = {
      id: "hf1",
      ts: TS,
      name: "",
      contact: "",
      message: "kept all the same",
      ip: "192.0.2.1",
      spamScore: 0.95,
    };
    await store.transaction([filter.lesson(held)]);
    await filter.hold(held, 0.95);
    const released = await filter.release(
      "hf1",
      (_s, also) => store.transaction([...also]).then(() => {}),
    );
    assert.equal(released?.message, "kept all the same", "its held row is gone: it must be sent");
    assert.ok(events.includes("spam_teach_failed"));
  });
});

/** `count` distinct letter-only words, none shared with another call's `prefix`. */
function words(prefix: string, count: number): string[] {
  const letters = "abcdefghijklmnopqrstuvwxyz";
  return Array.from({ length: count }, (_, i) => {
    let word = prefix;
    for (let n = i, k = 0; k < 4; k++, n = Math.floor(n / 26)) word += letters[n % 26];
    return word;
  });
}

Deno.test("presses keep the model within MAX_MODEL_TOKENS between retention's prunes (none without RETENTION)", async () => {
  await withTempStore(async ({ store, other }) => {
    const filter = await SpamFilter.open(deps(store));
    // A model at its bound (as the prune at start leaves it), then presses bring new tokens.
    const full = words("q", MAX_MODEL_TOKENS);
    const examples = [];
    for (let i = 0; i < full.length; i += 1000) {
      examples.push({
        submission: `f${i}`,
        ts: TS,
        label: "ham" as const,
        tokens: full.slice(i, i + 1000),
      });
    }
    await other().run("spam.train", { examples, day: 20_000 });
    await filter.refresh();
    assert.equal(filter.counts().ham, examples.length);
    for (const [i, part] of [words("x", 600), words("y", 600)].entries()) {
      await press(filter, store, {
        id: `n${i}`,
        ts: TS,
        name: "",
        contact: "",
        message: part.join(" "),
      }, "spam");
    }
    const rows = (await store.run("spam.model", undefined)).tokens.length;
    assert.ok(rows <= MAX_MODEL_TOKENS, `${rows} token rows`);
  });
});

Deno.test("a press dates its tokens by the day the submission was received, so retention's cut reaches them with its record", async () => {
  await withTempStore(async ({ store }) => {
    const d = deps(store);
    const filter = await SpamFilter.open(d);
    const received = new Date(d.clock.wallNow()).toISOString();
    const late = { id: "l1", ts: received, name: "", contact: "", message: "latecomer" };
    await store.transaction([filter.lesson(late)]);
    // Pressed 80 days after it came; RETENTION=90d runs 100 days after it came.
    await d.clock.advance(80 * 86_400_000);
    assert.equal(await filter.teach("l1", "spam"), true);
    await d.clock.advance(20 * 86_400_000);
    await filter.prune(d.clock.wallNow() - 90 * 86_400_000);
    const rows = (await store.run("spam.model", undefined)).tokens.map(([t]) => t);
    assert.ok(!rows.includes("latecomer"), "not kept past RETENTION of its submission");
  });
});
