/**
 * Decoy case pages (lib/cases/decoy.ts): tokens known by the install's key alone, what their
 * pages show kept in a bounded memory, and the key kept in the database.
 *
 * @module
 */
import assert from "node:assert/strict";
import { MAX_UNANSWERED } from "../../lib/cases/waiting.ts";
import { CaseBook } from "../../lib/cases/case_book.ts";
import { DECOY_KEY, DECOY_LIMITS, DecoyPages } from "../../lib/cases/decoy.ts";
import { isTokenShape, newToken } from "../../lib/cases/token.ts";
import { openTempStore } from "../support/temp_store.ts";

const key = (byte: number) => new Uint8Array(32).fill(byte);

/** `token` with its character at `at` changed to another one. */
function changed(token: string, at: number): string {
  const other = token[at] === "A" ? "B" : "A";
  return `${token.slice(0, at)}${other}${token.slice(at + 1)}`;
}

Deno.test("a decoy's token has a token's shape and is known by its key alone: not under another key, nor a real token, nor one with a character changed", () => {
  const pages = new DecoyPages(key(1));
  const token = pages.issue();
  assert.ok(isTokenShape(token));
  assert.ok(pages.isDecoy(token));
  assert.ok(new DecoyPages(key(1)).isDecoy(token), "the same key, another book");
  assert.equal(new DecoyPages(key(2)).isDecoy(token), false);
  for (let i = 0; i < 100; i++) assert.equal(pages.isDecoy(newToken()), false);
  for (const at of [0, 11, 12, 31]) assert.equal(pages.isDecoy(changed(token, at)), false, `${at}`);
  assert.equal(pages.isDecoy("not a token"), false);
  assert.notEqual(pages.issue(), token, "each decoy's own token");
});

Deno.test("a decoy's page shows the sender's message and what was written back, in order", () => {
  const pages = new DecoyPages(key(1));
  const token = pages.issue({ ts: "2026-11-27T10:00:00Z", text: "first" });
  pages.add(token, { ts: "2026-11-27T10:01:00Z", text: "more" });
  assert.deepEqual(pages.posts(token), [
    { ts: "2026-11-27T10:00:00Z", author: "sender", text: "first" },
    { ts: "2026-11-27T10:01:00Z", author: "sender", text: "more" },
  ]);
  assert.deepEqual(pages.posts(pages.issue()), [], "none given: none shown");
});

Deno.test("what decoy pages show is bounded in pages and characters, the oldest forgotten first; a forgotten decoy is still a decoy", () => {
  const limits = { pages: 3, chars: 10 };
  const pages = new DecoyPages(key(1), undefined, limits);
  const shown = (text: string) => pages.issue({ ts: "2026-11-27T10:00:00Z", text });
  const [a, b, c, d] = [shown("a"), shown("b"), shown("c"), shown("d")];
  assert.deepEqual([a, b, c, d].map((t) => pages.posts(t).length), [0, 1, 1, 1], "3 pages");
  const long = shown("0123456789");
  assert.deepEqual([b, c, d, long].map((t) => pages.posts(t).length), [0, 0, 0, 1], "10 chars");
  pages.add(d, { ts: "2026-11-27T10:01:00Z", text: "x" });
  assert.deepEqual([long, d].map((t) => pages.posts(t).length), [0, 1], "a write-back counts");
  assert.ok(pages.isDecoy(a), "forgotten, still a decoy's page");
  assert.ok(DECOY_LIMITS.pages > 0 && DECOY_LIMITS.chars >= 10 * 8000, "room for a full page");
});

Deno.test("a decoy page takes at most MAX_UNANSWERED posts, as a real case does: the one past it is refused and not shown", () => {
  const pages = new DecoyPages(key(1));
  const token = pages.issue({ ts: "2026-11-27T10:00:00Z", text: "first" });
  const taken = Array.from(
    { length: MAX_UNANSWERED },
    (_, i) => pages.add(token, { ts: "2026-11-27T10:01:00Z", text: `more ${i}` }),
  );
  assert.deepEqual(taken, [...Array(MAX_UNANSWERED - 1).fill(true), false]);
  assert.equal(pages.posts(token).length, MAX_UNANSWERED);
});

Deno.test("a flood of honeypot hits cannot push a blocked sender's decoy page out: each kind has its own memory", () => {
  const pages = new DecoyPages(key(1), undefined, { pages: 2, chars: 100 });
  const blocked = pages.issue({ ts: "2026-11-27T10:00:00Z", text: "mine" }, "blocked");
  for (let i = 0; i < 10; i++) pages.issue({ ts: "2026-11-27T10:00:00Z", text: `bot ${i}` });
  assert.deepEqual(pages.posts(blocked).map(({ text }) => text), ["mine"]);
  assert.ok(pages.add(blocked, { ts: "2026-11-27T10:01:00Z", text: "again" }));
  assert.equal(pages.posts(blocked).length, 2, "written back in its own memory");
});

Deno.test("the decoy key is made once and kept in the database: a book opened later knows the earlier decoys, with no row for any", async () => {
  await using store = await openTempStore();
  const token = await new CaseBook(store).decoy({ ts: "2026-11-27T10:00:00Z", message: "hi" });
  const kept = await store.run("meta.get", { key: DECOY_KEY });
  assert.match(kept ?? "", /^[0-9a-f]{64}$/);
  const later = await new CaseBook(store).find(`/api/case/${token}`);
  assert.equal(later?.id, "", "a decoy's page, of no case");
  assert.equal(later?.closed, false);
  assert.deepEqual(later?.posts, [], "its text was in the other book's memory only");
  assert.equal(await store.run("meta.get", { key: DECOY_KEY }), kept, "not made again");
  assert.equal(await store.run("cases.prune", { before: "9999-01-01T00:00:00Z" }), 0, "no row");
  assert.equal(await new CaseBook(store).find(`/api/case/${newToken()}`), undefined);
});
