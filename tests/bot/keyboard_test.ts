import assert from "node:assert/strict";
import {
  type ChatAction,
  encodeCallbackData,
  keyboardFor,
  MAX_CALLBACK_DATA_BYTES,
  type MessageState,
  parseCallbackData,
  STATE_LINE_MARKER,
  stateLine,
  withStateLine,
} from "../../lib/bot/keyboard.ts";
import { MAX_MESSAGE_LENGTH } from "../../lib/bot/notification.ts";
import { newSubmissionId } from "../../lib/form/submission_id.ts";

const ACTIONS: ChatAction[] = ["handled", "reopen", "spam", "not_spam"];
const AT = "2026-11-25 18:40 UTC";

Deno.test("callback_data is a letter, a colon and the id, and reads back as the same action", () => {
  assert.equal(encodeCallbackData("handled", "k3x9q2ab"), "h:k3x9q2ab");
  assert.equal(encodeCallbackData("reopen", "k3x9q2ab"), "o:k3x9q2ab");
  assert.equal(encodeCallbackData("spam", "k3x9q2ab"), "s:k3x9q2ab");
  assert.equal(encodeCallbackData("not_spam", "k3x9q2ab"), "n:k3x9q2ab");
  for (const action of ACTIONS) {
    const id = newSubmissionId();
    assert.deepEqual(parseCallbackData(encodeCallbackData(action, id)!), { action, id });
  }
});

Deno.test("callback_data refuses an id it could not read back, and never exceeds 64 bytes", () => {
  for (const id of ["", "a".repeat(41), "a:b", "a b", "ä", "id\n", "../x", "😀"]) {
    assert.equal(encodeCallbackData("spam", id), undefined, JSON.stringify(id));
  }
  const longest = encodeCallbackData("not_spam", "Z".repeat(40))!;
  assert.ok(new TextEncoder().encode(longest).length <= MAX_CALLBACK_DATA_BYTES);
});

Deno.test("forged callback_data reads as nothing: unknown letter, bad id, extra colons, padding", () => {
  for (
    const data of [
      "",
      "h",
      "h:",
      ":k3x9q2ab",
      "x:k3x9q2ab",
      "H:k3x9q2ab",
      "hs:k3x9q2ab",
      "h:k3x9q2ab:s",
      "h::k3x9q2ab",
      "h:k3x9 q2ab",
      " h:k3x9q2ab",
      "h:k3x9q2ab\n",
      "h:" + "a".repeat(41),
      "h:käse",
      "constructor:x",
      "__proto__:x",
    ]
  ) {
    assert.equal(parseCallbackData(data), undefined, JSON.stringify(data));
  }
});

Deno.test("an open notification offers Handled and Spam, a handled one Reopen, a spam one Not spam", () => {
  const texts = (state: MessageState) =>
    keyboardFor(state, "k3x9q2ab").inline_keyboard.map((row) =>
      row.map((button) => [button.text, button.callback_data])
    );
  assert.deepEqual(texts("open"), [[["✓ Handled", "h:k3x9q2ab"], ["🚫 Spam", "s:k3x9q2ab"]]]);
  assert.deepEqual(texts("handled"), [[["↩ Reopen", "o:k3x9q2ab"]]]);
  assert.deepEqual(texts("spam"), [[["✅ Not spam", "n:k3x9q2ab"]]]);
});

Deno.test("keyboardFor refuses an id unfit for callback_data rather than sending a broken button", () => {
  assert.throws(() => keyboardFor("open", "no:colons"), RangeError);
});

Deno.test("the state line says what, who and when, on one line whatever the name holds", () => {
  assert.equal(stateLine("handled", "Anna", AT), "— ✓ Handled by Anna, 2026-11-25 18:40 UTC");
  assert.equal(stateLine("spam", "Anna Li", AT), "— 🚫 Spam by Anna Li, 2026-11-25 18:40 UTC");
  assert.equal(stateLine("open", "Bo", AT), "— ↩ Reopened by Bo, 2026-11-25 18:40 UTC");
  const hostile = stateLine(
    "handled",
    "Eve\n\n— 🚫 Spam by Mallory\u202e\u0007" + "x".repeat(100),
    AT,
  );
  assert.ok(!hostile.includes("\n"));
  assert.ok(!/[\p{Cc}\u202e]/u.test(hostile));
  assert.ok(hostile.startsWith(STATE_LINE_MARKER));
  assert.ok(hostile.endsWith(`…, ${AT}`));
});

Deno.test("withStateLine appends after a blank line, then replaces its own line, and removes it", () => {
  const body = "New contact message #k3x9q2ab\nFrom: Ann\n\nHello";
  const handled = withStateLine(body, stateLine("handled", "Anna", AT));
  assert.equal(handled, `${body}\n\n— ✓ Handled by Anna, ${AT}`);
  const reopened = withStateLine(handled, stateLine("open", "Bo", AT));
  assert.equal(reopened, `${body}\n\n— ↩ Reopened by Bo, ${AT}`);
  assert.equal(withStateLine(reopened, undefined), body);
  assert.equal(withStateLine(body, undefined), body);
});

Deno.test("withStateLine keeps a last line that only looks like a dash from the sender", () => {
  const body = "Header\n\nThanks!\n\n— Ann";
  assert.equal(
    withStateLine(body, stateLine("spam", "Bo", AT)),
    `${body}\n\n${stateLine("spam", "Bo", AT)}`,
  );
  assert.equal(withStateLine(body, undefined), body);
});

Deno.test("withStateLine stays within 4096 units, cutting the body with … but never the state line", () => {
  const line = stateLine("handled", "Anna", AT);
  for (const body of ["x".repeat(MAX_MESSAGE_LENGTH), "😀".repeat(2048), "y".repeat(4090)]) {
    const text = withStateLine(body, line);
    assert.ok(text.length <= MAX_MESSAGE_LENGTH, String(text.length));
    assert.ok(text.endsWith(`…\n\n${line}`));
    assert.equal(text.toWellFormed(), text, "no surrogate pair split");
    // Pressed again: the same length, the line replaced, not stacked.
    const again = withStateLine(text, stateLine("open", "Bo", AT));
    assert.ok(again.length <= MAX_MESSAGE_LENGTH);
    assert.equal(again.split("— ").length, 2);
  }
});
