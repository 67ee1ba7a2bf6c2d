/**
 * `contactd forget --id ID | --contact TEXT | --address IP [--dry-run]`: removes every record and
 * every trace contactd keeps of the submissions named (lib/storage/erasure.ts). With the service
 * stopped, it takes the service's lock and does it itself; while the service runs (the lock is
 * taken), it leaves a request beside `MESSAGES_FILE` that the service performs and answers
 * (lib/storage/forget_request.ts). The chat ledger's entries of those submissions go too: their
 * messages are deleted from the chat by the running service now, or, with it stopped, are left
 * in the ledger as deletions for its next start. It prints the counts; what it matched is never
 * logged.
 *
 * @module
 */
import {
  blockListPath,
  damagedPath,
  directoryOf,
  ledgerPath,
  lockPath,
  outboxPath,
  repliesPath,
} from "../common/state_files.ts";
import type { Settings } from "../config/settings.ts";
import { describeError, type Logger } from "../log/logger.ts";
import {
  erase,
  type ErasureDeps,
  type ErasureOutcome,
  type ForgetMatch,
  type KeptFile,
  pendingOnDisk,
} from "../storage/erasure.ts";
import { type Ledger, openLedger, readLedger } from "../storage/ledger.ts";
import { BlockStore, readBlockList } from "../spam/block_file.ts";
import { openReplyStore, readReplies } from "../mail/reply_store.ts";
import type { StorageFileInfo } from "../storage/file_system.ts";
import { askService, ForgetRequestPending } from "../storage/forget_request.ts";
import { FilesLocked, lockFiles } from "../storage/lock.ts";
import {
  loadOutbox,
  openOutbox,
  OUTBOX_WINDOW,
  OutboxEntryDamaged,
  readSubmissions,
} from "../storage/outbox.ts";
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
    const outcome = stopped ?? await _running(io, fs, path, options);
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
  const opened = new Map<string, StorageFileInfo>();
  await _identity(fs, lockPath(path), opened);
  const log = _commandLog(io);
  let outbox;
  try {
    outbox = await openOutbox(outboxPath(path), { log, fs });
  } catch (error) {
    throw new CommandFailure(`cannot open ${outboxPath(path)}: ${describeError(error)}`);
  }
  let ledger: Ledger | undefined;
  let kept: KeptFiles | undefined;
  try {
    // The ledger only when there is one (a service that never sent anything has none).
    if (await _exists(fs, ledgerPath(path))) {
      ledger = await openLedger(ledgerPath(path), { fs, log });
    }
    kept = await _keptFiles(fs, log, path, false);
    return await erase(
      {
        ..._stoppedDeps(io, fs, path, outbox),
        pendingOnDisk: pendingOnDisk(outboxPath(path), fs),
        ...(ledger === undefined ? {} : { ledger }),
        ...(kept === undefined ? {} : { extra: kept.files }),
      },
      options.match,
      options.dryRun,
    );
  } catch (error) {
    throw new CommandFailure(`stopped half-way (run it again): ${describeError(error)}`);
  } finally {
    // What the paths name while the files are still open: compared again right before each chown.
    for (
      const file of [
        outboxPath(path),
        damagedPath(outboxPath(path)),
        ledgerPath(path),
        blockListPath(path),
        repliesPath(path),
      ]
    ) {
      await _identity(fs, file, opened);
    }
    await outbox.close();
    await ledger?.close().catch((error) =>
      io.err(`contactd forget: cannot close ${ledgerPath(path)}: ${describeError(error)}`)
    );
    await kept?.close().catch((error) =>
      io.err(`contactd forget: cannot close the other files: ${describeError(error)}`)
    );
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
 * The block list and the replies file beside `messagesFile`, those that exist, for an erasure
 * with the service stopped (created by nothing: a file that is not there has nothing to forget).
 * A dry run reads them and writes nothing.
 */
async function _keptFiles(
  fs: RewriteFs,
  log: Logger,
  messagesFile: string,
  dryRun: boolean,
): Promise<KeptFiles> {
  const files: KeptFile[] = [];
  const closers: Array<() => Promise<void>> = [];
  const blockFile = blockListPath(messagesFile);
  if (await _exists(fs, blockFile)) {
    if (dryRun) {
      const { list } = await readBlockList(fs, blockFile);
      files.push({
        name: "blocked",
        forget: (match, ids) => Promise.resolve(list.forgotten(match, ids).length),
      });
    } else {
      const store = await BlockStore.open({
        fs,
        path: blockFile,
        now: Date.now,
        log,
        create: false,
      });
      closers.push(() => store.close());
      files.push({ name: "blocked", forget: (match, ids) => store.forget(match, ids) });
    }
  }
  const repliesFile = repliesPath(messagesFile);
  if (await _exists(fs, repliesFile)) {
    if (dryRun) {
      const read = await readReplies(fs, repliesFile);
      const all = [...read.pending, ...read.audits];
      files.push({
        name: "replies",
        forget: (_match, ids) => Promise.resolve(all.filter((r) => ids.has(r.submission)).length),
      });
    } else {
      const store = await openReplyStore({ fs, path: repliesFile, log, now: () => new Date() });
      closers.push(() => store.close());
      files.push({ name: "replies", forget: (_match, ids) => store.forget(ids) });
    }
  }
  return {
    files,
    async close() {
      for (const close of closers) await close();
    },
  };
}

/** The service's user: the outbox's owner, else the lock's, else the directory's. */
async function _serviceOwner(fs: RewriteFs, path: string): Promise<FileOwner | undefined> {
  for (const file of [outboxPath(path), lockPath(path), directoryOf(path)]) {
    try {
      return await fs.owner(file);
    } catch {
      // Not there: the next one says.
    }
  }
  return undefined;
}

/** Whether something is at `path` (a link included: the open refuses it then). */
async function _exists(fs: RewriteFs, path: string): Promise<boolean> {
  try {
    await fs.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
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
  let kept: KeptFiles | undefined;
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
    const file = outboxPath(path);
    const index = await loadOutbox(file, fs);
    const outbox: ErasureDeps["outbox"] = {
      entries: () => index.entries.values(),
      read: async (id) => {
        const entry = index.entries.get(id);
        if (entry !== undefined) {
          for await (const submission of readSubmissions(file, [entry], fs)) {
            if (submission !== undefined) return submission;
          }
        }
        throw new OutboxEntryDamaged(id);
      },
      done: () => Promise.reject(new Error("a dry run writes nothing")),
      recorded: () => Promise.reject(new Error("a dry run writes nothing")),
      compact: () => Promise.reject(new Error("a dry run writes nothing")),
    };
    const chat = await _exists(fs, ledgerPath(path))
      ? await readLedger(ledgerPath(path), fs)
      : undefined;
    const ledger: ErasureDeps["ledger"] = {
      entries: () => chat?.entries.values() ?? [],
      forget: () => Promise.reject(new Error("a dry run writes nothing")),
    };
    kept = await _keptFiles(fs, _commandLog(io), path, true);
    return await erase(
      {
        ..._stoppedDeps(io, fs, path, outbox),
        ...(chat === undefined ? {} : { ledger }),
        ...(kept === undefined ? {} : { extra: kept.files }),
      },
      options.match,
      true,
    );
  } catch (error) {
    throw new CommandFailure(`cannot count: ${describeError(error)}`);
  } finally {
    lock?.close();
    await kept?.close().catch((error) =>
      io.err(`contactd forget: cannot close the other files: ${describeError(error)}`)
    );
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

/** While the service runs: its answer to the request left beside `MESSAGES_FILE`. */
async function _running(
  io: ForgetIo,
  fs: RewriteFs,
  path: string,
  options: ForgetOptions,
): Promise<ErasureOutcome> {
  let answer;
  try {
    answer = await askService({
      fs,
      messagesFile: path,
      sleep: io.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    }, {
      nonce: io.nonce?.() ?? crypto.randomUUID(),
      match: options.match,
      dryRun: options.dryRun,
    });
  } catch (error) {
    if (error instanceof ForgetRequestPending) throw new CommandFailure(error.message);
    throw new CommandFailure(`cannot ask the running service: ${describeError(error)}`);
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
