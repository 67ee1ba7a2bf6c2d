/**
 * The chat ledger's lines and their fold, pure: the file an older release kept
 * (`MESSAGES_FILE.chat`, read for the import by lib/storage/ledger.ts `readLedger`): what contactd
 * sent to the chat for each submission (one `sent` line per part, or one `entry` line per entry
 * after a compaction), the state the owner set (`state`), and the messages erasure asked the bot
 * to delete (`delete`, chat and message ids only, never a submission id, then `deleted`). The
 * fold's types and its deletion helpers are also the running ledger's in memory
 * (lib/storage/ledger.ts).
 *
 * @module
 */
import { isRecord, parseJsonText } from "../common/json.ts";

/** What the owner made of a submission in the chat. */
export type MessageState = "open" | "handled" | "spam";

/** The states, as the ledger's lines name them. */
export const MESSAGE_STATES: readonly MessageState[] = ["open", "handled", "spam"];

/** What contactd sent to the chat for one submission, and what the owner made of it. */
export interface LedgerEntry {
  /** The submission's id. */
  readonly id: string;
  /** The submission's `ts` (retention cuts by it). */
  readonly ts: string;
  readonly chat: number;
  /** Message ids of first parts (the ones with the keyboard); a redelivery adds one. */
  readonly buttons: readonly number[];
  /** Every part's message id, the first parts' included. */
  readonly messages: readonly number[];
  readonly form?: string;
  readonly ip: string;
  readonly contact: string;
  /** `open` until the owner sets another. */
  readonly state: MessageState;
  /** Who set the state (Telegram user id and name), and when. */
  readonly by?: number;
  readonly byName?: string;
  readonly at?: string;
}

/** One part of a notification sent: what {@linkcode sentLine} writes. */
export interface SentPart {
  id: string;
  ts: string;
  chat: number;
  messageId: number;
  /** The first part of its notification (it carries the keyboard). */
  first: boolean;
  form?: string;
  ip: string;
  contact: string;
}

/** Messages the bot is to delete from one chat (erasure). */
export interface ChatDeletion {
  readonly chat: number;
  readonly messages: readonly number[];
}

/** The ledger as its lines fold up. */
export interface LedgerFold {
  /** Live entries by submission id, in the order they were first sent. */
  readonly entries: Map<string, LedgerEntry>;
  /** Deletions waiting, one per chat, message ids in order, none twice. */
  readonly pending: Map<number, number[]>;
}

/** An empty fold. */
export function emptyFold(): LedgerFold {
  return { entries: new Map(), pending: new Map() };
}

/** The `sent` line of one part. */
export function sentLine(part: SentPart): string {
  const { id, ts, chat, messageId, first, form, ip, contact } = part;
  return JSON.stringify({
    op: "sent",
    id,
    ts,
    chat,
    message: messageId,
    first,
    ...(form === undefined ? {} : { form }),
    ip,
    contact,
  }) + "\n";
}

/** The `state` line: `id` set to `state` by Telegram user `by` at `at`. */
export function stateLine(
  id: string,
  state: MessageState,
  by: { readonly id: number; readonly name: string },
  at: string,
): string {
  return JSON.stringify({ op: "state", id, state, by: by.id, by_name: by.name, at }) + "\n";
}

/** The `delete` line of one chat's messages (no submission id: erased data must not remain). */
export function deleteLine(deletion: ChatDeletion): string {
  return JSON.stringify({ op: "delete", chat: deletion.chat, messages: deletion.messages }) + "\n";
}

/** The `deleted` line: the bot tried these deletions (done, or failed for good). */
export function deletedLine(deletion: ChatDeletion): string {
  return JSON.stringify({ op: "deleted", chat: deletion.chat, messages: deletion.messages }) + "\n";
}

/** The compacted line of one entry, its parts and its state folded in. */
export function entryLine(entry: LedgerEntry): string {
  const { id, ts, chat, buttons, messages, form, ip, contact, state, by, byName, at } = entry;
  return JSON.stringify({
    op: "entry",
    id,
    ts,
    chat,
    buttons,
    messages,
    ...(form === undefined ? {} : { form }),
    ip,
    contact,
    state,
    ...(by === undefined ? {} : { by }),
    ...(byName === undefined ? {} : { by_name: byName }),
    ...(at === undefined ? {} : { at }),
  }) + "\n";
}

/** The deletions waiting in a fold. */
export function pendingDeletions(fold: LedgerFold): ChatDeletion[] {
  return [...fold.pending].map(([chat, messages]) => ({ chat, messages: [...messages] }));
}

/** What one line did to a fold. */
export type LineOutcome = "applied" | "damaged" | "skipped";

/**
 * Applies one whole line (without its line break) to `fold`: `damaged` when it is not a JSON
 * object or an op misses a field, `skipped` for an op this version does not know (a later
 * version's) or one that names nothing held (a state of an entry gone).
 */
export function applyLine(fold: LedgerFold, line: string): LineOutcome {
  const value = parseJsonText(line);
  if (!isRecord(value)) return "damaged";
  switch (value.op) {
    case "sent": {
      const part = _sentPart(value);
      if (part === undefined) return "damaged";
      addPart(fold, part);
      return "applied";
    }
    case "entry": {
      const entry = _entry(value);
      if (entry === undefined) return "damaged";
      fold.entries.set(entry.id, entry);
      return "applied";
    }
    case "state": {
      const { id, state, by, by_name: byName, at } = value;
      if (
        typeof id !== "string" || !(MESSAGE_STATES as readonly unknown[]).includes(state) ||
        !Number.isSafeInteger(by) || typeof byName !== "string" || typeof at !== "string"
      ) {
        return "damaged";
      }
      const changed = setEntryState(fold, id, state as MessageState, {
        id: by as number,
        name: byName,
      }, at);
      return changed ? "applied" : "skipped";
    }
    case "delete":
    case "deleted": {
      const deletion = _deletion(value);
      if (deletion === undefined) return "damaged";
      if (value.op === "delete") addDeletion(fold, deletion);
      else removeDeletion(fold, deletion);
      return "applied";
    }
    default:
      return "skipped";
  }
}

/**
 * One part sent, folded in: a new entry (state `open`), or one more part of a held one (a
 * first part adds a button message: a redelivery). A part in another chat than the entry's
 * starts it afresh there (the chat changed): the old chat's ids are no longer its.
 */
export function addPart(fold: LedgerFold, part: SentPart): LedgerEntry {
  const held = fold.entries.get(part.id);
  const base: LedgerEntry = held !== undefined && held.chat === part.chat ? held : {
    id: part.id,
    ts: part.ts,
    chat: part.chat,
    buttons: [],
    messages: [],
    ...(part.form === undefined ? {} : { form: part.form }),
    ip: part.ip,
    contact: part.contact,
    state: held?.state ?? "open",
    ...(held?.by === undefined ? {} : { by: held.by }),
    ...(held?.byName === undefined ? {} : { byName: held.byName }),
    ...(held?.at === undefined ? {} : { at: held.at }),
  };
  const add = (ids: readonly number[]) =>
    ids.includes(part.messageId) ? ids : [...ids, part.messageId];
  const entry: LedgerEntry = {
    ...base,
    buttons: part.first ? add(base.buttons) : base.buttons,
    messages: add(base.messages),
  };
  fold.entries.set(part.id, entry);
  return entry;
}

/** Sets entry `id`'s state; false when no such entry is held. */
export function setEntryState(
  fold: LedgerFold,
  id: string,
  state: MessageState,
  by: { readonly id: number; readonly name: string },
  at: string,
): boolean {
  const held = fold.entries.get(id);
  if (held === undefined) return false;
  fold.entries.set(id, { ...held, state, by: by.id, byName: by.name, at });
  return true;
}

/** Adds a deletion to those waiting (a message id already waiting is not added twice). */
export function addDeletion(fold: LedgerFold, deletion: ChatDeletion): void {
  const waiting = fold.pending.get(deletion.chat) ?? [];
  for (const message of deletion.messages) if (!waiting.includes(message)) waiting.push(message);
  if (waiting.length > 0) fold.pending.set(deletion.chat, waiting);
}

/** Takes a deletion's messages out of those waiting. */
export function removeDeletion(fold: LedgerFold, deletion: ChatDeletion): void {
  const waiting = fold.pending.get(deletion.chat);
  if (waiting === undefined) return;
  const left = waiting.filter((message) => !deletion.messages.includes(message));
  if (left.length === 0) fold.pending.delete(deletion.chat);
  else fold.pending.set(deletion.chat, left);
}

/** The key of a message in the by-message index. */
export function messageKey(chat: number, messageId: number): string {
  return `${chat}:${messageId}`;
}

function _isId(value: unknown): value is number {
  return Number.isSafeInteger(value);
}

function _ids(value: unknown): number[] | undefined {
  return Array.isArray(value) && value.every(_isId) ? [...value] : undefined;
}

function _sentPart(value: Record<string, unknown>): SentPart | undefined {
  const { id, ts, chat, message, first, form, ip, contact } = value;
  if (
    typeof id !== "string" || typeof ts !== "string" || !_isId(chat) || !_isId(message) ||
    typeof first !== "boolean" || typeof ip !== "string" || typeof contact !== "string" ||
    (form !== undefined && typeof form !== "string")
  ) {
    return undefined;
  }
  return {
    id,
    ts,
    chat,
    messageId: message,
    first,
    ...(form === undefined ? {} : { form }),
    ip,
    contact,
  };
}

function _entry(value: Record<string, unknown>): LedgerEntry | undefined {
  const { id, ts, chat, form, ip, contact, state, by, by_name: byName, at } = value;
  const buttons = _ids(value.buttons);
  const messages = _ids(value.messages);
  if (
    typeof id !== "string" || typeof ts !== "string" || !_isId(chat) || buttons === undefined ||
    messages === undefined || typeof ip !== "string" || typeof contact !== "string" ||
    !(MESSAGE_STATES as readonly unknown[]).includes(state) ||
    (form !== undefined && typeof form !== "string") || (by !== undefined && !_isId(by)) ||
    (byName !== undefined && typeof byName !== "string") ||
    (at !== undefined && typeof at !== "string")
  ) {
    return undefined;
  }
  return {
    id,
    ts,
    chat,
    buttons,
    messages,
    ...(form === undefined ? {} : { form }),
    ip,
    contact,
    state: state as MessageState,
    ...(by === undefined ? {} : { by }),
    ...(byName === undefined ? {} : { byName }),
    ...(at === undefined ? {} : { at }),
  };
}

function _deletion(value: Record<string, unknown>): ChatDeletion | undefined {
  const messages = _ids(value.messages);
  return _isId(value.chat) && messages !== undefined ? { chat: value.chat, messages } : undefined;
}
