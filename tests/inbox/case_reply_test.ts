import assert from "node:assert/strict";
import { CaseBook } from "../../lib/cases/case_book.ts";
import { CASE_ANSWERS, caseReplies } from "../../lib/inbox/case_reply.ts";
import type { ReplyRequest } from "../../lib/inbox/inbox.ts";
import { openTempStore } from "../support/temp_store.ts";

const request = (text: string, messageId = 40): ReplyRequest => ({
  submission: "a1",
  event: {
    kind: "reply",
    updateId: 1,
    chatId: -100,
    messageId,
    from: { id: 7, name: "Owner" } as never,
    text,
    replyTo: 5,
    replyToBot: true,
  },
});

async function setup(contact: string, withDesk: boolean) {
  const store = await openTempStore();
  const book = new CaseBook(store);
  await book.open({ id: "a1", ts: "2026-11-27T10:00:00Z", message: "question" });
  const mailed: string[] = [];
  const reply = caseReplies({
    cases: book,
    desk: withDesk ? (r) => (mailed.push(r.event.text), Promise.resolve(undefined)) : undefined,
    contactOf: () => contact,
    noReplies: "off",
    now: () => Date.parse("2026-11-27T11:00:00Z"),
    log: () => {},
  });
  return { store, book, reply, mailed };
}

Deno.test("a reply to a sender without an address is posted to their page, even with replies by email off", async () => {
  const { store, reply, mailed } = await setup("", false);
  await using _ = store;
  assert.equal(await reply(request("the answer")), CASE_ANSWERS.posted);
  const row = await store.run("cases.get", { id: "a1" });
  assert.deepEqual(row?.posts.map((p) => [p.author, p.text, p.ts]), [
    ["sender", "question", "2026-11-27T10:00:00Z"],
    ["owner", "the answer", "2026-11-27T11:00:00Z"],
  ]);
  assert.deepEqual(mailed, []);
  assert.equal(await reply(request("the answer")), undefined, "a redelivered update posts once");
  assert.equal(await reply(request("")), CASE_ANSWERS.noText);
});

Deno.test("a reply to a follow-up's notification is posted to the page of its case", async () => {
  const { store, book, reply } = await setup("", false);
  await using _ = store;
  await book.post("a1", { ref: "f1", ts: "2026-11-27T10:30:00Z", author: "sender", text: "more" });
  assert.equal(await reply({ ...request("answer"), submission: "f1" }), CASE_ANSWERS.posted);
  assert.deepEqual(
    (await store.run("cases.get", { id: "a1" }))?.posts.map((p) => p.text),
    ["question", "more", "answer"],
  );
});

Deno.test("a reply to a sender with an email address is posted to the page and mailed too", async () => {
  const { store, reply, mailed } = await setup("ann@example.org", true);
  await using _ = store;
  // Answered as before: the email's outcome follows on its own.
  assert.equal(await reply(request("hello")), undefined);
  assert.deepEqual(mailed, ["hello"]);
  assert.equal((await store.run("cases.get", { id: "a1" }))?.posts.length, 2);
});

Deno.test("a reply to a sender with an email address while replies by email are off is posted, and says email is off", async () => {
  const { store, reply } = await setup("ann@example.org", false);
  await using _ = store;
  assert.equal(await reply(request("hello")), `${CASE_ANSWERS.posted}\noff`);
  assert.equal((await store.run("cases.get", { id: "a1" }))?.posts.length, 2);
});

Deno.test("a reply to a submission without a case goes to the email desk alone, as before", async () => {
  const { store, reply, mailed } = await setup("ann@example.org", true);
  await using _ = store;
  await store.run("cases.forget", { ids: ["a1"] });
  assert.equal(await reply(request("hello")), undefined);
  assert.deepEqual(mailed, ["hello"]);
  const { store: other, reply: offReply } = await setup("", false);
  await using __ = other;
  await other.run("cases.forget", { ids: ["a1"] });
  assert.equal(await offReply(request("hello")), "off");
});

Deno.test("a reply the email desk refuses (REPLY_LIMIT) is on the page all the same, and the answer says both", async () => {
  await using store = await openTempStore();
  const book = new CaseBook(store);
  await book.open({ id: "a1", ts: "2026-11-27T10:00:00Z", message: "question" });
  const reply = caseReplies({
    cases: book,
    desk: () => Promise.resolve("Not sent: at most 1 replies by email per 1 h"),
    contactOf: () => "ann@example.org",
    noReplies: "off",
    now: () => Date.parse("2026-11-27T11:00:00Z"),
    log: () => {},
  });
  assert.equal(
    await reply(request("hello")),
    `${CASE_ANSWERS.posted}\nNot sent: at most 1 replies by email per 1 h`,
  );
  assert.equal((await store.run("cases.get", { id: "a1" }))?.posts.length, 2);
});
