/**
 * `contactd forget --id ID | --contact TEXT | --address IP [--dry-run]`: removes every record and
 * every trace contactd keeps of the submissions named (lib/storage/erasure.ts). With the service
 * stopped, it takes the service's lock and does it itself; while the service runs (the lock is
 * taken), it commits a request to the database that the service performs and answers
 * (lib/storage/forget_request.ts). The chat ledger's entries of those submissions go too: their
 * messages are deleted from the chat by the running service now, or, with it stopped, are left
 * in the ledger as deletions for its next start. It prints the counts; what it matched is never
 * logged. Stopped part-way, it leaves its progress noted in the database, which the next forget
 * of the same match takes over and finishes (lib/storage/forget_request.ts `eraseNoted`).
 *
 * @module
 */
import { keptAttachments } from "../storage/attachments.ts";
import { filesDirectory, spoolRemover } from "../files/spool.ts";
import { directoryOf, lockPath } from "../common/state_files.ts";
import type { Settings } from "../config/settings.ts";
import { describeError, type Logger } from "../log/logger.ts";
import {
  erase,
  type ErasureDeps,
  type ErasureOutcome,
  type ForgetMatch,
  type KeptFile,
} from "../storage/erasure.ts";
import { type Ledger, openLedger } from "../storage/ledger.ts";
import { BlockStore } from "../spam/block_store.ts";
import { keptSpam, SpamFilter } from "../spam/spam_filter.ts";
import { keptReplies } from "../mail/reply_upkeep.ts";
import { keptCases } from "../cases/case_book.ts";
import { searchBackupFromStart } from "../storage/recovery.ts";
import { importFiles, oldFilesPresent } from "../upgrade/import_files.ts";
import type { StorageFileInfo } from "../storage/file_system.ts";
import {
  askService,
  encodeRequest,
  eraseNoted,
  FORGET_UNFINISHED,
  type ForgetServiceDeps,
} from "../storage/forget_request.ts";
import { FilesLocked, lockFiles } from "../storage/lock.ts";
import { openOutbox, type Outbox, OUTBOX_WINDOW, OutboxEntryDamaged } from "../storage/outbox.ts";
import { databaseHeld, databasePath, openLocalStore, type Store } from "../storage/store.ts";
import { chownChecked, denoRewriteFs, type FileOwner, type RewriteFs } from "../storage/rewrite.ts";
import { CommandFailure, type CommandIo, run } from "./commands.ts";
import { messagesFileOf } from "./export_command.ts";

/** `forget`'s options, already checked by the command line. */
export interface ForgetOptions {
  readonly match: ForgetMatch;
  readonly dryRun: boolean;
  /** The value was `-`: the command line reads it from standard input before the command runs. */
  readonly fromStdin?: true;
}

/** What `forget` needs beyond the other commands; the real ones by default. */
export interface ForgetIo extends CommandIo {
  /** This process's id, written into the lock while it holds it. */
  readonly pid: number;
  readonly fs?: RewriteFs;
  /** Waits `ms` while the running service answers. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** A request's nonce. */
  readonly nonce?: () => string;
}

/** The other files an erasure with the service stopped works on, and closing them after. */
interface KeptFiles {
  readonly files: readonly KeptFile[];
  close(): Promise<void>;
}

/** What a person is told about what forget cannot reach. */
export const FORGET_LIMITS =
  "Telegram lets the bot delete its messages for 48 hours after sending them: older ones stay " +
  "in the chat (the log says chat_delete_failed; delete them there), and files already rotated " +
  "away are not touched";

/** `contactd forget`: see the module documentation. */
export const forgetCommand = (settings: Settings, io: ForgetIo, options: ForgetOptions) =>
  run<ForgetIo>("forget", async (settings, io) => {
    const path = messagesFileOf(settings);
    const fs = io.fs ?? denoRewriteFs;
    const stopped = await _stopped(io, fs, path, options);
    const outcome = stopped ?? await _running(io, path, options);
    const verb = options.dryRun ? "would remove" : "removed";
    io.out(
      `${verb} ${outcome.records} record(s) from ${path} and ${outcome.pending} pending ` +
        `message(s) from its outbox${options.dryRun ? " (dry run: nothing changed)" : ""}`,
    );
    if (outcome.chatEntries !== undefined) {
      io.out(chatLine(outcome.chatEntries, outcome.chatMessages ?? 0, {
        dryRun: options.dryRun,
        stopped: stopped !== undefined,
      }));
    }
    for (const [name, count] of Object.entries(outcome.extra ?? {})) {
      io.out(`${verb} ${count} entr${count === 1 ? "y" : "ies"} of ${name}`);
    }
    io.out(`note: ${FORGET_LIMITS}`);
    if (outcome.unsearched !== undefined) {
      io.out(
        `note: only the pending messages the outbox holds in memory (${OUTBOX_WINDOW}) were ` +
          `searched; ${outcome.unsearched} more wait on disk and may still be delivered: run ` +
          "forget again once contactd pending shows fewer",
      );
    }
  })(settings, io);

/**
 * What forget says of the chat: the ledger's entries removed and the messages to delete, and
 * when they are deleted (now by the running service, or at the stopped service's next start).
 */
export function chatLine(
  entries: number,
  messages: number,
  when: { readonly dryRun: boolean; readonly stopped: boolean },
): string {
  const sent = `${entries} submission(s) from the chat ledger`;
  if (when.dryRun) {
    return `would remove ${sent} and delete their ${messages} message(s) in the chat`;
  }
  if (messages === 0) return `removed ${sent}`;
  return `removed ${sent}; their ${messages} message(s) in the chat ` +
    (when.stopped
      ? "are deleted by contactd when the service starts next"
      : "are being deleted by the running service");
}

/** With the service stopped: the erasure here, under its lock; `undefined` when it runs. */
async function _stopped(
  io: ForgetIo,
  fs: RewriteFs,
  path: string,
  options: ForgetOptions,
): Promise<ErasureOutcome | undefined> {
  if (options.dryRun) return await _stoppedDry(io, fs, path, options);
  // Run as root on a service user's files: what it creates or rewrites (the lock, the outbox's
  // compaction) is given back to the service's user afterwards, taken before anything is created
  // from the outbox or the lock, else the directory (the backup file may be rotated away).
  const owner = await _serviceOwner(fs, path);
  let lock;
  try {
    lock = await lockFiles(path, io.pid, fs);
  } catch (error) {
    if (error instanceof FilesLocked) return undefined;
    throw new CommandFailure(`cannot lock ${path}: ${describeError(error)}`);
  }
  using _ = lock;
  // The lock file removed under a running service: the database it holds still tells.
  if (databaseHeld(databasePath(path))) return undefined;
  const opened = new Map<string, StorageFileInfo>();
  await _identity(fs, lockPath(path), opened);
  const log = _commandLog(io);
  // An older release's files not imported yet (contactd not started since the upgrade): imported
  // now, so that what is erased is not brought back by the import at the next start.
  const upgrade = await oldFilesPresent(path, fs);
  const store = upgrade ? await _upgradedStore(path, log) : _openStore(path);
  let parts: _StateParts | undefined;
  try {
    parts = await _stateParts(store, log, path);
    const deps: ErasureDeps = {
      ..._stoppedDeps(io, fs, path, parts.outbox),
      pendingOnDisk: () => parts!.outbox.waiting(),
      ...(parts.ledger === undefined ? {} : { ledger: parts.ledger }),
      extra: parts.kept,
    };
    const outcome = store === undefined
      ? await erase(deps, options.match, options.dryRun)
      : await _eraseNotedStopped(io, { ...deps, store }, options);
    if (store !== undefined && outcome.records > 0) await searchBackupFromStart(store);
    return outcome;
  } catch (error) {
    throw new CommandFailure(`stopped half-way (run it again): ${describeError(error)}`);
  } finally {
    // What the paths name while the files are still open: compared again right before each chown.
    await _identity(fs, databasePath(path), opened);
    await parts?.close().catch((error) =>
      io.err(`contactd forget: cannot close the database: ${describeError(error)}`)
    );
    await store?.close();
    if (owner?.uid != null && owner.gid != null) {
      for (const [file, info] of opened) {
        await chownChecked(fs, file, info, owner.uid, owner.gid).catch((error) =>
          io.err(`contactd forget: cannot give ${file} back to its owner: ${describeError(error)}`)
        );
      }
    }
  }
}

/**
 * The erasure with the service stopped, noted in a row of the database as the service notes its
 * own (lib/storage/forget_request.ts `eraseNoted`): a row of an unfinished forget from the start,
 * so that a kill, a Ctrl-C or a failure part-way leaves its note, which the next forget of the same
 * match takes over (and this one takes over such a note left before); gone once it finishes.
 */
async function _eraseNotedStopped(
  io: ForgetIo,
  deps: ForgetServiceDeps,
  options: ForgetOptions,
): Promise<ErasureOutcome> {
  const request = {
    nonce: io.nonce?.() ?? crypto.randomUUID(),
    match: options.match,
    dryRun: options.dryRun,
  };
  const seq = await deps.store.run("requests.add", {
    kind: FORGET_UNFINISHED,
    body: encodeRequest(request),
    created: io.now().toISOString(),
    state: "working",
  });
  return await eraseNoted(deps, seq, request, true);
}

/** What an erasure with the service stopped works on, all in the database, and closing it. */
interface _StateParts {
  readonly outbox: Outbox;
  readonly ledger: Ledger | undefined;
  readonly kept: readonly KeptFile[];
  close(): Promise<void>;
}

/**
 * The outbox, the chat ledger, the block list and the replies kept in `store` (none of them
 * when there is no database: a service that never started has nothing to forget).
 */
async function _stateParts(
  store: Store | undefined,
  log: Logger,
  messagesFile: string,
): Promise<_StateParts> {
  if (store === undefined) {
    return { outbox: _noOutbox, ledger: undefined, kept: [], close: () => Promise.resolve() };
  }
  const outbox = await openOutbox(store);
  const ledger = await openLedger(store);
  const blocks = await BlockStore.open({ store, now: Date.now, log });
  const spam = await SpamFilter.open({ store, now: Date.now, log });
  const kept: KeptFile[] = [
    {
      name: "blocked",
      forget: async (match, ids, dryRun) =>
        dryRun ? blocks.forgotten(match, ids).length : await blocks.forget(match, ids),
    },
    ...keptReplies(store, undefined, () => new Date()),
    keptCases(store),
    keptSpam(spam),
    // The files sent with submissions (MESSAGES_FILE.files/).
    keptAttachments(store, spoolRemover(filesDirectory(messagesFile))),
  ];
  return {
    outbox,
    ledger,
    kept,
    async close() {
      await spam.close();
      await blocks.close();
      await ledger.close();
    },
  };
}

/** The database beside `messagesFile`, made and given the older release's files (the lock held). */
async function _upgradedStore(messagesFile: string, log: Logger): Promise<Store> {
  const store = openLocalStore(databasePath(messagesFile), { create: true });
  try {
    await importFiles(store, messagesFile, log);
    return store;
  } catch (error) {
    await store.close();
    throw new CommandFailure(
      `cannot import the older release's files beside ${messagesFile}: ${describeError(error)}`,
    );
  }
}

/** The database beside `messagesFile` for a command: `undefined` when there is none. */
function _openStore(messagesFile: string): Store | undefined {
  try {
    return openLocalStore(databasePath(messagesFile), { create: false });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new CommandFailure(`cannot open ${databasePath(messagesFile)}: ${describeError(error)}`);
  }
}

/** The outbox of a service that never made its database: empty. */
const _noOutbox: Outbox = {
  entries: () => [][Symbol.iterator](),
  get: () => undefined,
  pendingCount: 0,
  add: () => Promise.reject(new Error("no database")),
  recorded: () => Promise.resolve(),
  recordedSoon: () => Promise.resolve(),
  flush: () => Promise.resolve(),
  failed: () => Promise.resolve(),
  done: () => Promise.resolve(),
  read: (id) => Promise.reject(new OutboxEntryDamaged(id)),
  waiting: async function* () {},
  forget: () => Promise.resolve(),
  compact: () => Promise.resolve(),
  close: () => Promise.resolve(),
};

/** The service's user: the database's owner, else the lock's, else the directory's. */
async function _serviceOwner(fs: RewriteFs, path: string): Promise<FileOwner | undefined> {
  for (const file of [databasePath(path), lockPath(path), directoryOf(path)]) {
    try {
      return await fs.owner(file);
    } catch {
      // Not there: the next one says.
    }
  }
  return undefined;
}

/** Notes what `file` names now (a regular file only) in `into`. */
async function _identity(
  fs: RewriteFs,
  file: string,
  into: Map<string, StorageFileInfo>,
): Promise<void> {
  const info = await fs.lstat(file).catch(() => undefined);
  if (info?.isFile === true && !info.isSymlink) into.set(file, info);
}

/**
 * `--dry-run` with no service holding the lock: counts with nothing opened for writing and nothing
 * created (the outbox read as `pending` reads it); `undefined` when the service runs.
 */
async function _stoppedDry(
  io: ForgetIo,
  fs: RewriteFs,
  path: string,
  options: ForgetOptions,
): Promise<ErasureOutcome | undefined> {
  let lock;
  let parts: _StateParts | undefined;
  let store: Store | undefined;
  try {
    const named = await fs.lstat(lockPath(path));
    if (named.isFile && !named.isSymlink) lock = await fs.open(lockPath(path), { read: true });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      throw new CommandFailure(`cannot read ${lockPath(path)}: ${describeError(error)}`);
    }
  }
  try {
    if (lock !== undefined && !await lock.tryLock(true)) return undefined;
    if (databaseHeld(databasePath(path))) return undefined;
    if (await oldFilesPresent(path, fs)) {
      throw new CommandFailure(
        "the files of an older release are not imported yet: start contactd once (it imports " +
          "them), or run forget without --dry-run (it imports them first)",
      );
    }
    store = _openStore(path);
    parts = await _stateParts(store, _commandLog(io), path);
    const read = parts.outbox;
    const outbox: ErasureDeps["outbox"] = {
      entries: () => read.entries(),
      read: (id) => read.read(id),
      done: () => Promise.reject(new Error("a dry run writes nothing")),
      recorded: () => Promise.reject(new Error("a dry run writes nothing")),
      compact: () => Promise.reject(new Error("a dry run writes nothing")),
    };
    return await erase(
      {
        ..._stoppedDeps(io, fs, path, outbox),
        pendingOnDisk: () => read.waiting(),
        ...(parts.ledger === undefined ? {} : { ledger: parts.ledger }),
        extra: parts.kept,
      },
      options.match,
      true,
    );
  } catch (error) {
    throw new CommandFailure(`cannot count: ${describeError(error)}`);
  } finally {
    lock?.close();
    await parts?.close().catch((error) =>
      io.err(`contactd forget: cannot close the database: ${describeError(error)}`)
    );
    await store?.close();
  }
}

/** What {@linkcode erase} works with when the service is stopped and this command holds its files. */
function _stoppedDeps(
  io: ForgetIo,
  fs: RewriteFs,
  path: string,
  outbox: ErasureDeps["outbox"],
): ErasureDeps {
  return {
    // No one else appends while the service is stopped.
    appender: { exclusive: (task) => task() },
    fs,
    path,
    outbox,
    now: () => io.now().getTime(),
    log: _commandLog(io),
    stopped: true,
  };
}

/** The command's log: an event (and its error) as a plain line on standard error. */
function _commandLog(io: ForgetIo): Logger {
  return (_level, fields) =>
    io.err(`contactd forget: ${fields.event}${fields.error ? `: ${fields.error}` : ""}`);
}

/** While the service runs: its answer to the request committed to the database. */
async function _running(
  io: ForgetIo,
  path: string,
  options: ForgetOptions,
): Promise<ErasureOutcome> {
  let answer;
  const store = _openStore(path);
  if (store === undefined) {
    throw new CommandFailure(`the running service has no ${databasePath(path)} yet: try again`);
  }
  try {
    answer = await askService({
      store,
      sleep: io.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
      now: io.now,
    }, {
      nonce: io.nonce?.() ?? crypto.randomUUID(),
      match: options.match,
      dryRun: options.dryRun,
    });
  } catch (error) {
    throw new CommandFailure(`cannot ask the running service: ${describeError(error)}`);
  } finally {
    await store.close();
  }
  if (answer === undefined) {
    throw new CommandFailure(
      "the running service did not answer in time (stopping? older than forget? a large " +
        "backup file?): it may still do it; run forget --dry-run later to see what is left",
    );
  }
  if (!answer.ok) throw new CommandFailure(`the running service could not: ${answer.error}`);
  return answer.outcome;
}
