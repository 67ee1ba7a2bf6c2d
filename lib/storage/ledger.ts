/**
 * The chat ledger: what contactd sent to the chat for each submission and the state the owner
 * set, so a button press or a reply is honoured only on a message contactd sent, and erasure can
 * delete what it sent. Kept in the database (lib/storage/sqlite/ledger_sql.ts, through
 * {@linkcode Store}), read at open into memory for the synchronous reads (a press, a reply,
 * erasure's matching); every change is written first and counts in memory only once committed,
 * so a change that could not be written is not told as done. Also the reader of the file an
 * older release kept (`MESSAGES_FILE.chat`), for the import.
 *
 * @module
 */
import { serial } from "../common/serial.ts";
import { denoFs, readTextIfPresent, type StorageFs } from "./file_system.ts";
import {
  addDeletion,
  applyLine,
  type ChatDeletion,
  emptyFold,
  type LedgerEntry,
  type LedgerFold,
  messageKey,
  type MessageState,
  pendingDeletions,
  removeDeletion,
  type SentPart,
} from "./ledger_lines.ts";
import { splitLines } from "./records.ts";
import type { Store } from "./store.ts";

export type { ChatDeletion, LedgerEntry, MessageState, SentPart } from "./ledger_lines.ts";

/** The chat ledger of a running service (or of `contactd forget` with the service stopped). */
export interface Ledger {
  /** The entry of submission `id`. */
  get(id: string): LedgerEntry | undefined;
  /** The entry one of whose parts is message `messageId` in `chat`. */
  byMessage(chat: number, messageId: number): LedgerEntry | undefined;
  /** Every live entry, in the order first sent (erasure matches them by contact and address). */
  entries(): Iterable<LedgerEntry>;
  /**
   * Notes one part sent, awaited after each successful sendMessage. A part of a submission this
   * ledger forgot meanwhile (its sendMessage was under way) is not kept: it becomes a deletion
   * waiting, and `onLateDeletion` is told.
   */
  noteSent(part: SentPart): Promise<void>;
  /** Sets a held entry's state; an id not held changes nothing. */
  setState(
    id: string,
    state: MessageState,
    by: { id: number; name: string },
    at: string,
  ): Promise<void>;
  /**
   * Removes entries (erasure); returns what should be deleted from the chat, also recorded as
   * deletions waiting (without the submission ids). Later parts of these submissions become
   * deletions too.
   */
  forget(ids: ReadonlySet<string>): Promise<ChatDeletion[]>;
  /** Removes entries whose ts is before `cutoffMs` (retention); their messages stay in the chat. */
  prune(cutoffMs: number): Promise<number>;
  /** Deletions waiting (recorded by forget, also by a stopped-service forget). */
  pendingDeletions(): ChatDeletion[];
  /** Marks a deletion done (tried: deleted, or failed for good). */
  deleted(deletion: ChatDeletion): Promise<void>;
  /** Waits for the writes under way; later writes reject. The store stays open (its owner's). */
  close(): Promise<void>;
}

/** What {@linkcode openLedger} works with. */
export interface LedgerDeps {
  /** Told of a deletion recorded by `noteSent` for a part of a submission already forgotten. */
  readonly onLateDeletion?: (deletion: ChatDeletion) => void;
}

/** At most this many forgotten ids are remembered for late parts (the oldest go first). */
export const LEDGER_FORGOTTEN_CAP = 10_000;

/**
 * Reads the ledger file an older release kept at `path` (`MESSAGES_FILE.chat`) without writing
 * anything, for the import: its entries and the deletions waiting; no file is an empty ledger.
 * Damaged lines and a torn last line are skipped. Never through a link.
 */
export async function readLedger(path: string, fs: StorageFs = denoFs): Promise<LedgerFold> {
  const text = await readTextIfPresent(fs, path);
  const fold = emptyFold();
  if (text === undefined) return fold;
  for (const line of splitLines(text).lines) if (line !== "") applyLine(fold, line);
  return fold;
}

/**
 * The chat ledger kept in `store`, its entries and deletions waiting read into memory. Rejects
 * (a {@linkcode StoreError}) when they cannot be read.
 */
export async function openLedger(store: Store, deps: LedgerDeps = {}): Promise<Ledger> {
  const [entries, pending] = await store.transaction([
    { op: "ledger.list", args: undefined },
    { op: "ledger.pendingDeletions", args: undefined },
  ]) as [LedgerEntry[], ChatDeletion[]];
  const fold = emptyFold();
  for (const entry of entries) fold.entries.set(entry.id, entry);
  for (const deletion of pending) addDeletion(fold, deletion);
  return new _StoreLedger(store, fold, deps);
}

class _StoreLedger implements Ledger {
  readonly #store: Store;
  readonly #deps: LedgerDeps;
  /** What the database holds, as of the last write that succeeded. */
  readonly #fold: LedgerFold;
  /** `chat:messageId` → submission id; checked against the entry on lookup. */
  readonly #index = new Map<string, string>();
  readonly #forgotten = new Set<string>();
  #closed = false;
  /** The writes, one at a time: a failure reaches its caller, the next write goes on after it. */
  readonly #serial = serial();

  constructor(store: Store, fold: LedgerFold, deps: LedgerDeps) {
    this.#store = store;
    this.#fold = fold;
    this.#deps = deps;
    for (const entry of fold.entries.values()) this.#indexEntry(entry);
  }

  get(id: string): LedgerEntry | undefined {
    return this.#fold.entries.get(id);
  }

  byMessage(chat: number, messageId: number): LedgerEntry | undefined {
    const id = this.#index.get(messageKey(chat, messageId));
    const entry = id === undefined ? undefined : this.#fold.entries.get(id);
    return entry !== undefined && entry.chat === chat && entry.messages.includes(messageId)
      ? entry
      : undefined;
  }

  entries(): Iterable<LedgerEntry> {
    return [...this.#fold.entries.values()];
  }

  noteSent(part: SentPart): Promise<void> {
    return this.#write(async (store) => {
      if (this.#forgotten.has(part.id)) {
        const deletion = { chat: part.chat, messages: [part.messageId] };
        await store.run("ledger.addDeletions", { deletions: [deletion] });
        addDeletion(this.#fold, deletion);
        this.#deps.onLateDeletion?.(deletion);
        return;
      }
      const entry: LedgerEntry = await store.run("ledger.noteSent", { ...part });
      this.#fold.entries.set(entry.id, entry);
      this.#indexEntry(entry);
    });
  }

  setState(
    id: string,
    state: MessageState,
    by: { id: number; name: string },
    at: string,
  ): Promise<void> {
    return this.#write(async (store) => {
      const args = { id, state, by: by.id, byName: by.name, at };
      if (!await store.run("ledger.setState", args)) return;
      const held = this.#fold.entries.get(id);
      if (held !== undefined) {
        this.#fold.entries.set(id, { ...held, state, by: by.id, byName: by.name, at });
      }
    });
  }

  forget(ids: ReadonlySet<string>): Promise<ChatDeletion[]> {
    return this.#write(async (store) => {
      const deletions = await store.run("ledger.forget", { ids: [...ids] });
      for (const id of ids) {
        this.#unindex(id);
        this.#fold.entries.delete(id);
        this.#remember(id);
      }
      for (const deletion of deletions) addDeletion(this.#fold, deletion);
      return deletions;
    });
  }

  prune(cutoffMs: number): Promise<number> {
    return this.#write(async (store) => {
      const removed = await store.run("ledger.prune", { cutoffMs });
      for (const id of removed) {
        this.#unindex(id);
        this.#fold.entries.delete(id);
      }
      return removed.length;
    });
  }

  pendingDeletions(): ChatDeletion[] {
    return pendingDeletions(this.#fold);
  }

  deleted(deletion: ChatDeletion): Promise<void> {
    return this.#write(async (store) => {
      await store.run("ledger.deleted", { chat: deletion.chat, messages: [...deletion.messages] });
      removeDeletion(this.#fold, deletion);
    });
  }

  close(): Promise<void> {
    return this.#serial(() => {
      this.#closed = true;
      return Promise.resolve();
    });
  }

  /** Runs `task` after the writes before it; rejects once the ledger is closed. */
  #write<T>(task: (store: Store) => Promise<T>): Promise<T> {
    return this.#serial(() =>
      this.#closed
        ? Promise.reject(new Deno.errors.BadResource("the chat ledger is closed"))
        : task(this.#store)
    );
  }

  #indexEntry(entry: LedgerEntry): void {
    for (const message of entry.messages) {
      this.#index.set(messageKey(entry.chat, message), entry.id);
    }
  }

  #unindex(id: string): void {
    const entry = this.#fold.entries.get(id);
    if (entry === undefined) return;
    for (const message of entry.messages) {
      const key = messageKey(entry.chat, message);
      if (this.#index.get(key) === id) this.#index.delete(key);
    }
  }

  #remember(id: string): void {
    this.#forgotten.delete(id);
    this.#forgotten.add(id);
    for (const old of this.#forgotten) {
      if (this.#forgotten.size <= LEDGER_FORGOTTEN_CAP) break;
      this.#forgotten.delete(old);
    }
  }
}
