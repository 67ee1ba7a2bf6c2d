import assert from "node:assert/strict";
import { CaseBook, keptCases } from "../../lib/cases/case_book.ts";
import { casePath } from "../../lib/cases/token.ts";
import { openLocalStore } from "../../lib/storage/store.ts";

async function withBook(
  test: (book: CaseBook, store: Awaited<ReturnType<typeof openLocalStore>>) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = await openLocalStore(`${dir}/m.jsonl.db`, { create: true });
  try {
    await test(new CaseBook(store), store);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const submission = { id: "a1", ts: "2026-11-27T10:00:00Z", message: "hello" };

Deno.test("a case is found by its token's path; the database holds no token, only its hash", async () => {
  await withBook(async (book, store) => {
    const token = await book.open(submission);
    const found = await book.find(casePath(token));
    assert.equal(found?.id, "a1");
    assert.equal(found?.closed, false);
    assert.deepEqual(found?.posts.map((post) => post.text), ["hello"]);
    const row = await store.run("cases.get", { id: "a1" });
    assert.ok(!new TextDecoder().decode(row!.hash).includes(token));
    // A wrong token of the right shape, a truncated one, another path: nothing.
    // The last character changed, to one it is not (else it is the token itself).
    const changed = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
    assert.equal(await book.find(casePath(changed)), undefined);
    assert.equal(await book.find(casePath(token.slice(1))), undefined);
    assert.equal(await book.find(`/api/contact/${token}`), undefined);
  });
});

Deno.test("a follow-up is known by its submission id; the first message is no follow-up", async () => {
  await withBook(async (book) => {
    await book.open(submission);
    assert.equal(
      await book.post("a1", { ref: "f1", ts: submission.ts, author: "sender", text: "more" }),
      true,
    );
    assert.equal(await book.caseOf("f1"), "a1");
    assert.equal(await book.caseOf("a1"), undefined);
    assert.equal(await book.has("a1"), true);
    assert.equal(await book.has("f1"), false);
  });
});

Deno.test("retention and erasure reach the cases: pruned by the submission's time, forgotten by id", async () => {
  const dir = await Deno.makeTempDir();
  const store = await openLocalStore(`${dir}/m.jsonl.db`, { create: true });
  try {
    const book = new CaseBook(store);
    const kept = keptCases(store);
    const old = await book.open({ ...submission, id: "old", ts: "2026-01-01T00:00:00Z" });
    const token = await book.open(submission);
    assert.equal(await kept.prune!(Date.parse("2026-06-01T00:00:00Z")), 1);
    assert.equal(await book.find(casePath(old)), undefined);
    const ids = new Set(["a1"]);
    const match = {} as Parameters<NonNullable<typeof kept.forget>>[0];
    assert.equal(await kept.forget!(match, ids, true), 1);
    assert.notEqual(await book.find(casePath(token)), undefined, "a dry run writes nothing");
    assert.equal(await kept.forget!(match, ids, false), 1);
    assert.equal(await book.find(casePath(token)), undefined);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
