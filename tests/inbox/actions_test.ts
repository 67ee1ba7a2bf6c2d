import assert from "node:assert/strict";
import { ACTIONS_IN, type ChatAction, type MessageState } from "../../lib/bot/keyboard.ts";
import {
  type ActedOn,
  checkOrigin,
  decidePress,
  REFUSAL_TOASTS,
  spamToast,
  TRANSITIONS,
} from "../../lib/inbox/actions.ts";

const CHAT = -1001234567890;
const FIRST = 501;
const SECOND = 502;

function entry(state: MessageState, overrides: Partial<ActedOn> = {}): ActedOn {
  return {
    id: "k3J9x-Qa",
    chat: CHAT,
    buttons: [FIRST],
    messages: [FIRST, SECOND],
    state,
    ...overrides,
  };
}

const ON_FIRST = { chatId: CHAT, messageId: FIRST };

Deno.test("open → handled → open: Handled then Reopen apply their transitions", () => {
  const handled = decidePress(ON_FIRST, "handled", entry("open"));
  assert.deepEqual(handled, { kind: "apply", id: "k3J9x-Qa", transition: TRANSITIONS.handled });
  assert.equal(TRANSITIONS.handled.to, "handled");
  assert.equal(TRANSITIONS.handled.effect, "none");
  assert.equal(TRANSITIONS.handled.event, "marked_handled");
  const reopened = decidePress(ON_FIRST, "reopen", entry("handled"));
  assert.deepEqual(reopened, { kind: "apply", id: "k3J9x-Qa", transition: TRANSITIONS.reopen });
  assert.equal(TRANSITIONS.reopen.to, "open");
  assert.equal(TRANSITIONS.reopen.effect, "none");
});

Deno.test("open → spam → open: Spam blocks the sender, Not spam lifts the block", () => {
  const spam = decidePress(ON_FIRST, "spam", entry("open"));
  assert.deepEqual(spam, { kind: "apply", id: "k3J9x-Qa", transition: TRANSITIONS.spam });
  assert.equal(TRANSITIONS.spam.to, "spam");
  assert.equal(TRANSITIONS.spam.effect, "block");
  assert.equal(TRANSITIONS.spam.event, "marked_spam");
  const notSpam = decidePress(ON_FIRST, "not_spam", entry("spam"));
  assert.deepEqual(notSpam, { kind: "apply", id: "k3J9x-Qa", transition: TRANSITIONS.not_spam });
  assert.equal(TRANSITIONS.not_spam.to, "open");
  assert.equal(TRANSITIONS.not_spam.effect, "unblock");
  assert.equal(TRANSITIONS.not_spam.event, "marked_not_spam");
});

Deno.test("a press repeating the state it leads to is the same, not a second transition", () => {
  const cases: [ChatAction, MessageState][] = [
    ["handled", "handled"],
    ["spam", "spam"],
    ["reopen", "open"],
    ["not_spam", "open"],
  ];
  for (const [action, state] of cases) {
    assert.deepEqual(decidePress(ON_FIRST, action, entry(state)), {
      kind: "same",
      id: "k3J9x-Qa",
      state,
    }, `${action} in ${state}`);
  }
});

Deno.test("a button of another state is stale and refused", () => {
  const cases: [ChatAction, MessageState][] = [
    ["spam", "handled"],
    ["not_spam", "handled"],
    ["handled", "spam"],
    ["reopen", "spam"],
  ];
  for (const [action, state] of cases) {
    assert.deepEqual(
      decidePress(ON_FIRST, action, entry(state)),
      { kind: "refuse", reason: "stale" },
      `${action} in ${state}`,
    );
  }
});

Deno.test("every transition starts in the state that shows its button and ends where it leads", () => {
  for (
    const [action, transition] of Object.entries(TRANSITIONS) as [
      ChatAction,
      typeof TRANSITIONS.spam,
    ][]
  ) {
    assert.ok(ACTIONS_IN[transition.from].includes(action), action);
  }
  // Each button shown in a state applies from that state: no button of a fresh keyboard is stale.
  for (const [state, actions] of Object.entries(ACTIONS_IN) as [MessageState, ChatAction[]][]) {
    for (const action of actions) {
      assert.equal(
        decidePress(ON_FIRST, action, entry(state)).kind,
        "apply",
        `${action} in ${state}`,
      );
    }
  }
});

Deno.test("a press on a submission the ledger does not know is refused as unknown", () => {
  for (const action of ["handled", "reopen", "spam", "not_spam"] as const) {
    assert.deepEqual(decidePress(ON_FIRST, action, undefined), {
      kind: "refuse",
      reason: "unknown_submission",
    });
  }
  assert.equal(checkOrigin(ON_FIRST, undefined, "any_part"), "unknown_submission");
});

Deno.test("a press from another chat is refused, even on the right message id", () => {
  const elsewhere = { chatId: -1009999, messageId: FIRST };
  assert.deepEqual(decidePress(elsewhere, "spam", entry("open")), {
    kind: "refuse",
    reason: "wrong_chat",
  });
  // The same number without its sign (a private chat) is another chat.
  assert.equal(
    checkOrigin({ chatId: -CHAT, messageId: FIRST }, entry("open"), "buttons"),
    "wrong_chat",
  );
  assert.equal(checkOrigin(elsewhere, entry("open"), "any_part"), "wrong_chat");
});

Deno.test("a press on a second part or an unrelated message is not a notification's button", () => {
  for (const messageId of [SECOND, 500, 503, 1]) {
    assert.deepEqual(decidePress({ chatId: CHAT, messageId }, "handled", entry("open")), {
      kind: "refuse",
      reason: "not_notification",
    }, String(messageId));
  }
});

Deno.test("a reply may answer any part of the notification, in its chat only", () => {
  const e = entry("open");
  assert.equal(checkOrigin({ chatId: CHAT, messageId: FIRST }, e, "any_part"), undefined);
  assert.equal(checkOrigin({ chatId: CHAT, messageId: SECOND }, e, "any_part"), undefined);
  assert.equal(checkOrigin({ chatId: CHAT, messageId: 503 }, e, "any_part"), "not_notification");
  assert.equal(checkOrigin({ chatId: CHAT, messageId: SECOND }, e, "buttons"), "not_notification");
});

Deno.test("a notification sent again (several first parts) takes presses on each of them", () => {
  const redelivered = entry("open", { buttons: [FIRST, 900], messages: [FIRST, SECOND, 900, 901] });
  assert.equal(decidePress({ chatId: CHAT, messageId: 900 }, "spam", redelivered).kind, "apply");
  assert.equal(
    decidePress({ chatId: CHAT, messageId: 901 }, "spam", redelivered).kind,
    "refuse",
  );
});

Deno.test("the origin is checked before the state: a stale press from another chat is wrong_chat", () => {
  assert.deepEqual(decidePress({ chatId: 77, messageId: FIRST }, "spam", entry("handled")), {
    kind: "refuse",
    reason: "wrong_chat",
  });
  assert.deepEqual(decidePress({ chatId: CHAT, messageId: SECOND }, "spam", entry("handled")), {
    kind: "refuse",
    reason: "not_notification",
  });
});

Deno.test("every toast fits answerCallbackQuery's 200 characters, the period included", () => {
  const toasts = [
    ...Object.values(REFUSAL_TOASTS),
    ...Object.values(TRANSITIONS).map((t) => `${t.toast} for 365 days.`),
  ];
  for (const toast of toasts) {
    assert.ok(toast.trim().length > 0);
    assert.ok([...toast].length <= 200, toast);
  }
  // Each refusal says something of its own.
  assert.equal(new Set(Object.values(REFUSAL_TOASTS)).size, Object.keys(REFUSAL_TOASTS).length);
});

Deno.test("decision table: a Spam press's toast says what was blocked, and why an address was not", () => {
  const table: [Parameters<typeof spamToast>[0], boolean, RegExp][] = [
    [undefined, true, /^🚫 Marked as spam: the sender is blocked for 30 days\.$/],
    [undefined, false, /^🚫 Marked as spam: the sender is blocked for 30 days\.$/],
    ["loopback", true, /its contact is blocked for 30 days, not its address: it is this host's/],
    [
      "trusted_proxy",
      true,
      /its contact is blocked for 30 days, not its address: it is the proxy's own/,
    ],
    [
      "not_an_address",
      true,
      /its contact is blocked for 30 days, not its address: none was recorded/,
    ],
    ["loopback", false, /nothing is blocked \(no contact, and its address: it is this host's/],
    ["trusted_proxy", false, /nothing is blocked/],
  ];
  for (const [withheld, contact, expected] of table) {
    const toast = spamToast(withheld, contact, "30 days");
    assert.match(toast, expected, `${withheld} ${contact}`);
    assert.ok(toast.length <= 200, "answerCallbackQuery's limit");
  }
});
