/**
 * `contactd forget --id ID | --contact TEXT | --address IP [--dry-run]`: removes every record and
 * every trace contactd keeps of the submissions named (lib/storage/erasure.ts). With the service
 * stopped, it takes the service's lock and does it itself; while the service runs (the lock is
 * taken), it leaves a request beside `MESSAGES_FILE` that the service performs and answers
 * (lib/storage/forget_request.ts). It prints the counts; what it matched is never logged.
 *
 * @module
 */
import { damagedPath, lockPath, outboxPath } from "../common/state_files.ts";
import type { Settings } from "../config/settings.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { erase, type ErasureOutcome, type ForgetMatch } from "../storage/erasure.ts";
import { askService, ForgetRequestPending } from "../storage/forget_request.ts";
import { FilesLocked, lockFiles } from "../storage/lock.ts";
import { openOutbox } from "../storage/outbox.ts";
import { denoRewriteFs, type RewriteFs } from "../storage/rewrite.ts";
import { CommandFailure, type CommandIo, run } from "./commands.ts";
import { messagesFileOf } from "./export_command.ts";

/** `forget`'s options, already checked by the command line. */
export interface ForgetOptions {
  readonly match: ForgetMatch;
  readonly dryRun: boolean;
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
  })(settings, io);

/** With the service stopped: the erasure here, under its lock; `undefined` when it runs. */
async function _stopped(
  io: ForgetIo,
  fs: RewriteFs,
  path: string,
  options: ForgetOptions,
): Promise<ErasureOutcome | undefined> {
  let lock;
  try {
    lock = await lockFiles(path, io.pid, fs);
  } catch (error) {
    if (error instanceof FilesLocked) return undefined;
    throw new CommandFailure(`cannot lock ${path}: ${describeError(error)}`);
  }
  using _ = lock;
  // Run as root on a service user's files: what it rewrites (the outbox's compaction, the lock it
  // created) is given back to the backup file's owner afterwards; the backup file keeps its own.
  const owner = await fs.owner(path).catch(() => undefined);
  const log: Logger = (_level, fields) =>
    io.err(`contactd forget: ${fields.event}${fields.error ? `: ${fields.error}` : ""}`);
  let outbox;
  try {
    outbox = await openOutbox(outboxPath(path), { log, fs });
  } catch (error) {
    throw new CommandFailure(`cannot open ${outboxPath(path)}: ${describeError(error)}`);
  }
  try {
    return await erase(
      {
        // No one else appends while the lock is held.
        appender: { exclusive: (task) => task() },
        fs,
        path,
        outbox,
        now: () => io.now().getTime(),
        log,
        stopped: true,
      },
      options.match,
      options.dryRun,
    );
  } catch (error) {
    throw new CommandFailure(`stopped half-way (run it again): ${describeError(error)}`);
  } finally {
    await outbox.close();
    if (owner?.uid != null && owner.gid != null) {
      for (const file of [outboxPath(path), damagedPath(outboxPath(path)), lockPath(path)]) {
        await fs.chown(file, owner.uid, owner.gid).catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) {
            io.err(
              `contactd forget: cannot give ${file} back to its owner: ${describeError(error)}`,
            );
          }
        });
      }
    }
  }
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
