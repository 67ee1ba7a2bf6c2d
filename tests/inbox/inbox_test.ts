import assert from "node:assert/strict";
import type { BotApiResult } from "../../lib/bot/api.ts";
import {
  keyboardFor,
  type MessageState,
  stateLine,
  withStateLine,
} from "../../lib/bot/keyboard.ts";
import type {
  ChatEvent,
  CommandEvent,
  PressEvent,
  ReplyEvent,
  Sender,
} from "../../lib/bot/updates.ts";
import type { ChatActionsBy } from "../../lib/config/config.ts";
import { type ActedOn, REFUSAL_TOASTS, TRANSITIONS } from "../../lib/inbox/actions.ts";
import {
  type ChatApi,
  formatUtc,
  Inbox,
  type InboxBlocks,
  type InboxDeps,
  type InboxLedger,
  NO_REPLIES,
  NOT_A_NOTIFICATION,
  type ReplyRequest,
} from "../../lib/inbox/inbox.ts";
import {
  type PendingItem,
  pendingText,
  type StatusReport,
  statusText,
} from "../../lib/inbox/status_text.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";
import { type Cidr, parseCidr } from "../../lib/common/ip.ts";
import { spamToast } from "../../lib/inbox/actions.ts";
import { ANSWER_LIMITS } from "../../lib/inbox/answer_budget.ts";
import { NOT_SAVED } from "../../lib/inbox/inbox.ts";
import { UpdateNotSaved } from "../../lib/inbox/poller.ts";

// ---------------------------------------------------------------------------------------------
// Fakes

const GROUP = -1001234567890;
const ELSEWHERE = -1009876543210;
const FIRST = 501;
const SECOND = 502;
const ID = "k3J9x-Qa";
const IP = "2001:db8:5:6::77";
const CONTACT = "anna.sender@example.org";
const SENDER_NAME = "Anna Sender";
const BODY = "Please call me back about the flat on Elm Street";
const TEXT = `📨 New message\nName: ${SENDER_NAME}\nContact: ${CONTACT}\n\n${BODY}`;
const OWNER: Sender = { id: 42, name: "Olga Owner" };
const OTHER_MEMBER: Sender = { id: 43, name: "Max Member" };
const NOW = Date.parse("2026-11-25T18:40:00Z");
const AT = "2026-11-25 18:40 UTC";
const OK: BotApiResult = { ok: true, result: true };

type ApiCall =
  | {
    op: "edit";
    chat: number;
    messageId: number;
    text: string | undefined;
    markup: unknown;
  }
  | { op: "toast"; queryId: string; text: string }
  | { op: "say"; chat: number; text: string; at: { topicId?: number; replyTo?: number } }
  | { op: "isAdmin"; chat: number; user: number };

/** A ChatApi that records every call and answers as scripted. */
class FakeChatApi implements ChatApi {
  readonly calls: ApiCall[] = [];
  editResult: BotApiResult = OK;
  toastResult: BotApiResult = OK;
  sayResult: BotApiResult = OK;
  readonly admins = new Set<number>();

  edit(chat: number, messageId: number, text: string | undefined, markup: unknown) {
    this.calls.push({ op: "edit", chat, messageId, text, markup });
    return Promise.resolve(this.editResult);
  }
  toast(queryId: string, text: string) {
    this.calls.push({ op: "toast", queryId, text });
    return Promise.resolve(this.toastResult);
  }
  say(chat: number, text: string, at: { topicId?: number; replyTo?: number }) {
    this.calls.push({ op: "say", chat, text, at });
    return Promise.resolve(this.sayResult);
  }
  isAdmin(chat: number, user: number) {
    this.calls.push({ op: "isAdmin", chat, user });
    return Promise.resolve(this.admins.has(user));
  }
  of<K extends ApiCall["op"]>(op: K): Extract<ApiCall, { op: K }>[] {
    return this.calls.filter((call): call is Extract<ApiCall, { op: K }> => call.op === op);
  }
}

interface LedgerEntry extends ActedOn {
  readonly ip: string;
  readonly contact: string;
  readonly ts: string;
  /** Who set the state and when, as the real ledger keeps them. */
  readonly byName?: string;
  readonly at?: string;
}

/** The chat ledger in memory. */
class MemoryLedger implements InboxLedger {
  readonly entries = new Map<string, LedgerEntry>();
  readonly sets: { id: string; state: MessageState; by: Sender; at: string }[] = [];

  add(entry: LedgerEntry): void {
    this.entries.set(entry.id, entry);
  }
  get(id: string) {
    return this.entries.get(id);
  }
  byMessage(chat: number, messageId: number) {
    for (const entry of this.entries.values()) {
      if (entry.chat === chat && entry.messages.includes(messageId)) return entry;
    }
    return undefined;
  }
  setState(id: string, state: MessageState, by: Sender, at: string): Promise<void> {
    this.sets.push({ id, state, by, at });
    const entry = this.entries.get(id);
    if (entry !== undefined) {
      this.entries.set(id, { ...entry, state, byName: by.name, at });
    }
    return Promise.resolve();
  }
}

/**
 * A block list that records the blocks it made and lifted; idempotent like the real one
 * (lib/spam/block_store.ts): blocking a submission that blocks already, or lifting one that does
 * not, makes nothing.
 */
class FakeBlocks implements InboxBlocks {
  readonly period = "30 days";
  /** The submissions whose blocks hold. */
  readonly active = new Set<string>();
  readonly blocked: { entry: { id: string; ip: string; contact: string }; by: number }[] = [];
  readonly lifted: string[] = [];
  /** The next call of this kind fails (the block file could not be written). */
  failNext: "block" | "lift" | undefined;
  block(entry: { readonly id: string; readonly ip: string; readonly contact: string }, by: number) {
    if (this.failNext === "block") {
      this.failNext = undefined;
      return Promise.reject(new Deno.errors.PermissionDenied("block file not writable"));
    }
    if (this.active.has(entry.id)) return Promise.resolve(0);
    this.active.add(entry.id);
    this.blocked.push({ entry: { id: entry.id, ip: entry.ip, contact: entry.contact }, by });
    return Promise.resolve(entry.contact === "" ? 1 : 2);
  }
  lift(id: string) {
    if (this.failNext === "lift") {
      this.failNext = undefined;
      return Promise.reject(new Deno.errors.PermissionDenied("block file not writable"));
    }
    if (!this.active.delete(id)) return Promise.resolve(0);
    this.lifted.push(id);
    return Promise.resolve(2);
  }
}

function entry(overrides: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    id: ID,
    chat: GROUP,
    buttons: [FIRST],
    messages: [FIRST, SECOND],
    state: "open",
    ip: IP,
    contact: CONTACT,
    ts: "2026-11-25T18:00:00.000Z",
    ...overrides,
  };
}

const REPORT: StatusReport = {
  delivery: { state: "outage" },
  pending: 2,
  oldestMs: 3_600_000,
  replies: undefined,
  last24h: { delivered: 5, heldSpam: 1, rateLimited: 4 },
};
const PENDING: PendingItem[] = [
  { kind: "message", id: "a1", ageMs: 60_000, attempts: 0 },
  { kind: "message", id: "b2", ageMs: 3_600_000, attempts: 3 },
];

interface Setup {
  by?: ChatActionsBy;
  chats?: number[];
  entries?: LedgerEntry[];
  reply?: ((request: ReplyRequest) => Promise<string>) | "none";
  trusted?: Cidr[];
}

function setup(options: Setup = {}) {
  const api = new FakeChatApi();
  const ledger = new MemoryLedger();
  for (const e of options.entries ?? [entry()]) ledger.add(e);
  const blocks = new FakeBlocks();
  const lines: { level: LogLevel; fields: LogFields }[] = [];
  const replies: ReplyRequest[] = [];
  let statusAsked = 0;
  let pendingAsked = 0;
  /** The chats /status and /pending were asked for. */
  const askedFor: number[] = [];
  const reply = options.reply === "none" ? undefined : options.reply ??
    ((request: ReplyRequest) => {
      replies.push(request);
      return Promise.resolve("✉️ Sent to the sender.");
    });
  const deps: InboxDeps = {
    api,
    ledger,
    blocks,
    chats: new Set(options.chats ?? [GROUP]),
    by: options.by ?? "members",
    status: (chat) => (statusAsked++, askedFor.push(chat), REPORT),
    pending: (chat) => (pendingAsked++, askedFor.push(chat), PENDING),
    ...(options.trusted === undefined ? {} : { trusted: options.trusted }),
    ...(reply === undefined ? {} : { reply }),
    now: () => NOW,
    log: (level, fields) => lines.push({ level, fields }),
  };
  const inbox = new Inbox(deps);
  return {
    inbox,
    api,
    ledger,
    blocks,
    lines,
    replies,
    asked: () => ({ status: statusAsked, pending: pendingAsked }),
    askedFor,
    events: () => lines.map((line) => line.fields.event),
  };
}

function press(overrides: Partial<PressEvent> = {}): PressEvent {
  return {
    kind: "press",
    updateId: 900,
    queryId: "q-1",
    chatId: GROUP,
    messageId: FIRST,
    from: OWNER,
    data: `s:${ID}`,
    text: TEXT,
    ...overrides,
  };
}

function commandEvent(overrides: Partial<CommandEvent> = {}): CommandEvent {
  return {
    kind: "command",
    updateId: 901,
    chatId: GROUP,
    messageId: 777,
    topicId: 9,
    from: OWNER,
    command: "status",
    ...overrides,
  };
}

/** A reply; `replyToBot` may be missing from ReplyEvent's type until the lead adds it. */
function replyEvent(
  overrides: Partial<ReplyEvent> & { replyToBot?: boolean } = {},
): ReplyEvent {
  return {
    kind: "reply",
    updateId: 902,
    chatId: GROUP,
    messageId: 778,
    topicId: 9,
    from: OWNER,
    text: "Thanks, I will call you tomorrow.",
    replyTo: FIRST,
    replyToBot: true,
    ...overrides,
  } as ReplyEvent;
}

/** Nothing changed: no state written, no block made or lifted, no edit. */
function assertNothingChanged(s: ReturnType<typeof setup>): void {
  assert.deepEqual(s.ledger.sets, []);
  assert.deepEqual(s.blocks.blocked, []);
  assert.deepEqual(s.blocks.lifted, []);
  assert.deepEqual(s.api.of("edit"), []);
}

/** No log line carries the sender's or presser's data, the message, or the address. */
function assertNoPersonalData(lines: readonly { fields: LogFields }[]): void {
  for (const line of lines) {
    const json = JSON.stringify(line);
    for (
      const secret of [
        IP,
        CONTACT,
        SENDER_NAME,
        BODY,
        OWNER.name,
        OTHER_MEMBER.name,
        "Elm Street",
        "anna",
        "Olga",
        "call you tomorrow",
      ]
    ) {
      assert.ok(!json.toLowerCase().includes(secret.toLowerCase()), `${secret} in ${json}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Presses: the transitions

Deno.test("Handled on an open notification marks it, toasts, and edits in the state line and Reopen", async () => {
  const s = setup();
  await s.inbox.handle(press({ data: `h:${ID}` }));
  assert.deepEqual(s.ledger.sets, [{ id: ID, state: "handled", by: OWNER, at: AT }]);
  assert.deepEqual(s.api.of("toast"), [{
    op: "toast",
    queryId: "q-1",
    text: TRANSITIONS.handled.toast,
  }]);
  assert.deepEqual(s.api.of("edit"), [{
    op: "edit",
    chat: GROUP,
    messageId: FIRST,
    text: withStateLine(TEXT, stateLine("handled", OWNER.name, AT)),
    markup: keyboardFor("handled", ID),
  }]);
  assert.match(s.api.of("edit")[0]!.text!, /\n\n— ✓ Handled by Olga Owner, 2026-11-25 18:40 UTC$/);
  assert.deepEqual(s.lines, [{
    level: "info",
    fields: { event: "marked_handled", id: ID, update_id: 900 },
  }]);
  assert.deepEqual(s.blocks.blocked, []);
  assert.deepEqual(s.blocks.lifted, []);
});

Deno.test("open → handled → open: Reopen brings the open keyboard back", async () => {
  const s = setup();
  await s.inbox.handle(press({ data: `h:${ID}` }));
  const handledText = s.api.of("edit")[0]!.text!;
  await s.inbox.handle(
    press({ updateId: 901, queryId: "q-2", data: `o:${ID}`, text: handledText }),
  );
  assert.deepEqual(s.ledger.sets.map((set) => set.state), ["handled", "open"]);
  assert.equal(s.ledger.get(ID)!.state, "open");
  const reopened = s.api.of("edit")[1]!;
  assert.deepEqual(reopened.markup, keyboardFor("open", ID));
  // The state line is replaced, not added to.
  assert.equal(reopened.text, withStateLine(TEXT, stateLine("open", OWNER.name, AT)));
  assert.equal(reopened.text!.match(/— /g)?.length, 1);
  assert.equal(s.api.of("toast")[1]!.text, TRANSITIONS.reopen.toast);
  assert.deepEqual(s.events(), ["marked_handled", "reopened"]);
});

Deno.test("Spam blocks the sender's address and contact, says for how long, and shows Not spam", async () => {
  const s = setup();
  await s.inbox.handle(press({ data: `s:${ID}` }));
  assert.deepEqual(s.ledger.sets, [{ id: ID, state: "spam", by: OWNER, at: AT }]);
  assert.deepEqual(s.blocks.blocked, [{
    entry: { id: ID, ip: IP, contact: CONTACT },
    by: OWNER.id,
  }]);
  assert.deepEqual(s.api.of("toast"), [{
    op: "toast",
    queryId: "q-1",
    text: `${TRANSITIONS.spam.toast} for 30 days.`,
  }]);
  const edit = s.api.of("edit")[0]!;
  assert.deepEqual(edit.markup, keyboardFor("spam", ID));
  assert.match(edit.text!, /— 🚫 Spam by Olga Owner, 2026-11-25 18:40 UTC$/);
  // `blocked` is the block list's line (with the kinds of block, never their keys).
  assert.deepEqual(s.lines.map((line) => line.fields), [
    { event: "marked_spam", id: ID, update_id: 900 },
  ]);
});

Deno.test("open → spam → open: Not spam lifts the blocks and reopens", async () => {
  const s = setup();
  await s.inbox.handle(press({ data: `s:${ID}` }));
  await s.inbox.handle(press({ updateId: 901, queryId: "q-2", data: `n:${ID}` }));
  assert.deepEqual(s.ledger.sets.map((set) => set.state), ["spam", "open"]);
  assert.deepEqual(s.blocks.lifted, [ID]);
  assert.equal(s.blocks.blocked.length, 1);
  assert.equal(s.api.of("toast")[1]!.text, TRANSITIONS.not_spam.toast);
  assert.deepEqual(s.api.of("edit")[1]!.markup, keyboardFor("open", ID));
  // `unblocked` is the block list's line.
  assert.deepEqual(s.lines.slice(1).map((line) => line.fields), [
    { event: "marked_not_spam", id: ID, update_id: 901 },
  ]);
});

Deno.test("a press repeating the state changes nothing: no second state, no second block, 'Already' toast", async () => {
  const s = setup({ entries: [entry({ state: "spam" })] });
  s.blocks.active.add(ID); // blocked when it was marked
  await s.inbox.handle(press({ data: `s:${ID}` }));
  assert.deepEqual(s.ledger.sets, []);
  assert.deepEqual(s.blocks.blocked, []);
  assert.deepEqual(s.lines, [], "no new log line");
  assert.deepEqual(s.api.of("toast"), [{
    op: "toast",
    queryId: "q-1",
    text: "Already marked as spam.",
  }]);
  // Still edited (idempotent): a keyboard left by a failed edit is set right.
  assert.deepEqual(s.api.of("edit").map((edit) => edit.markup), [keyboardFor("spam", ID)]);

  const handled = setup({ entries: [entry({ state: "handled" })] });
  await handled.inbox.handle(press({ data: `h:${ID}` }));
  assert.deepEqual(handled.ledger.sets, []);
  assert.equal(handled.api.of("toast")[0]!.text, "Already marked as handled.");
  assert.deepEqual(handled.api.of("edit")[0]!.markup, keyboardFor("handled", ID));

  const open = setup();
  await open.inbox.handle(press({ data: `n:${ID}` }));
  assert.deepEqual(open.blocks.lifted, [], "no lift for a repeated Not spam");
  assert.equal(open.api.of("toast")[0]!.text, "Already open.");
  assert.deepEqual(open.api.of("edit")[0]!.markup, keyboardFor("open", ID));
});

Deno.test("the same press twice (a redelivery) blocks once", async () => {
  const s = setup();
  await s.inbox.handle(press({ data: `s:${ID}` }));
  await s.inbox.handle(press({ data: `s:${ID}` }));
  assert.equal(s.blocks.blocked.length, 1);
  assert.equal(s.ledger.sets.length, 1);
  assert.deepEqual(s.events(), ["marked_spam"]);
  assert.equal(s.api.of("edit").length, 2);
});

Deno.test("a Spam press whose block could not be written blocks when pressed again", async () => {
  const s = setup();
  s.blocks.failNext = "block";
  await Promise.allSettled([s.inbox.handle(press({ data: `s:${ID}` }))]); // not saved
  await s.inbox.handle(press({ updateId: 901, queryId: "q-2", data: `s:${ID}` }));
  assert.deepEqual(s.blocks.blocked.map((made) => made.entry), [{
    id: ID,
    ip: IP,
    contact: CONTACT,
  }]);
});

Deno.test("a Not spam press whose lift could not be written lifts when pressed again", async () => {
  const s = setup({ entries: [entry({ state: "spam" })] });
  s.blocks.active.add(ID);
  s.blocks.failNext = "lift";
  await Promise.allSettled([s.inbox.handle(press({ data: `n:${ID}` }))]); // failed, either way
  await s.inbox.handle(press({ updateId: 901, queryId: "q-2", data: `n:${ID}` }));
  assert.deepEqual(s.blocks.lifted, [ID]);
});

Deno.test("a repeated press keeps who set the state and when in the state line", async () => {
  const s = setup({
    entries: [entry({ state: "spam", byName: OWNER.name, at: "2026-11-24 09:15 UTC" })],
  });
  await s.inbox.handle(press({ from: OTHER_MEMBER, data: `s:${ID}` }));
  assert.match(s.api.of("edit")[0]!.text!, /— 🚫 Spam by Olga Owner, 2026-11-24 09:15 UTC$/);
});

Deno.test("a button of another state is stale: refused with its toast, nothing changes", async () => {
  for (
    const [state, data] of [["handled", `s:${ID}`], ["spam", `h:${ID}`], ["spam", `o:${ID}`]] as [
      MessageState,
      string,
    ][]
  ) {
    const s = setup({ entries: [entry({ state })] });
    await s.inbox.handle(press({ data }));
    assertNothingChanged(s);
    assert.deepEqual(s.api.of("toast"), [{
      op: "toast",
      queryId: "q-1",
      text: REFUSAL_TOASTS.stale,
    }]);
    assert.deepEqual(s.lines, [{
      level: "info",
      fields: { event: "action_refused", result: "stale", update_id: 900, id: ID },
    }]);
  }
});

// ---------------------------------------------------------------------------------------------
// Presses: where they come from

async function assertRefused(
  event: PressEvent,
  reason: keyof typeof REFUSAL_TOASTS,
  id: string | undefined,
  options: Setup = {},
): Promise<ReturnType<typeof setup>> {
  const s = setup(options);
  await s.inbox.handle(event);
  assertNothingChanged(s);
  assert.deepEqual(s.api.of("toast"), [{
    op: "toast",
    queryId: event.queryId,
    text: REFUSAL_TOASTS[reason],
  }], `${reason}: ${event.data}`);
  assert.deepEqual(s.lines, [{
    level: "info",
    fields: {
      event: "action_refused",
      result: reason,
      update_id: event.updateId,
      ...(id === undefined ? {} : { id }),
    },
  }], `${reason}: ${event.data}`);
  return s;
}

Deno.test("a press from another chat changes nothing and is refused as wrong_chat", async () => {
  await assertRefused(press({ chatId: ELSEWHERE }), "wrong_chat", ID);
  // Even when that other chat is one contactd notifies too.
  await assertRefused(press({ chatId: ELSEWHERE }), "wrong_chat", ID, {
    chats: [GROUP, ELSEWHERE],
  });
});

Deno.test("a press on a second part is refused as not_notification", async () => {
  await assertRefused(press({ messageId: SECOND }), "not_notification", ID);
});

Deno.test("a press on an unrelated message is refused as not_notification", async () => {
  await assertRefused(press({ messageId: 4242 }), "not_notification", ID);
  // Another submission's first message with this submission's callback_data.
  await assertRefused(press({ messageId: 600 }), "not_notification", ID, {
    entries: [entry(), entry({ id: "other-1", buttons: [600], messages: [600] })],
  });
});

Deno.test("forged callback_data is refused as forged, without an id", async () => {
  for (
    const data of [
      "",
      "x:k3J9x-Qa",
      "spam:k3J9x-Qa",
      "s:",
      "s:k3J9x-Qa\n",
      " s:k3J9x-Qa",
      "s:k3J9x-Qa:extra",
      "s:../../etc",
      "S:k3J9x-Qa",
      `s:${"a".repeat(41)}`,
      '{"action":"spam"}',
    ]
  ) {
    await assertRefused(press({ data }), "forged", undefined);
  }
});

Deno.test("a press naming a submission the ledger does not know is refused as unknown", async () => {
  await assertRefused(press({ data: "s:gone-42" }), "unknown_submission", "gone-42");
});

Deno.test("a refused press never asks who is an administrator", async () => {
  const s = await assertRefused(press({ chatId: ELSEWHERE }), "wrong_chat", ID, { by: "admins" });
  assert.deepEqual(s.api.of("isAdmin"), []);
});

// ---------------------------------------------------------------------------------------------
// Who may press

Deno.test("CHAT_ACTIONS_BY=admins refuses a non-administrator's press in a group", async () => {
  const s = await assertRefused(press({ from: OTHER_MEMBER }), "not_admin", ID, { by: "admins" });
  assert.deepEqual(s.api.of("isAdmin"), [{ op: "isAdmin", chat: GROUP, user: OTHER_MEMBER.id }]);
});

Deno.test("CHAT_ACTIONS_BY=admins honours an administrator's press in a group", async () => {
  const s = setup({ by: "admins" });
  s.api.admins.add(OWNER.id);
  await s.inbox.handle(press({ data: `h:${ID}` }));
  assert.deepEqual(s.ledger.sets.map((set) => set.state), ["handled"]);
  assert.deepEqual(s.api.of("isAdmin"), [{ op: "isAdmin", chat: GROUP, user: OWNER.id }]);
});

Deno.test("CHAT_ACTIONS_BY=admins lets anyone press in a private chat, without asking", async () => {
  const s = setup({ by: "admins", entries: [entry({ chat: OWNER.id })], chats: [OWNER.id] });
  await s.inbox.handle(press({ chatId: OWNER.id, data: `s:${ID}` }));
  assert.deepEqual(s.ledger.sets.map((set) => set.state), ["spam"]);
  assert.equal(s.blocks.blocked.length, 1);
  assert.deepEqual(s.api.of("isAdmin"), []);
});

Deno.test("CHAT_ACTIONS_BY=members lets any member of the group press, without asking", async () => {
  const s = setup({ by: "members" });
  await s.inbox.handle(press({ from: OTHER_MEMBER, data: `h:${ID}` }));
  assert.deepEqual(s.ledger.sets, [{ id: ID, state: "handled", by: OTHER_MEMBER, at: AT }]);
  assert.deepEqual(s.api.of("isAdmin"), []);
  assert.match(s.api.of("edit")[0]!.text!, /Handled by Max Member/);
});

// ---------------------------------------------------------------------------------------------
// The edit and the toast

Deno.test("a press that did not carry the message's text edits the buttons only", async () => {
  const s = setup();
  const { text: _text, ...withoutText } = press({ data: `h:${ID}` });
  await s.inbox.handle(withoutText);
  const [edit] = s.api.of("edit");
  assert.equal(edit!.text, undefined);
  assert.deepEqual(edit!.markup, keyboardFor("handled", ID));
});

Deno.test("an edit answered 'message is not modified' logs nothing", async () => {
  const s = setup({ entries: [entry({ state: "handled" })] });
  s.api.editResult = {
    ok: false,
    error:
      "400 Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
    errorCode: 400,
  };
  await s.inbox.handle(press({ data: `h:${ID}` }));
  assert.equal(s.api.of("edit").length, 1);
  assert.deepEqual(s.lines, []);
});

Deno.test("another edit failure logs action_edit_failed, and the state stays changed", async () => {
  const s = setup();
  s.api.editResult = {
    ok: false,
    error: "400 Bad Request: message to edit not found",
    errorCode: 400,
  };
  await s.inbox.handle(press({ data: `h:${ID}` }));
  assert.deepEqual(s.ledger.sets.map((set) => set.state), ["handled"]);
  assert.deepEqual(s.lines.map((line) => [line.level, line.fields]), [
    ["info", { event: "marked_handled", id: ID, update_id: 900 }],
    ["warn", {
      event: "action_edit_failed",
      id: ID,
      error: "400 Bad Request: message to edit not found",
    }],
  ]);
});

Deno.test("a toast that fails is logged chat_answer_failed and the edit is still made", async () => {
  const s = setup();
  s.api.toastResult = { ok: false, error: "400 Bad Request: query is too old", errorCode: 400 };
  await s.inbox.handle(press({ data: `h:${ID}` }));
  assert.equal(s.api.of("edit").length, 1);
  assert.deepEqual(s.lines[1], {
    level: "warn",
    fields: {
      event: "chat_answer_failed",
      what: "toast",
      error: "400 Bad Request: query is too old",
      id: ID,
    },
  });
});

Deno.test("the state line's time is the wall clock's, in UTC to the minute", () => {
  assert.equal(formatUtc(NOW), AT);
  assert.equal(formatUtc(Date.parse("2026-01-02T03:04:59.999Z")), "2026-01-02 03:04 UTC");
});

// ---------------------------------------------------------------------------------------------
// Commands

Deno.test("/status is answered in the same chat and topic, as a reply to the command", async () => {
  const s = setup();
  await s.inbox.handle(commandEvent({ command: "status" }));
  assert.deepEqual(s.api.of("say"), [{
    op: "say",
    chat: GROUP,
    text: statusText(REPORT),
    at: { topicId: 9, replyTo: 777 },
  }]);
  assert.deepEqual(s.lines.map((line) => line.fields), [{
    event: "command_answered",
    command: "status",
  }]);
  assert.deepEqual(s.asked(), { status: 1, pending: 0 });
  assertNothingChanged(s);
});

Deno.test("/pending is answered with the list, as a reply, outside a topic when there is none", async () => {
  const s = setup();
  const { topicId: _topic, ...outsideTopics } = commandEvent({ command: "pending" });
  await s.inbox.handle(outsideTopics);
  const [said] = s.api.of("say");
  assert.equal(said!.text, pendingText(PENDING));
  assert.deepEqual(said!.at, { replyTo: 777 });
  assert.equal("topicId" in said!.at, false);
  assert.deepEqual(s.asked(), { status: 0, pending: 1 });
});

Deno.test("a command from a chat contactd does not notify gets no answer and one refused line", async () => {
  const s = setup();
  await s.inbox.handle(commandEvent({ chatId: ELSEWHERE }));
  assert.deepEqual(s.api.calls, []);
  assert.deepEqual(s.asked(), { status: 0, pending: 0 });
  assert.deepEqual(s.lines, [{
    level: "info",
    fields: { event: "action_refused", result: "wrong_chat", update_id: 901 },
  }]);
});

Deno.test("CHAT_ACTIONS_BY=admins: a non-administrator's command in a group gets no answer", async () => {
  const s = setup({ by: "admins" });
  await s.inbox.handle(commandEvent({ from: OTHER_MEMBER, command: "pending" }));
  assert.deepEqual(s.api.of("say"), []);
  assert.deepEqual(s.asked(), { status: 0, pending: 0 });
  assert.deepEqual(s.lines.map((line) => line.fields), [
    { event: "action_refused", result: "not_admin", update_id: 901 },
  ]);
  s.api.admins.add(OWNER.id);
  await s.inbox.handle(commandEvent({ command: "pending" }));
  assert.equal(s.api.of("say").length, 1);
});

Deno.test("a command answer that fails is logged chat_answer_failed", async () => {
  const s = setup();
  s.api.sayResult = { ok: false, error: "403 Forbidden: bot was kicked", errorCode: 403 };
  await s.inbox.handle(commandEvent());
  assert.deepEqual(s.lines.at(-1)!.fields, {
    event: "chat_answer_failed",
    what: "command_answer",
    error: "403 Forbidden: bot was kicked",
  });
});

// ---------------------------------------------------------------------------------------------
// Replies

Deno.test("a reply to a notification's first part goes to the reply desk and its answer is said", async () => {
  const s = setup();
  const event = replyEvent();
  await s.inbox.handle(event);
  assert.deepEqual(s.replies, [{ event, submission: ID }]);
  assert.deepEqual(s.api.of("say"), [{
    op: "say",
    chat: GROUP,
    text: "✉️ Sent to the sender.",
    at: { topicId: 9, replyTo: 778 },
  }]);
  assertNothingChanged(s);
});

Deno.test("a reply to any part of a notification counts, the second part too", async () => {
  const s = setup();
  const { topicId: _topic, ...outsideTopics } = replyEvent({ replyTo: SECOND });
  await s.inbox.handle(outsideTopics);
  assert.deepEqual(s.replies.map((request) => request.submission), [ID]);
  assert.deepEqual(s.api.of("say")[0]!.at, { replyTo: 778 });
});

Deno.test("a reply to the bot's message that is no notification is told so", async () => {
  const s = setup();
  await s.inbox.handle(replyEvent({ replyTo: 4242, replyToBot: true }));
  assert.deepEqual(s.replies, []);
  assert.deepEqual(s.api.of("say"), [{
    op: "say",
    chat: GROUP,
    text: NOT_A_NOTIFICATION,
    at: { topicId: 9, replyTo: 778 },
  }]);
  assert.deepEqual(s.lines.map((line) => line.fields), [
    { event: "action_refused", result: "not_notification", update_id: 902 },
  ]);
});

Deno.test("a reply in another chat to a notification's message id is not a notification", async () => {
  const s = setup({ chats: [GROUP, ELSEWHERE] });
  await s.inbox.handle(replyEvent({ chatId: ELSEWHERE, replyTo: FIRST, replyToBot: true }));
  assert.deepEqual(s.replies, []);
  assert.deepEqual(s.api.of("say").map((said) => said.text), [NOT_A_NOTIFICATION]);
});

Deno.test("a reply to someone else's message is ignored silently", async () => {
  const s = setup();
  await s.inbox.handle(replyEvent({ replyTo: 4242, replyToBot: false }));
  assert.deepEqual(s.api.calls, []);
  assert.deepEqual(s.replies, []);
  assert.deepEqual(s.lines, []);
});

Deno.test("without replies by email, a reply to a notification is told NO_REPLIES", async () => {
  const s = setup({ reply: "none" });
  await s.inbox.handle(replyEvent());
  assert.deepEqual(s.api.of("say").map((said) => [said.text, said.at]), [
    [NO_REPLIES, { topicId: 9, replyTo: 778 }],
  ]);
});

Deno.test("CHAT_ACTIONS_BY=admins: a non-administrator's reply is refused and not emailed", async () => {
  const s = setup({ by: "admins" });
  await s.inbox.handle(replyEvent({ from: OTHER_MEMBER }));
  assert.deepEqual(s.replies, []);
  assert.deepEqual(s.api.of("say").map((said) => said.text), [REFUSAL_TOASTS.not_admin]);
  assert.deepEqual(s.lines.map((line) => line.fields), [
    { event: "action_refused", result: "not_admin", id: ID },
  ]);
});

Deno.test("other updates are ignored: no call, no line", async () => {
  const s = setup();
  await s.inbox.handle({ kind: "other", updateId: 903 } satisfies ChatEvent);
  assert.deepEqual(s.api.calls, []);
  assert.deepEqual(s.lines, []);
});

// ---------------------------------------------------------------------------------------------
// Logs

Deno.test("log lines name submission ids only: no address, contact, name or text", async () => {
  const s = setup({ by: "admins", chats: [GROUP] });
  s.api.admins.add(OWNER.id);
  s.api.editResult = {
    ok: false,
    error: "400 Bad Request: message to edit not found",
    errorCode: 400,
  };
  const events: ChatEvent[] = [
    press({ data: `s:${ID}` }),
    press({ data: `s:${ID}` }),
    press({ data: `n:${ID}` }),
    press({ data: `h:${ID}` }),
    press({ data: `s:${ID}` }),
    press({ data: `o:${ID}` }),
    press({ chatId: ELSEWHERE }),
    press({ messageId: SECOND }),
    press({ data: `forged by ${SENDER_NAME}` }),
    press({ data: "s:unknown" }),
    press({ from: OTHER_MEMBER }),
    commandEvent(),
    commandEvent({ command: "pending" }),
    commandEvent({ chatId: ELSEWHERE }),
    commandEvent({ from: OTHER_MEMBER }),
    replyEvent(),
    replyEvent({ replyTo: 4242 }),
    replyEvent({ from: OTHER_MEMBER }),
  ];
  for (const event of events) await s.inbox.handle(event);
  for (
    const name of [
      "marked_spam",
      "marked_not_spam",
      "marked_handled",
      "reopened",
      "action_refused",
      "action_edit_failed",
      "command_answered",
    ]
  ) {
    assert.ok(s.events().includes(name), name);
  }
  assertNoPersonalData(s.lines);
  for (const line of s.lines) {
    for (const value of Object.values(line.fields)) {
      assert.ok(
        value === undefined || ["string", "number"].includes(typeof value),
        JSON.stringify(line),
      );
    }
  }
});

Deno.test("a press in a chat contactd no longer notifies (a form's chat changed) acts on nothing", async () => {
  // The ledger still names the old group; the settings no longer do.
  await assertRefused(press(), "wrong_chat", ID, { chats: [ELSEWHERE] });
});

Deno.test("CHAT_ACTIONS_BY=admins: a non-administrator's reply to a bot message that is no notification gets no answer", async () => {
  const s = setup({ by: "admins" });
  await s.inbox.handle(replyEvent({ replyTo: 9999, replyToBot: true, from: OTHER_MEMBER }));
  assert.deepEqual(s.api.of("say"), []);
  assert.deepEqual(s.replies, []);
});

// ---------------------------------------------------------------------------------------------
// Issue 30: one press never silences the site, answers within budgets, nothing lost unsaved

Deno.test("a Spam press whose block cannot be written is answered 'not saved' and is not confirmed (UpdateNotSaved)", async () => {
  const s = setup();
  s.blocks.failNext = "block";
  await assert.rejects(() => s.inbox.handle(press({ data: `s:${ID}` })), UpdateNotSaved);
  assert.deepEqual(s.api.of("toast").map((toast) => toast.text), [NOT_SAVED]);
  assert.deepEqual(s.ledger.sets, [], "no state without its effect");
  assert.deepEqual(s.api.of("edit"), []);
  assert.ok(s.lines.some((line) => line.fields.event === "action_not_saved"));
});

Deno.test("a press whose state cannot be written is answered 'not saved' and is not confirmed", async () => {
  const s = setup();
  s.ledger.setState = () => Promise.reject(new Error("ENOSPC: no space left on device"));
  await assert.rejects(() => s.inbox.handle(press({ data: `h:${ID}` })), UpdateNotSaved);
  assert.deepEqual(s.api.of("toast").map((toast) => toast.text), [NOT_SAVED]);
});

const PROXY: Cidr[] = [parseCidr("10.8.0.0/16")!, parseCidr("127.0.0.1/8")!];

for (
  const [ip, withheld] of [
    ["127.0.0.1", "loopback"],
    ["::1", "loopback"],
    ["10.8.8.8", "trusted_proxy"],
    ["unknown", "not_an_address"],
  ] as const
) {
  Deno.test(`a Spam press on a submission from ${ip} blocks its contact only, and the toast says so`, async () => {
    const s = setup({ entries: [entry({ ip })], trusted: PROXY });
    await s.inbox.handle(press({ data: `s:${ID}` }));
    assert.deepEqual(s.blocks.blocked.map((made) => made.entry), [{
      id: ID,
      ip: "",
      contact: CONTACT,
    }]);
    assert.deepEqual(s.api.of("toast").map((toast) => toast.text), [
      spamToast(withheld, true, "30 days"),
    ]);
    assert.match(s.api.of("toast")[0]!.text, /its contact is blocked for 30 days, not its address/);
  });
}

Deno.test("a member's 200 replies in a group with CHAT_ACTIONS_BY=admins get one refusal in the chat", async () => {
  const s = setup({ by: "admins" });
  for (let i = 0; i < 200; i++) {
    await s.inbox.handle(
      replyEvent({ updateId: 1000 + i, messageId: 2000 + i, from: OTHER_MEMBER }),
    );
  }
  assert.deepEqual(s.api.of("say").map((said) => said.text), [REFUSAL_TOASTS.not_admin]);
  assert.deepEqual(s.replies, []);
});

Deno.test("a member's 200 refused presses get one toast", async () => {
  const s = setup({ by: "admins" });
  for (let i = 0; i < 200; i++) {
    await s.inbox.handle(press({ updateId: 1000 + i, queryId: `q-${i}`, from: OTHER_MEMBER }));
  }
  assert.deepEqual(s.api.of("toast").map((toast) => toast.text), [REFUSAL_TOASTS.not_admin]);
});

Deno.test("300 /status commands under CHAT_ACTIONS_BY=members are answered within the person's and the chat's budgets", async () => {
  const s = setup();
  // One member, then many members: a person's budget, then the chat's.
  for (let i = 0; i < 300; i++) {
    await s.inbox.handle(commandEvent({ updateId: 1000 + i, from: OTHER_MEMBER }));
  }
  assert.equal(s.api.of("say").length, ANSWER_LIMITS.person.count);
  for (let i = 0; i < 300; i++) {
    await s.inbox.handle(
      commandEvent({ updateId: 2000 + i, from: { id: 10_000 + i, name: `Member ${i}` } }),
    );
  }
  assert.equal(s.api.of("say").length, ANSWER_LIMITS.chat.count);
  assert.ok(s.lines.some((line) => line.fields.result === "answer_withheld"));
});

Deno.test("/status and /pending are asked for the chat they were written in", async () => {
  const s = setup({ chats: [GROUP, ELSEWHERE] });
  await s.inbox.handle(commandEvent({ command: "status", chatId: ELSEWHERE }));
  await s.inbox.handle(commandEvent({ command: "pending", chatId: GROUP }));
  assert.deepEqual(s.askedFor, [ELSEWHERE, GROUP]);
});
