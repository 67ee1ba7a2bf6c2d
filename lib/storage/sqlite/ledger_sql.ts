/**
 * The chat ledger's tables: what contactd sent to the chat for each submission
 * (`chat_entries`, one row per submission, with the state the owner set; `chat_parts`, one row
 * per message sent, `first` for the ones with the keyboard) and the messages erasure asked the
 * bot to delete (`chat_deletions`: chat and message ids only, never a submission id). Parts and
 * deletions keep the order they were written in (their rowid).
 *
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { prepared } from "./statements.ts";
// Types only (erased from the worker's bundle): the ledger's own shapes.
import type { LedgerEntry, MessageState, SentPart } from "../ledger_lines.ts";

/** An owner's state of a submission in the chat. */
export type ChatState = MessageState;

/** One submission's entry as the ledger reads it. */
export type ChatEntryRow = LedgerEntry;

/** One part sent. */
export type ChatPartInsert = SentPart;

/** Messages to delete from one chat, in order. */
export interface ChatDeletionRow {
  readonly chat: number;
  readonly messages: readonly number[];
}

const _entryColumns = "id, ts, chat, form, ip, contact, state, by_id, by_name, at";

/** The `chat_*` tables' operations (lib/storage/sqlite/operations.ts). */
export const LEDGER_OPS = {
  /**
   * Notes one part sent and returns its entry: a new entry (state `open`) on its first part, or
   * one more part of a held one. A part in another chat than the entry's starts it afresh there
   * (its parts in the old chat are no longer its), keeping its state.
   */
  "ledger.noteSent"(db: DatabaseSync, part: ChatPartInsert): ChatEntryRow {
    const held = prepared(db, "SELECT chat FROM chat_entries WHERE id = ?").get(part.id);
    if (held === undefined) {
      prepared(
        db,
        `INSERT INTO chat_entries (id, seq, ts, chat, form, ip, contact)
          VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM chat_entries), ?, ?, ?, ?, ?)`,
      ).run(part.id, part.ts, part.chat, part.form ?? null, part.ip, part.contact);
    } else if (Number(held.chat) !== part.chat) {
      prepared(db, "DELETE FROM chat_parts WHERE entry = ?").run(part.id);
      prepared(
        db,
        "UPDATE chat_entries SET ts = ?, chat = ?, form = ?, ip = ?, contact = ? WHERE id = ?",
      ).run(part.ts, part.chat, part.form ?? null, part.ip, part.contact, part.id);
    }
    // A message noted again stays a first part once it was one; one of another entry is this
    // entry's now.
    prepared(
      db,
      `INSERT INTO chat_parts (chat, message, entry, first) VALUES (?, ?, ?, ?)
        ON CONFLICT (chat, message) DO UPDATE SET
          first = CASE WHEN entry = excluded.entry THEN max(first, excluded.first)
            ELSE excluded.first END,
          entry = excluded.entry`,
    ).run(part.chat, part.messageId, part.id, part.first ? 1 : 0);
    return _entry(db, part.id)!;
  },
  /** Sets entry `id`'s state; false when no such entry is held. */
  "ledger.setState"(
    db: DatabaseSync,
    args: { id: string; state: ChatState; by: number; byName: string; at: string },
  ): boolean {
    const result = prepared(
      db,
      "UPDATE chat_entries SET state = ?, by_id = ?, by_name = ?, at = ? WHERE id = ?",
    ).run(args.state, args.by, args.byName, args.at, args.id);
    return Number(result.changes) > 0;
  },
  /** The entry of submission `id`, or `undefined`. */
  "ledger.get"(db: DatabaseSync, args: { id: string }): ChatEntryRow | undefined {
    return _entry(db, args.id);
  },
  /** The entry one of whose parts is message `message` in `chat`, or `undefined`. */
  "ledger.byMessage"(
    db: DatabaseSync,
    args: { chat: number; message: number },
  ): ChatEntryRow | undefined {
    const row = prepared(db, "SELECT entry FROM chat_parts WHERE chat = ? AND message = ?")
      .get(args.chat, args.message);
    return row === undefined ? undefined : _entry(db, String(row.entry));
  },
  /** Every entry, in the order first sent. */
  "ledger.list"(db: DatabaseSync): ChatEntryRow[] {
    const parts = new Map<string, Array<Record<string, unknown>>>();
    const all = prepared(db, "SELECT entry, message, first FROM chat_parts ORDER BY rowid").all();
    for (const part of all) {
      const entry = String(part.entry);
      const held = parts.get(entry);
      if (held === undefined) parts.set(entry, [part]);
      else held.push(part);
    }
    return prepared(db, `SELECT ${_entryColumns} FROM chat_entries ORDER BY seq`).all()
      .map((row) => _entryOf(row, parts.get(String(row.id)) ?? []));
  },
  /**
   * Removes the entries `ids` (erasure) with their parts, and records their messages as
   * deletions waiting (without the submission ids); returns those messages, one deletion per
   * chat. An id not held is passed over.
   */
  "ledger.forget"(db: DatabaseSync, args: { ids: readonly string[] }): ChatDeletionRow[] {
    const byChat = new Map<number, number[]>();
    for (const id of args.ids) {
      const entry = _entry(db, id);
      if (entry === undefined) continue;
      prepared(db, "DELETE FROM chat_entries WHERE id = ?").run(id); // its parts with it
      byChat.set(entry.chat, [...(byChat.get(entry.chat) ?? []), ...entry.messages]);
    }
    const deletions = [...byChat].map(([chat, messages]) => ({ chat, messages }));
    _addDeletions(db, deletions);
    return deletions;
  },
  /**
   * Removes the entries whose `ts` is before `cutoffMs` (ms since the epoch; an entry whose `ts`
   * is not a time stays, as the backup file's rule); their messages stay in the chat. Returns
   * the ids removed.
   */
  "ledger.prune"(db: DatabaseSync, args: { cutoffMs: number }): string[] {
    const removed: string[] = [];
    const remove = prepared(db, "DELETE FROM chat_entries WHERE id = ?");
    for (const row of prepared(db, "SELECT id, ts FROM chat_entries ORDER BY seq").all()) {
      const time = Date.parse(String(row.ts));
      if (Number.isNaN(time) || time >= args.cutoffMs) continue;
      const id = String(row.id);
      remove.run(id);
      removed.push(id);
    }
    return removed;
  },
  /** Records deletions waiting (a message already waiting is not recorded twice). */
  "ledger.addDeletions"(db: DatabaseSync, args: { deletions: readonly ChatDeletionRow[] }): void {
    _addDeletions(db, args.deletions);
  },
  /** The deletions waiting, one per chat, in the order recorded. */
  "ledger.pendingDeletions"(db: DatabaseSync): ChatDeletionRow[] {
    const byChat = new Map<number, number[]>();
    const rows = prepared(db, "SELECT chat, message FROM chat_deletions ORDER BY rowid").all();
    for (const row of rows) {
      const chat = Number(row.chat);
      const held = byChat.get(chat);
      if (held === undefined) byChat.set(chat, [Number(row.message)]);
      else held.push(Number(row.message));
    }
    return [...byChat].map(([chat, messages]) => ({ chat, messages }));
  },
  /** Marks a deletion done (tried: deleted, or failed for good). */
  "ledger.deleted"(db: DatabaseSync, args: ChatDeletionRow): void {
    const remove = prepared(db, "DELETE FROM chat_deletions WHERE chat = ? AND message = ?");
    for (const message of args.messages) remove.run(args.chat, message);
  },
} as const;

function _addDeletions(db: DatabaseSync, deletions: readonly ChatDeletionRow[]): void {
  const add = prepared(
    db,
    "INSERT INTO chat_deletions (chat, message) VALUES (?, ?) ON CONFLICT DO NOTHING",
  );
  for (const deletion of deletions) {
    for (const message of deletion.messages) add.run(deletion.chat, message);
  }
}

/** Entry `id` with its parts, or `undefined`. */
function _entry(db: DatabaseSync, id: string): ChatEntryRow | undefined {
  const row = prepared(db, `SELECT ${_entryColumns} FROM chat_entries WHERE id = ?`).get(id);
  if (row === undefined) return undefined;
  const parts = prepared(db, "SELECT message, first FROM chat_parts WHERE entry = ? ORDER BY rowid")
    .all(id);
  return _entryOf(row, parts);
}

/** A row of `chat_entries` and its parts as an entry (absent fields left out, never `null`). */
function _entryOf(
  row: Record<string, unknown>,
  parts: readonly Record<string, unknown>[],
): ChatEntryRow {
  const { form, by_id: by, by_name: byName, at } = row;
  return {
    id: String(row.id),
    ts: String(row.ts),
    chat: Number(row.chat),
    buttons: parts.filter((part) => Number(part.first) === 1).map((part) => Number(part.message)),
    messages: parts.map((part) => Number(part.message)),
    ...(form === null ? {} : { form: String(form) }),
    ip: String(row.ip),
    contact: String(row.contact),
    state: String(row.state) as ChatState,
    ...(by === null ? {} : { by: Number(by) }),
    ...(byName === null ? {} : { byName: String(byName) }),
    ...(at === null ? {} : { at: String(at) }),
  };
}
