/**
 * The files of a post whose row was not committed (lib/http/accept.ts `unkept`, lib/http/contact.ts
 * `releaseFiles`): a follow-up its case refused as it committed (the cap's race), a held one
 * alike, an outbox write that failed, a held row that could not be written. Nothing lists their
 * files, so none stays in the spool (SECURITY.md: a refused post leaves no file behind), under
 * their names as received or as kept.
 *
 * @module
 */
import assert from "node:assert/strict";
import { createHandler } from "../../lib/http/handler.ts";
import type { AcceptSpam } from "../../lib/http/accept.ts";
import { CaseBook } from "../../lib/cases/case_book.ts";
import { MAX_UNANSWERED } from "../../lib/cases/waiting.ts";
import type { Spool } from "../../lib/files/spool.ts";
import { keepingAttachments } from "../../lib/storage/attachments.ts";
import { SpamFilter } from "../../lib/spam/spam_filter.ts";
import type { Store } from "../../lib/storage/store.ts";
import { storeHandlerDeps } from "../support/store_handler.ts";
import { failingStore, withTempStore } from "../support/temp_store.ts";
import { withSpool } from "../support/temp_spool.ts";
import { PEER, post, setup } from "../support/handler_setup.ts";

const NOW = Date.parse("2026-11-22T14:03:09.500Z");
const PDF = new Uint8Array([...new TextEncoder().encode("%PDF-1.7\n"), ...new Uint8Array(2000)]);

/** A multipart post of `message` with one PDF to `path`, asking for JSON. */
function withPdf(path: string, message: string): Request {
  const form = new FormData();
  form.append("message", message);
  form.append("contact", "ann@example.org");
  form.append("cv", new File([PDF], "cv.pdf"));
  return new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "x-forwarded-for": "198.51.100.1", accept: "application/json" },
    body: form,
  });
}

/** `store`, whose next transaction lets `race` commit first (another post won the race). */
function racing(store: Store): Store & { race?: (() => Promise<unknown>) | undefined } {
  const raced: Store & { race?: (() => Promise<unknown>) | undefined } = {
    run: (op, args) => store.run(op, args),
    transaction: async (calls) => {
      const race = raced.race;
      raced.race = undefined;
      await race?.();
      return await store.transaction(calls);
    },
    checkpoint: () => store.checkpoint(),
    close: () => store.close(),
  };
  return raced;
}

/** Posts from other senders that fill case `caseId` to its cap. */
function fillCase(store: Store, caseId: string) {
  return async () => {
    for (let i = 1; i < MAX_UNANSWERED; i++) {
      await store.run("cases.followUp", {
        caseId,
        ref: `racer${i}`,
        ts: "2026-11-22T14:03:10Z",
        author: "sender",
        text: `racing post ${i}`,
        max: MAX_UNANSWERED,
      });
    }
  };
}

/**
 * The spool's files once the answer's removal (not awaited) is done: polled until none is left,
 * for at most 5 s (what is left then fails the test).
 */
async function spoolAfterAnswer(spool: Spool): Promise<string[]> {
  const until = Date.now() + 5000;
  let left = await spool.list();
  while (left.length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    left = await spool.list();
  }
  return left;
}

/**
 * A handler over a real store and spool holding what it scores `scores.next` at 0.9 or more
 * (`SPAM_FILTER=hold`, the service's wiring of lib/service/spam.ts and lib/service/files.ts).
 */
async function heldWorld(store: Store, spool: Spool) {
  const filter = await SpamFilter.open({ store, now: () => NOW, log: () => {} });
  const scores = { next: 0.1 };
  const spam: AcceptSpam = {
    score: () => ({ score: scores.next, features: [] }),
    lesson: (submission) => filter.lesson(submission),
    keepHeld: (submission, spamScore, also) => filter.hold(submission, spamScore, also),
    hold: true,
  };
  const lines: string[] = [];
  const logs: Array<Record<string, unknown>> = [];
  let ids = 0;
  const deps = storeHandlerDeps(store, NOW, {
    newId: () => `held${++ids}`,
    append: (line) => (lines.push(line), Promise.resolve()),
    log: (level, fields) => logs.push({ level, ...fields }),
    spam,
    cases: new CaseBook(store),
    attachments: { maxBytes: 1_000_000, kinds: new Set(["pdf"]), spool },
    keepingFiles: (submission) => keepingAttachments(spool, submission),
  });
  return { filter, scores, lines, logs, handler: createHandler(deps) };
}

Deno.test("a follow-up with a file that its case refuses as it commits (the cap's race) leaves no file in the spool", async () => {
  await withTempStore(async ({ store }) => {
    await withSpool(async (spool) => {
      const raced = racing(store);
      const { handler, state } = setup({
        cases: new CaseBook(store),
        commitWith: raced,
        attachments: { maxBytes: 1_000_000, kinds: new Set(["pdf"]), spool },
        keepingFiles: (submission) => keepingAttachments(spool, submission),
      });
      const { case_url } = await (await handler(post({ message: "first" }), PEER)).json();
      const caseId = state.outbox[0]!.id;
      raced.race = fillCase(store, caseId);
      const response = await handler(withPdf(case_url, "one more, with my CV"), PEER);
      assert.equal(raced.race, undefined, "the race was run");
      assert.equal(response.status, 429);
      assert.equal((await response.json()).error, "case_waiting");
      assert.equal(state.outbox.length, 1, "nothing queued");
      assert.deepEqual(await spoolAfterAnswer(spool), []);
      assert.deepEqual(await store.run("files.storedNames", undefined), []);
    });
  });
});

Deno.test("a submission with a file whose outbox write fails leaves no file in the spool: nothing lists it", async () => {
  await withSpool(async (spool) => {
    const { handler, state } = setup({
      store: () => Promise.reject(new Error("disk full")),
      attachments: { maxBytes: 1_000_000, kinds: new Set(["pdf"]), spool },
      keepingFiles: (submission) => keepingAttachments(spool, submission),
    });
    const response = await handler(withPdf("/api/contact", "hello, with my CV"), PEER);
    await response.body?.cancel();
    assert.ok(state.logs.some((line) => line.event === "outbox_write_failed"));
    assert.deepEqual(await spoolAfterAnswer(spool), []);
  });
});

Deno.test("a held submission with a file whose held row cannot be written leaves no file in the spool", async () => {
  await withTempStore(async ({ store }) => {
    await withSpool(async (spool) => {
      const broken = failingStore(store, (op) => op === "spam.hold");
      const { scores, logs, handler } = await heldWorld(broken, spool);
      scores.next = 0.97;
      const response = await handler(withPdf("/api/contact", "page one of google"), PEER);
      assert.equal(response.status, 200);
      await response.body?.cancel();
      assert.ok(logs.some((line) => line.event === "spam_hold_failed"));
      assert.deepEqual(await spoolAfterAnswer(spool), []);
      assert.deepEqual(await store.run("files.storedNames", undefined), []);
    });
  });
});

Deno.test("a held follow-up that its case refuses as it commits (the cap's race) is refused as any follow-up is (429 case_waiting): nothing held, recorded or kept", async () => {
  await withTempStore(async ({ store }) => {
    await withSpool(async (spool) => {
      const raced = racing(store);
      const { filter, scores, lines, logs, handler } = await heldWorld(raced, spool);
      const { case_url } = await (await handler(post({ message: "first" }), PEER)).json();
      assert.equal(lines.length, 1);
      scores.next = 0.97;
      raced.race = fillCase(store, "held1");
      const response = await handler(withPdf(case_url, "buy links now"), PEER);
      assert.equal(raced.race, undefined, "the race was run");
      assert.equal(response.status, 429);
      assert.equal((await response.json()).error, "case_waiting");
      assert.equal((await filter.held(10)).count, 0, "nothing held");
      assert.equal(lines.length, 1, "nothing recorded");
      assert.ok(!logs.some((line) => line.level === "error"), JSON.stringify(logs));
      assert.deepEqual(await spoolAfterAnswer(spool), []);
      assert.deepEqual(await store.run("files.storedNames", undefined), []);
    });
  });
});
