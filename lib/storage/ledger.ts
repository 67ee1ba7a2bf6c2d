/**
 * The chat ledger's file (`MESSAGES_FILE.chat`, lib/common/state_files.ts `ledgerPath`): what
 * contactd sent to the chat for each submission and the state the owner set, so a button press
 * or a reply is honoured only on a message contactd sent, and erasure can delete what it sent.
 * Whole JSON lines (lib/storage/ledger_lines.ts), 0600, never through a symbolic link; each line
 * synced as it is appended. Compacted at open and rewritten by `forget` and `prune` through
 * `<path>.tmp` (created exclusively with the file's mode, synced, renamed over it, the directory
 * synced). Only the holder of `MESSAGES_FILE.lock` opens it for writing: the running service, or
 * `contactd forget` with the service stopped.
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import { serial } from "../common/serial.ts";
import {
  denoFs,
  openNoFollow,
  readFrom,
  readTextIfPresent,
  replaceFile,
  type StorageFile,
  type StorageFs,
  writeAll,
} from "./file_system.ts";
import {
  addDeletion,
  addPart,
  applyLine,
  type ChatDeletion,
  compactedText,
  deletedLine,
  deleteLine,
  emptyFold,
  forgetEntries,
  type LedgerEntry,
  type LedgerFold,
  messageKey,
  type MessageState,
  pendingDeletions,
  pruneEntries,
  removeDeletion,
  sentLine,
  type SentPart,
  setEntryState,
  stateLine,
} from "./ledger_lines.ts";
import { splitLines } from "./records.ts";

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
   * Appends one part sent (one line, synced), awaited after each successful sendMessage. A part
   * of a submission this ledger forgot meanwhile (its sendMessage was under way) is not kept: it
   * becomes a deletion waiting, and `onLateDeletion` is told.
   */
  noteSent(part: SentPart): Promise<void>;
  /** Sets a held entry's state (a line, synced); an id not held changes nothing. */
  setState(
    id: string,
    state: MessageState,
    by: { id: number; name: string },
    at: string,
  ): Promise<void>;
  /**
   * Removes entries (erasure), the file rewritten without them; returns what should be deleted
   * from the chat, also recorded as deletions waiting (without the submission ids). Rejects,
   * changing nothing, when the rewrite fails.
   */
  forget(ids: ReadonlySet<string>): Promise<ChatDeletion[]>;
  /** Removes entries whose ts is before `cutoffMs` (retention); their messages stay in the chat. */
  prune(cutoffMs: number): Promise<number>;
  /** Deletions waiting (recorded by forget, also by a stopped-service forget). */
  pendingDeletions(): ChatDeletion[];
  /** Marks a deletion done (tried: deleted, or failed for good); a line, synced. */
  deleted(deletion: ChatDeletion): Promise<void>;
  /** Waits for the writes under way and closes the file; later writes reject. */
  close(): Promise<void>;
}

/** What {@linkcode openLedger} works with. */
export interface LedgerDeps {
  /** The file system; the real one by default. */
  readonly fs?: StorageFs;
  readonly log: Logger;
  /** Told when the file is readable or writable by group or others. */
  readonly onLoose?: (mode: number) => void;
  /** Told of a deletion recorded by `noteSent` for a part of a submission already forgotten. */
  readonly onLateDeletion?: (deletion: ChatDeletion) => void;
}

/** At most this many forgotten ids are remembered for late parts (the oldest go first). */
export const LEDGER_FORGOTTEN_CAP = 10_000;

const encoder = new TextEncoder();

/** The temporary file a rewrite of the ledger at `path` writes, then renames over it. */
export function ledgerTemporaryPath(path: string): string {
  return `${path}.tmp`;
}

/**
 * Reads the ledger at `path` without writing anything (a dry run): its entries and the
 * deletions waiting; no file is an empty ledger. Damaged lines and a torn last line are skipped.
 */
export async function readLedger(path: string, fs: StorageFs = denoFs): Promise<LedgerFold> {
  const text = await readTextIfPresent(fs, path);
  return text === undefined ? emptyFold() : _fold(text, () => {});
}

/**
 * Opens (creating, 0600) the ledger at `path`, folds its lines, and compacts it when that
 * changes it (a torn last line, damaged lines, `sent` or `state` or `deleted` lines folded).
 * Rejects when it cannot open, read or compact it; a symbolic link at `path` is refused.
 */
export async function openLedger(path: string, deps: LedgerDeps): Promise<Ledger> {
  const fs = deps.fs ?? denoFs;
  const { log } = deps;
  let handle = await openNoFollow(fs, path, {
    read: true,
    append: true,
    create: true,
    mode: 0o600,
  });
  let fold: LedgerFold;
  let mode = 0o600;
  let open = true;
  try {
    const info = await handle.stat();
    if (info.mode !== null) {
      mode = info.mode & 0o777;
      if ((mode & 0o077) !== 0) deps.onLoose?.(mode);
    }
    const text = new TextDecoder().decode(await readFrom(handle));
    fold = _fold(text, log);
    const compacted = compactedText(fold);
    if (compacted !== text) {
      handle.close();
      open = false;
      handle = await _replace(fs, path, compacted, mode, log);
    }
  } catch (error) {
    if (open) handle.close();
    throw error;
  }
  return new _FileLedger(fs, path, mode, handle, fold, deps);
}

class _FileLedger implements Ledger {
  readonly #fs: StorageFs;
  readonly #path: string;
  readonly #mode: number;
  readonly #deps: LedgerDeps;
  #handle: StorageFile | undefined;
  #fold: LedgerFold;
  /** `chat:messageId` → submission id; checked against the entry on lookup. */
  readonly #index = new Map<string, string>();
  readonly #forgotten = new Set<string>();
  /** Every write, one after the other. */

  constructor(
    fs: StorageFs,
    path: string,
    mode: number,
    handle: StorageFile,
    fold: LedgerFold,
    deps: LedgerDeps,
  ) {
    this.#fs = fs;
    this.#path = path;
    this.#mode = mode;
    this.#handle = handle;
    this.#fold = fold;
    this.#deps = deps;
    this.#reindex();
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
    return this.#serial(async () => {
      if (this.#forgotten.has(part.id)) {
        const deletion = { chat: part.chat, messages: [part.messageId] };
        await this.#append(deleteLine(deletion));
        addDeletion(this.#fold, deletion);
        this.#deps.onLateDeletion?.(deletion);
        return;
      }
      // In memory first: a press on this message is honoured even if the line cannot be written.
      const entry = addPart(this.#fold, { ...part });
      for (const message of entry.messages) {
        this.#index.set(messageKey(entry.chat, message), entry.id);
      }
      await this.#append(sentLine(part));
    });
  }

  setState(
    id: string,
    state: MessageState,
    by: { id: number; name: string },
    at: string,
  ): Promise<void> {
    return this.#serial(async () => {
      if (!setEntryState(this.#fold, id, state, by, at)) return;
      await this.#append(stateLine(id, state, by, at));
    });
  }

  forget(ids: ReadonlySet<string>): Promise<ChatDeletion[]> {
    return this.#serial(async () => {
      const next = _copy(this.#fold);
      const deletions = forgetEntries(next, ids);
      if (next.entries.size === this.#fold.entries.size) return [];
      await this.#rewrite(next);
      for (const id of ids) this.#remember(id);
      return deletions;
    });
  }

  prune(cutoffMs: number): Promise<number> {
    return this.#serial(async () => {
      const next = _copy(this.#fold);
      const removed = pruneEntries(next, cutoffMs);
      if (removed > 0) await this.#rewrite(next);
      return removed;
    });
  }

  pendingDeletions(): ChatDeletion[] {
    return pendingDeletions(this.#fold);
  }

  deleted(deletion: ChatDeletion): Promise<void> {
    return this.#serial(async () => {
      removeDeletion(this.#fold, deletion);
      await this.#append(deletedLine(deletion));
    });
  }

  close(): Promise<void> {
    return this.#serial(() => {
      const handle = this.#handle;
      this.#handle = undefined;
      handle?.close();
      return Promise.resolve();
    });
  }

  /** The writes, one at a time: a failure reaches its caller, the next write goes on after it. */
  readonly #serial = serial();

  async #append(line: string): Promise<void> {
    const handle = this.#open();
    await writeAll(handle, encoder.encode(line));
    await handle.syncData();
  }

  #open(): StorageFile {
    if (this.#handle === undefined) {
      throw new Deno.errors.BadResource(`${this.#path}: the chat ledger is closed`);
    }
    return this.#handle;
  }

  /** The file replaced by `next`'s compacted lines, then `next` made the ledger. */
  async #rewrite(next: LedgerFold): Promise<void> {
    const old = this.#open();
    const handle = await _replace(
      this.#fs,
      this.#path,
      compactedText(next),
      this.#mode,
      this.#deps.log,
    );
    old.close();
    this.#handle = handle;
    this.#fold = next;
    this.#reindex();
  }

  #reindex(): void {
    this.#index.clear();
    for (const entry of this.#fold.entries.values()) {
      for (const message of entry.messages) {
        this.#index.set(messageKey(entry.chat, message), entry.id);
      }
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

/** A copy of a fold that can change without changing it. */
function _copy(fold: LedgerFold): LedgerFold {
  return {
    entries: new Map(fold.entries),
    pending: new Map([...fold.pending].map(([chat, messages]) => [chat, [...messages]])),
  };
}

/** The fold of a ledger's text; damaged lines and a torn last line logged and skipped. */
function _fold(text: string, log: Logger): LedgerFold {
  const fold = emptyFold();
  const { lines, partial } = splitLines(text);
  lines.forEach((line, index) => {
    if (line === "") return;
    if (applyLine(fold, line) === "damaged") {
      log("warn", { event: "ledger_damaged_line", line: index + 1 });
    }
  });
  if (partial !== "") {
    log("warn", { event: "ledger_damaged_line", line: lines.length + 1, torn: true });
  }
  return fold;
}

/**
 * Replaces the file at `path` with `text` through its temporary file (created exclusively with
 * `mode`, synced, renamed over it, the directory synced) and returns a handle appending to the
 * new file. A failure before the rename leaves the old file and removes the temporary one.
 */
async function _replace(
  fs: StorageFs,
  path: string,
  text: string,
  mode: number,
  log: Logger,
): Promise<StorageFile> {
  // Events ledger_cleanup_failed and ledger_directory_sync_failed.
  await replaceFile(fs, path, ledgerTemporaryPath(path), text, log, "ledger", { mode });
  return await openNoFollow(fs, path, { read: true, append: true, mode });
}
