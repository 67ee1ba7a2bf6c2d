/**
 * The block list file an older release kept, `MESSAGES_FILE.blocked` (lib/common/state_files.ts
 * `blockListPath`): whole JSON lines (lib/spam/block_lines.ts), read back for the import into the
 * database. Nothing writes it any more; the service's block list is lib/spam/block_store.ts.
 *
 * @module
 */
import { openNoFollow, readFrom, type StorageFs } from "../storage/file_system.ts";
import { BlockList } from "./block_list.ts";
import { replay } from "./block_lines.ts";
import { splitLines } from "../storage/records.ts";

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
  const { lines, partial: rest } = splitLines(new TextDecoder().decode(bytes));
  const list = new BlockList();
  const damaged = replay(list, lines);
  return { list, damaged: rest.trim() === "" ? damaged : [...damaged, lines.length + 1] };
}
