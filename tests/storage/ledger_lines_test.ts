/**
 * The chat ledger's lines (the file an older release kept) and their fold: parts sent,
 * redeliveries, states, deletions, damaged lines.
 */
import assert from "node:assert/strict";
import {
  addPart,
  applyLine,
  deletedLine,
  deleteLine,
  emptyFold,
  type LedgerFold,
  pendingDeletions,
  sentLine,
  type SentPart,
  setEntryState,
  stateLine,
} from "../../lib/storage/ledger_lines.ts";

const CHAT = -1001234567890;

/** A part of submission `id`. */
function part(id: string, messageId: number, first: boolean, chat = CHAT): SentPart {
  return {
    id,
    ts: "2026-11-25T12:00:00Z",
    chat,
    messageId,
    first,
    form: "support",
    ip: "2001:db8::7",
    contact: "ann@example.org",
  };
}

/** The fold of `text`'s whole lines, and what each line did. */
function fold(text: string): { fold: LedgerFold; outcomes: string[] } {
  const result = emptyFold();
  const outcomes = text.split("\n").filter((line) => line !== "").map((line) =>
    applyLine(result, line)
  );
  return { fold: result, outcomes };
}

Deno.test("the ledger folds a notification's parts into one entry: first parts carry buttons, every part's message kept once, a redelivery adds a button", () => {
  const text = sentLine(part("k3x9", 10, true)) + sentLine(part("k3x9", 11, false)) +
    sentLine(part("k3x9", 11, false)) + sentLine(part("k3x9", 20, true));
  const { fold: folded, outcomes } = fold(text);
  assert.deepEqual(outcomes, ["applied", "applied", "applied", "applied"]);
  assert.deepEqual(folded.entries.get("k3x9"), {
    id: "k3x9",
    ts: "2026-11-25T12:00:00Z",
    chat: CHAT,
    buttons: [10, 20],
    messages: [10, 11, 20],
    form: "support",
    ip: "2001:db8::7",
    contact: "ann@example.org",
    state: "open",
  });
});

Deno.test("a state line sets the state with who set it and when; one for an entry not held is skipped and changes nothing", () => {
  const owner = { id: 42, name: "Owner" };
  const text = sentLine(part("a1", 10, true)) +
    stateLine("a1", "spam", owner, "2026-11-25T12:05:00Z") +
    stateLine("gone", "handled", owner, "2026-11-25T12:06:00Z");
  const { fold: folded, outcomes } = fold(text);
  assert.deepEqual(outcomes, ["applied", "applied", "skipped"]);
  const entry = folded.entries.get("a1");
  assert.deepEqual(
    [entry?.state, entry?.by, entry?.byName, entry?.at],
    ["spam", 42, "Owner", "2026-11-25T12:05:00Z"],
  );
  assert.equal(folded.entries.has("gone"), false);
  assert.equal(setEntryState(folded, "gone", "open", owner, "x"), false);
});

Deno.test("a deleted line takes its messages out of those waiting; a chat with none left waits no more", () => {
  const text = deleteLine({ chat: CHAT, messages: [10, 11] }) +
    deleteLine({ chat: 7, messages: [3] }) + deleteLine({ chat: CHAT, messages: [11, 12] }) +
    deletedLine({ chat: CHAT, messages: [10, 11] }) + deletedLine({ chat: 7, messages: [3] });
  assert.deepEqual(pendingDeletions(fold(text).fold), [{ chat: CHAT, messages: [12] }]);
});

Deno.test("damaged lines and missing fields are damaged, an unknown op (a later version's) is skipped", () => {
  const { outcomes } = fold(
    [
      "{not json",
      "[1,2]",
      JSON.stringify({ op: "sent", id: "a", ts: "t", chat: 1, message: "10", first: true }),
      JSON.stringify({ op: "delete", chat: 1, messages: [1.5] }),
      JSON.stringify({ op: "state", id: "a", state: "archived", by: 1, by_name: "x", at: "t" }),
      JSON.stringify({ op: "pinned", id: "a" }),
    ].join("\n"),
  );
  assert.deepEqual(outcomes, ["damaged", "damaged", "damaged", "damaged", "damaged", "skipped"]);
});

Deno.test("a part sent to another chat starts the entry afresh there: the old chat's message ids are no longer its", () => {
  const folded = emptyFold();
  addPart(folded, part("a1", 10, true, 1));
  const entry = addPart(folded, part("a1", 99, true, 2));
  assert.deepEqual([entry.chat, entry.buttons, entry.messages], [2, [99], [99]]);
});
