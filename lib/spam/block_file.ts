/**
 * The block list on disk, `MESSAGES_FILE.blocked` (lib/common/state_files.ts `blockListPath`):
 * whole JSON lines (lib/spam/block_lines.ts), created 0600, never through a symbolic link,
 * appended with `O_APPEND` by the service ({@linkcode BlockStore}) and by `contactd unblock`
 * ({@linkcode appendBlockLines}), each a whole line in one write. The service compacts it at open
 * (expired, lifted and damaged lines dropped; a synced `<path>.tmp` renamed over it, mode kept)
 * and reads what the command line appended with {@linkcode BlockStore.refresh}.
 *
 * A rewrite and the command line's append exclude each other with an advisory lock on the file:
 * the command line appends only while it holds the lock on the file its path still names, so a
 * line is never appended to a file a rewrite has just replaced.
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import type { Logger } from "../log/logger.ts";
import { serial } from "../common/serial.ts";
import type { ForgetMatch } from "../storage/erasure.ts";
import {
  type ChmodFs,
  fileIdentity,
  openNoFollow,
  readFrom,
  replaceFile,
  type StorageFile,
  type StorageFs,
  writeAll,
} from "../storage/file_system.ts";
import {
  type Block,
  type BlockKey,
  BlockList,
  isLive,
  type Sender,
  spamBlocks,
  type SpamSubmission,
} from "./block_list.ts";
import { blockLine, type BlockOp, liftKeyLine, liftLine, replay } from "./block_lines.ts";
import { splitLines } from "../storage/records.ts";

/**
 * Storage's file system, with `chmod` where the rewrite can set the kept mode exactly
 * (lib/storage/rewrite.ts `denoRewriteFs` has it).
 */
export type BlockFs = ChmodFs;

/** How long a rewrite or `contactd unblock` waits for the other's lock: tries, ms apart. */
export const LOCK_TRIES = 200;
/** See {@linkcode LOCK_TRIES}. */
export const LOCK_WAIT_MS = 10;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const NEWLINE = 0x0a;

/** The temporary file a rewrite of the block list at `path` writes, then renames over it. */
export function blockRewritePath(path: string): string {
  return `${path}.tmp`;
}

/** Waits until `file`'s exclusive lock is taken; rejects after {@linkcode LOCK_TRIES}. */
async function _lock(
  file: StorageFile,
  path: string,
  sleep: (ms: number) => Promise<void>,
): Promise<void> {
  for (let tries = 0; tries < LOCK_TRIES; tries++) {
    if (await file.tryLock(true)) return;
    await sleep(LOCK_WAIT_MS);
  }
  throw new Error(`${path} stayed locked (another contactd command is writing it)`);
}

/**
 * Appends `text` (whole lines) to `file` opened for reading and appending, in one write,
 * after a line break when the file ends in a torn line (so the new line stays whole); synced.
 */
async function _appendWhole(file: StorageFile, text: string): Promise<void> {
  const { size } = await file.stat();
  let torn = false;
  if (size > 0) {
    await file.seek(size - 1, Deno.SeekMode.Start);
    const last = new Uint8Array(1);
    torn = (await file.read(last)) === 1 && last[0] !== NEWLINE;
  }
  await writeAll(file, encoder.encode(torn ? `\n${text}` : text));
  await file.syncData();
}

/**
 * Appends `text` (whole lines) to the existing block list at `path`, as `contactd unblock` does,
 * the service running or not: never creates it, never through a link, under the file's lock, on
 * the file the path names once the lock is held (a rewrite that replaced it meanwhile: the new
 * one). Rejects with `NotFound` when there is no file.
 */
export async function appendBlockLines(
  fs: StorageFs,
  path: string,
  text: string,
  sleep: (ms: number) => Promise<void> = _sleep,
): Promise<void> {
  for (let tries = 0; tries < LOCK_TRIES; tries++) {
    const file = await openNoFollow(fs, path, { read: true, append: true });
    try {
      await _lock(file, path, sleep);
      const [opened, named] = [await file.stat(), await fs.lstat(path)];
      if (named.isSymlink || fileIdentity(named) !== fileIdentity(opened)) continue; // replaced
      await _appendWhole(file, text);
      return;
    } finally {
      file.close(); // releases the lock
    }
  }
  throw new Error(`${path} kept being replaced: try again`);
}

/** What {@linkcode readBlockList} found. */
export interface BlockFileContents {
  readonly list: BlockList;
  /** Line numbers (1-based) of the lines that are not an operation, a torn last line included. */
  readonly damaged: readonly number[];
}

/** The block list at `path` read back, without writing (never through a link). */
export async function readBlockList(fs: StorageFs, path: string): Promise<BlockFileContents> {
  const file = await openNoFollow(fs, path, { read: true });
  let bytes: Uint8Array;
  try {
    bytes = await readFrom(file, 0);
  } finally {
    file.close();
  }
  const { lines, partial: rest } = splitLines(decoder.decode(bytes));
  const list = new BlockList();
  const damaged = replay(list, lines);
  return { list, damaged: rest.trim() === "" ? damaged : [...damaged, lines.length + 1] };
}

/** What the service's {@linkcode BlockStore} works with. */
export interface BlockStoreDeps {
  readonly fs: BlockFs;
  /** The block list: `blockListPath(MESSAGES_FILE)`. */
  readonly path: string;
  /** The wall clock, ms since the epoch. */
  readonly now: () => number;
  readonly log: Logger;
  /** Waits `ms` for the command line's lock during a rewrite; default a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Create the file when missing (the service: default true). `contactd forget` with the service
   * stopped passes false, so that run as root it creates nothing (it rejects `NotFound`).
   */
  readonly create?: boolean;
}

function _sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The service's block list: the file read into a {@linkcode BlockList}, every change appended
 * (a whole line, synced) before it counts, lines another process appended taken in by
 * {@linkcode BlockStore.refresh}. Calls run one after another.
 */
export class BlockStore {
  readonly #deps: BlockStoreDeps;
  readonly #list = new BlockList();
  #file: StorageFile;
  /** Bytes of the file read and applied (up to the last whole line). */
  #offset = 0;
  /** Lines in the file (read so far), for line numbers and to know when a compaction drops some. */
  #lines = 0;
  /** Runs a task after every call before it; the caller gets its failure (and logs it). */
  readonly #serial = serial();

  private constructor(deps: BlockStoreDeps, file: StorageFile) {
    this.#deps = deps;
    this.#file = file;
  }

  /**
   * Opens (creating it 0600, unless `deps.create` is false) and compacts the block list at `deps.path`: a torn last line and
   * damaged lines are skipped and logged (`block_list_damaged_line`, line numbers only); expired,
   * lifted and damaged lines are dropped by a rewrite. Rejects when the file cannot be opened,
   * read or rewritten (a link at the path included).
   */
  static async open(deps: BlockStoreDeps): Promise<BlockStore> {
    const file = await openNoFollow(deps.fs, deps.path, {
      read: true,
      append: true,
      ...(deps.create === false ? {} : { create: true, mode: 0o600 }),
    });
    const store = new BlockStore(deps, file);
    try {
      await store.#exclusive(async () => {
        await store.#readNew(true);
        const now = deps.now();
        store.#list.dropExpired(now);
        if (store.#lines !== store.#list.size) await store.#rewrite(store.#list.all());
      });
    } catch (error) {
      store.#file.close();
      throw error;
    }
    return store;
  }

  /** Runs `task` holding the file's lock: no `contactd unblock` appends meanwhile. */
  async #exclusive<T>(task: () => Promise<T>): Promise<T> {
    await _lock(this.#file, this.#deps.path, this.#deps.sleep ?? _sleep);
    // The lock goes with the file's close: a rewrite closes the old file, else it is
    // released by reopening. StorageFile has no unlock, so the old descriptor is swapped.
    let replaced = false;
    try {
      const before = this.#file;
      const result = await task();
      replaced = this.#file !== before;
      return result;
    } finally {
      if (!replaced) await this.#reopen();
    }
  }

  /** Opens the path again and closes the old descriptor (releasing its lock). */
  async #reopen(): Promise<void> {
    const file = await openNoFollow(this.#deps.fs, this.#deps.path, { read: true, append: true });
    this.#file.close();
    this.#file = file;
  }

  /**
   * Applies the whole lines appended since the last read. `atOpen`: nothing else is writing
   * (the lock is held), so text after the last line break is a torn line: logged and skipped.
   */
  async #readNew(atOpen = false): Promise<void> {
    const bytes = await readFrom(this.#file, this.#offset);
    const end = bytes.lastIndexOf(NEWLINE) + 1;
    const { lines } = splitLines(decoder.decode(bytes.subarray(0, end)));
    // A lift by key is `contactd unblock`'s (logged here, as it arrives; not again at a start).
    const onLift = atOpen ? undefined : (op: BlockOp, removed: readonly Block[]) => {
      if (!("kind" in op) || removed.length === 0) return;
      const ids = [...new Set(removed.map((block) => block.submission))];
      const fields = { event: "unblocked", blocks: removed.length, by: "command" };
      this.#deps.log("info", { ...fields, ids: ids.join(",") });
    };
    for (const line of replay(this.#list, lines, this.#lines + 1, onLift)) {
      this.#deps.log("warn", { event: "block_list_damaged_line", line });
    }
    this.#lines += lines.filter((line) => line.trim() !== "").length;
    this.#offset += end;
    if (atOpen && end < bytes.byteLength) {
      this.#deps.log("warn", {
        event: "block_list_damaged_line",
        line: this.#lines + 1,
        torn: true,
      });
      this.#lines++; // counted: the compaction drops it
    }
  }

  /**
   * Writes `blocks` as the whole file: a synced `<path>.tmp` with the file's mode, renamed over
   * it, the directory synced (a failure there is logged, `block_list_directory_sync_failed`).
   */
  async #rewrite(blocks: readonly Block[]): Promise<void> {
    const { fs, path, log } = this.#deps;
    const temporary = blockRewritePath(path);
    const { mode } = await this.#file.stat();
    const kept = mode === null ? 0o600 : mode & 0o777;
    const bytes = encoder.encode(blocks.map(blockLine).join(""));
    await replaceFile(fs, path, temporary, bytes, log, "block_list", { mode: kept });
    await this.#reopen();
    this.#offset = bytes.byteLength;
    this.#lines = blocks.length;
  }

  /** Appends `text` (whole lines) and applies what the file now holds. */
  async #append(text: string): Promise<void> {
    await _appendWhole(this.#file, text);
    await this.#readNew();
  }

  /** The block that holds `sender` at `now` (ms since the epoch), or `undefined`. */
  match(sender: Sender, now: number): Block | undefined {
    return this.#list.match(sender, now);
  }

  /** The blocks that hold at `now`. */
  list(now: number): Block[] {
    return this.#list.list(now);
  }

  /**
   * Marks `submission` as spam: blocks its client address key and its contact (when not empty)
   * for `forMs` from now, `by` a user; returns the blocks made (none when it already blocks them).
   * Logs `blocked` with the id and the kinds, never the keys.
   */
  block(submission: SpamSubmission, forMs: number, by?: number): Promise<Block[]> {
    return this.#serial(async () => {
      await this.#readNew();
      const held = new Set(
        this.#list.all().filter((block) => block.submission === submission.id).map((block) =>
          `${block.kind}:${block.value}`
        ),
      );
      const made = spamBlocks(submission, this.#deps.now(), forMs, by).filter((block) =>
        !held.has(`${block.kind}:${block.value}`)
      );
      if (made.length === 0) return made;
      await this.#append(made.map(blockLine).join(""));
      const kinds = made.map((block) => block.kind).join(",");
      this.#deps.log("info", { event: "blocked", id: submission.id, kinds, until: made[0]!.until });
      return made;
    });
  }

  /** Not spam: lifts the blocks `submission` made, and only those (logged `unblocked`); returns them. */
  lift(submission: string): Promise<Block[]> {
    return this.#serial(async () => {
      await this.#readNew();
      const lifted = this.#list.all().filter((block) => block.submission === submission);
      if (lifted.length === 0) return lifted;
      await this.#append(liftLine(submission, this.#stamp()));
      this.#deps.log("info", { event: "unblocked", id: submission, blocks: lifted.length });
      return lifted;
    });
  }

  /**
   * Lifts every block of `key`, whichever submission made it (logged `unblocked` as
   * `contactd unblock`'s are); returns the live ones lifted.
   */
  liftKey(key: BlockKey): Promise<Block[]> {
    return this.#serial(async () => {
      await this.#readNew();
      const now = this.#deps.now();
      const held = this.#list.all().filter((block) =>
        block.kind === key.kind && block.value === key.value
      );
      if (held.length > 0) await this.#append(liftKeyLine(key, this.#stamp()));
      return held.filter((block) => isLive(block, now));
    });
  }

  /** Takes in the lines another process (`contactd unblock`) appended; the service calls it often. */
  refresh(): Promise<void> {
    return this.#serial(() => this.#readNew());
  }

  /**
   * Retention: removes the blocks made before `cutoff` (ms since the epoch), rewriting the file as
   * at open (expired and lifted lines go too); returns how many were made before it.
   */
  prune(cutoff: number): Promise<number> {
    return this.#serial(() => this.#removing(() => this.#list.madeBefore(cutoff)));
  }

  /**
   * Erasure (`contactd forget`): removes the blocks of the submissions `match` names
   * ({@linkcode BlockList.forgotten}), rewriting the file as at open, so no line of them stays
   * (lifted and expired ones included); returns how many blocks went.
   */
  forget(match: ForgetMatch, ids?: ReadonlySet<string>): Promise<number> {
    return this.#serial(() => this.#removing(() => this.#list.forgotten(match, ids)));
  }

  /** Removes what `victims` names, and compacts, under the lock; returns how many went. */
  #removing(victims: () => Block[]): Promise<number> {
    return this.#exclusive(async () => {
      await this.#readNew();
      const gone = victims();
      const now = this.#deps.now();
      const goneSet = new Set(gone);
      const kept = this.#list.all().filter((block) => !goneSet.has(block) && isLive(block, now));
      if (gone.length === 0 && kept.length === this.#lines) return 0;
      await this.#rewrite(kept);
      this.#list.removeBlocks(gone);
      this.#list.dropExpired(now);
      return gone.length;
    });
  }

  #stamp(): string {
    return formatTimestamp(new Date(this.#deps.now()));
  }

  /** Closes the file, after the calls before it. */
  close(): Promise<void> {
    return this.#serial(() => {
      this.#file.close();
      return Promise.resolve();
    });
  }
}
