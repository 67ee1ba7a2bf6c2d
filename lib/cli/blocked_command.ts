/**
 * `contactd blocked` and `contactd unblock ADDRESS|CONTACT`: the spam block list (the database's
 * `blocks`, lib/spam/block_store.ts) listed, and blocks lifted by key. Both work with the service
 * running or stopped, through their own connection to the database (`MESSAGES_FILE.db`): the
 * running service takes an unblock in within a second (its refresh), a stopped one at its next
 * start. A missing database is an empty list; neither command creates one. They touch only
 * that database.
 *
 * @module
 */
import { databasePath, openLocalStore, type Store } from "../storage/store.ts";
import { type Block, BlockList, keyOf, keyText } from "../spam/block_list.ts";
import { CommandFailure, type CommandIo, printable, run } from "./commands.ts";
import { messagesFileOf } from "./export_command.ts";
import type { Settings } from "../config/settings.ts";

/** `unblock`'s options, already checked by the command line. */
export interface UnblockOptions {
  /** An IP address (its client address key is lifted: IPv6, its /64) or an exact contact. */
  readonly target: string;
}

/** The column heads of `contactd blocked`. */
export const BLOCKED_HEADER = "kind\tvalue\tuntil\tsubmission";

/** `contactd blocked`: the blocks that hold now, one per line, oldest first. */
export const blockedCommand = (settings: Settings, io: CommandIo) =>
  run("blocked", async (settings, io) => {
    const path = databasePath(messagesFileOf(settings));
    const rows = await _withStore(path, (store) => store.run("blocks.all", undefined)) ?? [];
    const blocks = new BlockList(rows).list(io.now().getTime());
    if (blocks.length === 0) io.out(`nothing blocked in ${path}`);
    else {
      io.out(BLOCKED_HEADER);
      for (const block of blocks) io.out(_row(block));
    }
  })(settings, io);

/**
 * `contactd unblock ADDRESS|CONTACT`: lifts every block of that key (whichever submission made
 * it); prints how many blocks that held were lifted.
 */
export const unblockCommand = (settings: Settings, io: CommandIo, options: UnblockOptions) =>
  run("unblock", async (settings, io) => {
    const path = databasePath(messagesFileOf(settings));
    const key = keyOf(options.target);
    if (key.value === "") throw new CommandFailure("unblock takes an address or a contact");
    const lifted = await _withStore(path, (store) => store.run("blocks.liftKey", key)) ?? [];
    const shown = printable(keyText(key), 200);
    if (lifted.length === 0) {
      io.out(`lifted 0 blocks: ${shown} is not blocked (contactd blocked lists what is)`);
      return;
    }
    const now = io.now().getTime();
    const held = new BlockList(lifted).list(now);
    io.out(
      `lifted ${held.length} block(s) of ${shown} (a running contactd takes it in within a ` +
        "second; a stopped one at its next start)",
    );
  })(settings, io);

/**
 * `work` on the database at `path` (opened, never created); `undefined` when there is none.
 * A database that cannot be opened or used is a {@linkcode CommandFailure} that says why.
 */
async function _withStore<T>(
  path: string,
  work: (store: Store) => Promise<T>,
): Promise<T | undefined> {
  let store: Store;
  try {
    store = openLocalStore(path, { create: false });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw new CommandFailure(`cannot open ${path}: ${_reason(error)}`);
  }
  try {
    return await work(store);
  } catch (error) {
    throw new CommandFailure(`cannot use ${path}: ${_reason(error)}`);
  } finally {
    await store.close();
  }
}

/** One line of `contactd blocked`. */
function _row(block: Block): string {
  return [block.kind, printable(block.value, 200), block.until, block.submission].join("\t");
}

function _reason(error: unknown): string {
  const { name, message, reason } = error as { name?: string; message?: string; reason?: string };
  if (reason === "link") {
    return "it is a symbolic link (contactd never opens one): remove it, or point MESSAGES_FILE " +
      "at the real file";
  }
  if (name === "PermissionDenied") {
    return "the system refused access: run it as the user that runs contactd";
  }
  if (name === "NotCapable") {
    return "not permitted: this contactd may use only the files beside the MESSAGES_FILE it " +
      "was built or started for";
  }
  return message ?? String(error);
}
