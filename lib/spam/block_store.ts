/**
 * The service's spam block list: the `blocks` rows of the database (lib/storage/sqlite/blocks_sql.ts,
 * through {@linkcode Store}) read into a {@linkcode BlockList} at open, which answers the check
 * of every POST without waiting. Every change is written first and counts in memory only once
 * committed (a change that could not be written is not told as done). `contactd unblock` changes
 * the rows from its own connection; {@linkcode BlockStore.refresh}, called every second, reads
 * them again when another connection has committed since (`PRAGMA data_version`).
 *
 * @module
 */
import type { Logger } from "../log/logger.ts";
import { serial } from "../common/serial.ts";
import type { ForgetMatch } from "../storage/erasure.ts";
import type { Store } from "../storage/store.ts";
import {
  type Block,
  BlockList,
  isLive,
  type Sender,
  spamBlocks,
  type SpamSubmission,
} from "./block_list.ts";

/** What {@linkcode BlockStore} works with. */
export interface BlockStoreDeps {
  readonly store: Store;
  /** The wall clock, ms since the epoch. */
  readonly now: () => number;
  readonly log: Logger;
}

/** The identity of a block: its key and the submission that made it. */
function _id(block: Block): string {
  return `${block.kind}\u0000${block.value}\u0000${block.submission}`;
}

/** A block's key and submission, as `blocks.remove` takes it. */
function _key(block: Block) {
  return { kind: block.kind, value: block.value, submission: block.submission };
}

/**
 * The block list of a running service (or of `contactd forget` with the service stopped). Its
 * writes run one after another; each first takes in what another connection changed.
 */
export class BlockStore {
  readonly #deps: BlockStoreDeps;
  #list: BlockList;
  /** `PRAGMA data_version` when the rows were last read. */
  #version: number;
  #closed = false;
  readonly #serial = serial();

  private constructor(deps: BlockStoreDeps, list: BlockList, version: number) {
    this.#deps = deps;
    this.#list = list;
    this.#version = version;
  }

  /**
   * Reads the block list from `deps.store`, dropping the blocks that have expired. Rejects (a
   * {@linkcode StoreError}) when it cannot be read or written.
   */
  static async open(deps: BlockStoreDeps): Promise<BlockStore> {
    const { store } = deps;
    const version = await store.run("meta.dataVersion", undefined);
    const list = new BlockList(await store.run("blocks.all", undefined));
    const expired = list.all().filter((block) => !isLive(block, deps.now()));
    if (expired.length > 0) {
      await store.run("blocks.remove", { blocks: expired.map(_key) });
      list.removeBlocks(expired);
    }
    return new BlockStore(deps, list, version);
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
   * The blocks an erasure by `match` (and of the submissions `ids`) would remove
   * ({@linkcode BlockList.forgotten}): a dry run's count.
   */
  forgotten(match: ForgetMatch, ids?: ReadonlySet<string>): Block[] {
    return this.#list.forgotten(match, ids);
  }

  /**
   * Marks `submission` as spam: blocks its client address key and its contact (when not empty)
   * for `forMs` from now, `by` a user; returns the blocks made (none when it already blocks them).
   * Logs `blocked` with the id and the kinds, never the keys.
   */
  block(submission: SpamSubmission, forMs: number, by?: number): Promise<Block[]> {
    return this.#write(async (store) => {
      const wanted = spamBlocks(submission, this.#deps.now(), forMs, by);
      const made: Block[] = await store.run("blocks.add", { blocks: wanted });
      for (const block of made) this.#list.add(block);
      if (made.length === 0) return made;
      const kinds = made.map((block) => block.kind).join(",");
      this.#deps.log("info", { event: "blocked", id: submission.id, kinds, until: made[0]!.until });
      return made;
    });
  }

  /** Not spam: lifts the blocks `submission` made, and only those (logged `unblocked`); returns them. */
  lift(submission: string): Promise<Block[]> {
    return this.#write(async (store) => {
      const lifted: Block[] = await store.run("blocks.lift", { submission });
      this.#list.lift(submission);
      if (lifted.length > 0) {
        this.#deps.log("info", { event: "unblocked", id: submission, blocks: lifted.length });
      }
      return lifted;
    });
  }

  /**
   * Takes in what another connection (`contactd unblock`) changed, when one has committed since
   * the last read; a lift is logged `unblocked` with the submission ids, `by: "command"`. The
   * service calls it every second.
   */
  refresh(): Promise<void> {
    return this.#write(() => Promise.resolve());
  }

  /** Retention: removes the blocks made before `cutoff` (ms since the epoch); returns how many. */
  prune(cutoff: number): Promise<number> {
    return this.#write((store) => this.#remove(store, this.#list.madeBefore(cutoff)));
  }

  /**
   * Erasure (`contactd forget`): removes the blocks of the submissions `match` names
   * ({@linkcode BlockList.forgotten}), lifted and expired ones included; returns how many went.
   */
  forget(match: ForgetMatch, ids?: ReadonlySet<string>): Promise<number> {
    return this.#write((store) => this.#remove(store, this.#list.forgotten(match, ids)));
  }

  /** Waits for the calls under way; later calls reject. The store stays open (its owner's). */
  close(): Promise<void> {
    return this.#serial(() => {
      this.#closed = true;
      return Promise.resolve();
    });
  }

  /** Removes `victims` (and the expired blocks with them); returns how many victims went. */
  async #remove(store: Store, victims: readonly Block[]): Promise<number> {
    const now = this.#deps.now();
    const gone = new Set(victims.map(_id));
    const expired = this.#list.all().filter((block) =>
      !gone.has(_id(block)) && !isLive(block, now)
    );
    if (victims.length + expired.length === 0) return 0;
    await store.run("blocks.remove", { blocks: [...victims, ...expired].map(_key) });
    this.#list.removeBlocks([...victims, ...expired]);
    return victims.length;
  }

  /**
   * Runs `task` after the calls before it, once what another connection changed is taken in;
   * rejects once closed.
   */
  #write<T>(task: (store: Store) => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      if (this.#closed) throw new Deno.errors.BadResource("the block list is closed");
      await this.#reloadIfChanged();
      return await task(this.#deps.store);
    });
  }

  /** Reads the rows again when another connection has committed since they were read. */
  async #reloadIfChanged(): Promise<void> {
    const { store, log } = this.#deps;
    const version = await store.run("meta.dataVersion", undefined);
    if (version === this.#version) return;
    const list = new BlockList(await store.run("blocks.all", undefined));
    const kept = new Set(list.all().map(_id));
    const lifted = this.#list.all().filter((block) => !kept.has(_id(block)));
    this.#list = list;
    this.#version = version;
    if (lifted.length === 0) return;
    const ids = [...new Set(lifted.map((block) => block.submission))].join(",");
    log("info", { event: "unblocked", blocks: lifted.length, by: "command", ids });
  }
}
