/**
 * `contactd blocked` and `contactd unblock ADDRESS|CONTACT`: the spam block list
 * (`MESSAGES_FILE.blocked`, lib/spam/block_file.ts) listed, and blocks lifted by key. Both work
 * with the service running or stopped: `blocked` only reads the file; `unblock` appends one
 * `lift` line (under the file's lock, never creating it), which the running service takes in
 * within a second and a stopped one at its next start. They read and write only that file.
 *
 * @module
 */
import { blockListPath } from "../common/state_files.ts";
import { denoFs, type StorageFs } from "../storage/file_system.ts";
import { appendBlockLines, readBlockList } from "../spam/block_file.ts";
import { type Block, keyOf, keyText } from "../spam/block_list.ts";
import { liftKeyLine } from "../spam/block_lines.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { CommandFailure, type CommandIo, printable, run } from "./commands.ts";
import { messagesFileOf } from "./export_command.ts";
import type { Settings } from "../config/settings.ts";

/** What `blocked` and `unblock` need beyond the other commands; the real ones by default. */
export interface BlockedIo extends CommandIo {
  readonly fs?: StorageFs;
  /** Waits `ms` while the running service rewrites the file. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** `unblock`'s options, already checked by the command line. */
export interface UnblockOptions {
  /** An IP address (its client address key is lifted: IPv6, its /64) or an exact contact. */
  readonly target: string;
}

/** The column heads of `contactd blocked`. */
export const BLOCKED_HEADER = "kind\tvalue\tuntil\tsubmission";

/** `contactd blocked`: the blocks that hold now, one per line, oldest first. */
export const blockedCommand = (settings: Settings, io: BlockedIo) =>
  run<BlockedIo>("blocked", async (settings, io) => {
    const path = blockListPath(messagesFileOf(settings));
    const { list, damaged } = await _read(io, path);
    const blocks = list.list(io.now().getTime());
    if (blocks.length === 0) io.out(`nothing blocked in ${path}`);
    else {
      io.out(BLOCKED_HEADER);
      for (const block of blocks) io.out(_row(block));
    }
    if (damaged.length > 0) {
      io.err(`contactd blocked: ${damaged.length} damaged line(s) of ${path} skipped`);
    }
  })(settings, io);

/**
 * `contactd unblock ADDRESS|CONTACT`: lifts every block of that key (whichever submission made
 * it) by appending a `lift` line; prints how many blocks that held were lifted.
 */
export const unblockCommand = (settings: Settings, io: BlockedIo, options: UnblockOptions) =>
  run<BlockedIo>("unblock", async (settings, io) => {
    const path = blockListPath(messagesFileOf(settings));
    const key = keyOf(options.target);
    if (key.value === "") throw new CommandFailure("unblock takes an address or a contact");
    const { list } = await _read(io, path);
    const now = io.now().getTime();
    const held = list.list(now).filter((block) =>
      block.kind === key.kind && block.value === key.value
    );
    const stored = list.all().some((block) => block.kind === key.kind && block.value === key.value);
    const shown = printable(keyText(key), 200);
    if (!stored) {
      io.out(`lifted 0 blocks: ${shown} is not blocked (contactd blocked lists what is)`);
      return;
    }
    try {
      await appendBlockLines(
        io.fs ?? denoFs,
        path,
        liftKeyLine(key, formatTimestamp(new Date(now))),
        io.sleep,
      );
    } catch (error) {
      throw new CommandFailure(`cannot write ${path}: ${_reason(error)}`);
    }
    io.out(
      `lifted ${held.length} block(s) of ${shown} (a running contactd takes it in within a ` +
        "second; a stopped one at its next start)",
    );
  })(settings, io);

/** The block list read, or a {@linkcode CommandFailure} that says why it cannot be. */
async function _read(io: BlockedIo, path: string) {
  try {
    return await readBlockList(io.fs ?? denoFs, path);
  } catch (error) {
    throw new CommandFailure(`cannot read ${path}: ${_reason(error)}`);
  }
}

/** One line of `contactd blocked`. */
function _row(block: Block): string {
  return [block.kind, printable(block.value, 200), block.until, block.submission].join("\t");
}

function _reason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) {
    return "no such file (nothing was ever marked as spam, or MESSAGES_FILE names another file)";
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return "the system refused access, or it is a symbolic link: run it as the user that runs " +
      "contactd";
  }
  if (error instanceof Deno.errors.NotCapable) {
    return "not permitted: this contactd may use only the files beside the MESSAGES_FILE it " +
      "was built or started for";
  }
  return error instanceof Error ? error.message : String(error);
}
