/**
 * `contactd forget --id ID | --contact TEXT | --address IP [--dry-run]`: removes every record and
 * every trace contactd keeps of the submissions named (lib/storage/erasure.ts). With the service
 * stopped, it takes the service's lock and does it itself; while the service runs (the lock is
 * taken), it leaves a request beside `MESSAGES_FILE` that the service performs and answers
 * (lib/storage/forget_request.ts). It prints the counts; what it matched is never logged.
 *
 * @module
 */
import { damagedPath, directoryOf, lockPath, outboxPath } from "../common/state_files.ts";
import type { Settings } from "../config/settings.ts";
import { describeError, type Logger } from "../log/logger.ts";
import {
  erase,
  type ErasureDeps,
  type ErasureOutcome,
  type ForgetMatch,
  pendingOnDisk,
} from "../storage/erasure.ts";
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

/** What a person is told about what forget cannot reach. */
export const FORGET_LIMITS =
  "messages already in the Telegram chat stay there (contactd cannot delete them: delete them " +
  "in the chat), and files already rotated away are not touched";

/** `contactd forget`: see the module documentation. */
export const forgetCommand = (settings: Settings, io: ForgetIo, options: ForgetOptions) =>
  run<ForgetIo>("forget", async (settings, io) => {
    const path = messagesFileOf(settings);
    const fs = io.fs ?? denoRewriteFs;
    const outcome = await _stopped(io, fs, path, options) ?? await _running(io, fs, path, options);
    const verb = options.dryRun ? "would remove" : "removed";
    io.out(
      `${verb} ${outcome.records} record(s) from ${path} and ${outcome.pending} pending ` +
        `message(s) from its outbox${options.dryRun ? " (dry run: nothing changed)" : ""}`,
    );
    io.out(`note: ${FORGET_LIMITS}`);
    if (outcome.unsearched !== undefined) {
      io.out(
        `note: only the pending messages the outbox holds in memory (${OUTBOX_WINDOW}) were ` +
          `searched; ${outcome.unsearched} more wait on disk and may still be delivered: run ` +
          "forget again once contactd pending shows fewer",
      );
    }
  })(settings, io);

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
  try {
    return await erase(
      { ..._stoppedDeps(io, fs, path, outbox), pendingOnDisk: pendingOnDisk(outboxPath(path), fs) },
      options.match,
      options.dryRun,
    );
  } catch (error) {
    throw new CommandFailure(`stopped half-way (run it again): ${describeError(error)}`);
  } finally {
    // What the paths name while the outbox is still open: compared again right before each chown.
    for (const file of [outboxPath(path), damagedPath(outboxPath(path))]) {
      await _identity(fs, file, opened);
    }
    await outbox.close();
    if (owner?.uid != null && owner.gid != null) {
      for (const [file, info] of opened) {
        await chownChecked(fs, file, info, owner.uid, owner.gid).catch((error) =>
          io.err(`contactd forget: cannot give ${file} back to its owner: ${describeError(error)}`)
        );
      }
    }
  }
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
    return await erase(_stoppedDeps(io, fs, path, outbox), options.match, true);
  } catch (error) {
    throw new CommandFailure(`cannot count: ${describeError(error)}`);
  } finally {
    lock?.close();
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
