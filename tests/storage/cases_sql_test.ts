import assert from "node:assert/strict";
import { call, type Store } from "../../lib/storage/store.ts";
import { withTempStore } from "../support/temp_store.ts";

const hash = (byte: number) => new Uint8Array(32).fill(byte);

/** Runs `test` on a new database, closed and removed after it. */
function withStore(test: (store: Store) => Promise<void>): Promise<void> {
  return withTempStore(({ store }) => test(store));
}

const open = (id: string, byte: number, ts = "2026-11-27T10:00:00Z") => ({
  id,
  hash: hash(byte),
  ts,
  form: null,
  message: `message of ${id}`,
});

Deno.test("a case is found by its token's hash only, with the sender's message as its first post", async () => {
  await withStore(async (store) => {
    assert.equal(await store.run("cases.open", open("a1", 1)), true);
    assert.equal(await store.run("cases.open", open("a1", 9)), false, "an id opens one case");
    const found = await store.run("cases.byHash", { hash: hash(1) });
    assert.equal(found?.id, "a1");
    assert.deepEqual(found?.hash, hash(1));
    assert.equal(found?.state, "open");
    assert.deepEqual(found?.posts, [
      { ts: "2026-11-27T10:00:00Z", author: "sender", text: "message of a1" },
    ]);
    assert.equal(await store.run("cases.byHash", { hash: hash(9) }), undefined);
    assert.equal((await store.run("cases.get", { id: "a1" }))?.id, "a1");
  });
});

Deno.test("posts come back in order; a redelivered reply (same ref) and a post to a missing case write nothing", async () => {
  await withStore(async (store) => {
    await store.run("cases.open", open("a1", 1));
    const reply = {
      caseId: "a1",
      ref: "-100:7",
      ts: "2026-11-27T11:00:00Z",
      author: "owner" as const,
      text: "hello",
    };
    assert.equal(await store.run("cases.post", reply), true);
    assert.equal(await store.run("cases.post", reply), false);
    assert.equal(
      await store.run("cases.post", { ...reply, ref: "b2", author: "sender", text: "thanks" }),
      true,
    );
    assert.equal(await store.run("cases.post", { ...reply, caseId: "zz", ref: "x" }), false);
    const found = await store.run("cases.get", { id: "a1" });
    assert.deepEqual(found?.posts.map((post) => [post.author, post.text]), [
      ["sender", "message of a1"],
      ["owner", "hello"],
      ["sender", "thanks"],
    ]);
    assert.equal(await store.run("cases.ofPost", { ref: "b2" }), "a1");
    assert.equal(await store.run("cases.ofPost", { ref: "nope" }), undefined);
  });
});

Deno.test("a case's state is its notification's in the chat ledger: Handled closes it, the undo reopens it", async () => {
  await withStore(async (store) => {
    await store.run("cases.open", open("a1", 1));
    await store.run("ledger.noteSent", {
      id: "a1",
      ts: "2026-11-27T10:00:00Z",
      chat: -100,
      messageId: 7,
      first: true,
      ip: "192.0.2.1",
      contact: "",
    });
    const state = async () => (await store.run("cases.byHash", { hash: hash(1) }))?.state;
    assert.equal(await state(), "open");
    const by = { by: 1, byName: "Owner", at: "2026-11-27T10:05:00Z" };
    await store.run("ledger.setState", { id: "a1", state: "handled", ...by });
    assert.equal(await state(), "handled");
    await store.run("ledger.setState", { id: "a1", state: "open", ...by });
    assert.equal(await state(), "open");
  });
});

Deno.test("retention removes cases opened before the cutoff with their posts; forget erases a case and the follow-ups it is", async () => {
  await withStore(async (store) => {
    await store.run("cases.open", open("old", 1, "2026-01-01T00:00:00Z"));
    await store.run("cases.open", open("new", 2));
    await store.run("cases.open", open("other", 3));
    await store.run("cases.post", {
      caseId: "other",
      ref: "f1",
      ts: "2026-11-27T12:00:00Z",
      author: "sender",
      text: "a follow-up",
    });
    assert.equal(await store.run("cases.prune", { before: "2026-06-01T00:00:00Z" }), 1);
    assert.equal(await store.run("cases.byHash", { hash: hash(1) }), undefined);
    assert.equal(await store.run("cases.ofPost", { ref: "old" }), undefined, "posts went too");

    assert.equal(await store.run("cases.count", { ids: ["new", "f1"] }), 2);
    assert.equal(await store.run("cases.forget", { ids: ["new", "f1"] }), 2);
    assert.equal(await store.run("cases.get", { id: "new" }), undefined);
    assert.equal(await store.run("cases.ofPost", { ref: "new" }), undefined);
    assert.deepEqual(
      (await store.run("cases.get", { id: "other" }))?.posts.map((post) => post.text),
      ["message of other"],
    );
  });
});

Deno.test("a follow-up to a case gone (erased meanwhile) commits nothing: its outbox row neither", async () => {
  await withStore(async (store) => {
    await store.run("cases.open", open("a1", 1));
    await store.run("cases.forget", { ids: ["a1"] });
    const row = { id: "f1", ts: "2026-11-27T10:01:00Z", submission: "{}" };
    const post = { caseId: "a1", ref: "f1", ts: row.ts, author: "sender", text: "more", max: 10 };
    await assert.rejects(
      store.transaction([call("outbox.add", row), call("cases.followUp", post as never)]),
      /the case is gone/,
    );
    assert.equal(await store.run("outbox.read", { id: "f1" }), undefined);
  });
});

Deno.test("a follow-up past the sender's messages in a row a case takes fails in the database too (posts racing the page's check); the owner's reply opens it again", async () => {
  await withStore(async (store) => {
    await store.run("cases.open", open("a1", 1)); // the first message: one
    const followUp = (ref: string) =>
      store.run("cases.followUp", {
        caseId: "a1",
        ref,
        ts: "2026-11-27T10:01:00Z",
        author: "sender",
        text: ref,
        max: 3,
      });
    await followUp("f1");
    await followUp("f2");
    await assert.rejects(followUp("f3"), /waits for the owner's reply/);
    await followUp("f2"); // a redelivered one changes nothing, and is no new message
    await store.run("cases.post", {
      caseId: "a1",
      ref: "1:99",
      ts: "2026-11-27T10:02:00Z",
      author: "owner",
      text: "an answer",
    });
    await followUp("f3");
    const found = await store.run("cases.get", { id: "a1" });
    assert.deepEqual(found?.posts.map((p) => p.text), [
      "message of a1",
      "f1",
      "f2",
      "an answer",
      "f3",
    ]);
  });
});
