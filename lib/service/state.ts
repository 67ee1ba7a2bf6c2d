/**
 * The service's state opened, in order: the lock (one service per `MESSAGES_FILE`), the backup
 * file, the database (lib/storage/store.ts, in its worker), the outbox with crash recovery, the
 * chat ledger, the block list and the replies. Each is put on the caller's disposable stack as it
 * opens, so a start that fails half-way closes what it had opened. A failure is one log line
 * under its own event (`files_locked`, `lock_failed`, `backup_open_failed`, `database_open_failed`,
 * `import_failed`, `recovery_failed`, `ledger_open_failed`, `block_list_open_failed`, `replies_open_failed`), and
 * the start ends.
 *
 * @module
 */
import type { Config } from "../config/config.ts";
import { fileOpenFailure } from "../config/permissions.ts";
import { lockPath, rewritePath } from "../common/state_files.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { openReplyStore, type ReplyStore } from "../mail/reply_store.ts";
import { BlockStore } from "../spam/block_store.ts";
import { openBackupFile } from "../storage/backup.ts";
import type { Appender } from "../storage/group_commit.ts";
import { denoFs, removeIfPresent } from "../storage/file_system.ts";
import { type ChatDeletion, type Ledger, openLedger } from "../storage/ledger.ts";
import { FilesLocked, lockFiles } from "../storage/lock.ts";
import { openOutbox, type Outbox, type OutboxSubmission } from "../storage/outbox.ts";
import { replySourceOf } from "../mail/reply_sources.ts";
import { recoverWithStore } from "../storage/recovery.ts";
import { importFiles } from "../upgrade/import_files.ts";
import {
  call,
  databasePath,
  openWorkerStore,
  StoreError,
  type WorkerStore,
} from "../storage/store.ts";

/** What opening the state needs of the world. */
export interface StateIO {
  readonly log: Logger;
  /** This process's id, written into the lock file. */
  readonly pid: number;
  /** The wall clock (ms since the epoch). */
  readonly wallNow: () => number;
  /** A test hook for the bench: every database commit takes this much longer. */
  readonly commitDelayMs?: number;
}

/** The service's open state. */
export interface ServiceState {
  readonly backup: Appender;
  readonly store: WorkerStore;
  readonly outbox: Outbox;
  readonly ledger: Ledger;
  readonly blocks: BlockStore;
  /** Replies by email; `undefined` when they are off. */
  readonly replies: ReplyStore | undefined;
  /**
   * Where a deletion the ledger finds late (a part of an erased submission that arrived after
   * the erasure) is sent; the delivery assembly sets it once the queue exists.
   */
  onLateDeletion: (deletion: ChatDeletion) => void;
}

/**
 * Opens the state for `config` onto `stack`; `undefined` (after its log line) when a part
 * cannot be opened.
 */
export async function openState(
  config: Config,
  io: StateIO,
  stack: AsyncDisposableStack,
  mail: boolean,
): Promise<ServiceState | undefined> {
  const { log } = io;
  const file = config.messagesFile;
  const loose = (name: string) => (mode: number) =>
    log("warn", {
      event: "file_mode",
      file: name,
      mode: mode.toString(8),
      hint: "chmod 600 it: it holds personal data",
    });
  const opened = async <T>(event: string, path: string, open: () => Promise<T>) => {
    try {
      return await open();
    } catch (error) {
      // The lock file, or the database a running service holds (the lock file removed under it).
      const locked = (event === "lock_failed" && error instanceof FilesLocked) ||
        (error instanceof StoreError && error.reason === "held");
      const fields = locked ? { event: "files_locked" } : { event };
      log("error", { ...fields, file: path, ...fileOpenFailure(error, path) });
      return undefined;
    }
  };
  // One service per MESSAGES_FILE: locked before anything beside it is read or written.
  const lock = await opened("lock_failed", lockPath(file), () => lockFiles(file, io.pid));
  if (lock === undefined) return undefined;
  stack.use(lock);
  const backup = await opened("backup_open_failed", file, () => openBackupFile(file, loose(file)));
  if (backup === undefined) return undefined;
  stack.defer(() => backup.close());
  // A rewrite's temporary file left by a crash holds records erased or past RETENTION: gone now.
  await removeIfPresent(denoFs, rewritePath(file)).catch((error) =>
    log("error", { event: "backup_rewrite_cleanup_failed", error: describeError(error) })
  );
  const dbFile = databasePath(file);
  const store = await opened("database_open_failed", dbFile, () =>
    openWorkerStore(dbFile, {
      create: true,
      hold: true,
      ...(io.commitDelayMs === undefined ? {} : { commitDelayMs: io.commitDelayMs }),
    }));
  if (store === undefined) return undefined;
  stack.defer(() => store.close());
  if ((store.opened.mode & 0o077) !== 0) loose(dbFile)(store.opened.mode);
  // Files of a release before the database: imported once, then removed (lib/upgrade/).
  const imported = await opened(
    "import_failed",
    file,
    () => importFiles(store, file, log, { now: io.wallNow }),
  );
  if (imported === undefined) return undefined;
  // What a reply by email needs of a submission is kept with it while replies are on.
  const alsoOnAdd = mail
    ? (submission: OutboxSubmission) => [call("replySources.add", replySourceOf(submission))]
    : undefined;
  const outbox = await opened(
    "database_open_failed",
    dbFile,
    () => openOutbox(store, alsoOnAdd === undefined ? {} : { alsoOnAdd }),
  );
  if (outbox === undefined) return undefined;
  // Before the database closes: the answers' notes still waiting for a commit are committed.
  stack.defer(() => outbox.close());
  try {
    const recovered = await recoverWithStore({ store, outbox, backup, messagesFile: file, log });
    log("info", { event: "outbox_loaded", pending: outbox.pendingCount, recovered });
  } catch (error) {
    log("error", { event: "recovery_failed", error: describeError(error) });
    return undefined;
  }
  const state: Partial<ServiceState> & { onLateDeletion: ServiceState["onLateDeletion"] } = {
    onLateDeletion: () => {},
  };
  const ledger = await opened(
    "ledger_open_failed",
    dbFile,
    () => openLedger(store, { onLateDeletion: (deletion) => state.onLateDeletion(deletion) }),
  );
  if (ledger === undefined) return undefined;
  stack.defer(() => ledger.close());
  const blocks = await opened(
    "block_list_open_failed",
    dbFile,
    () => BlockStore.open({ store, now: io.wallNow, log }),
  );
  if (blocks === undefined) return undefined;
  stack.defer(() => blocks.close());
  let replies: ReplyStore | undefined;
  if (mail) {
    replies = await opened("replies_open_failed", dbFile, () =>
      openReplyStore(store, {
        now: () => new Date(io.wallNow()),
        retentionMs: config.retentionMs,
      }));
    if (replies === undefined) return undefined;
    const kept = replies;
    stack.defer(() => kept.close());
  }
  return Object.assign(state, { backup, store, outbox, ledger, blocks, replies });
}
