/**
 * Compaction: the outbox rewritten with only what is still needed. The new file is written
 * beside it (created exclusively, so never through a link, mode 0600) and synced; the handle the
 * service reads with afterwards is opened before the switch; then it is renamed over the old one
 * and the directory synced, so the rename survives a power loss. A crash or a failure before the
 * rename keeps the old file, which is still whole, and a failure removes the temporary file.
 *
 * @module
 */
import { compactionPath } from "../common/state_files.ts";
import { describeError, type Logger } from "../log/logger.ts";
import {
  removeIfPresent,
  removeTemporary,
  type StorageFile,
  type StorageFs,
  syncDirectory,
  writeAll,
} from "./file_system.ts";
import { compactedLine, type OutboxEntry, type OutboxSubmission } from "./outbox_lines.ts";
import type { CompactedLayout } from "./window.ts";

/** What a compaction copies. */
export interface CompactionInput {
  /** The entries held, oldest first: each becomes one `add` line with its state folded in. */
  readonly entries: Iterable<OutboxEntry>;
  /** An entry's submission; `undefined` when its line is damaged (it is then dropped). */
  readEntry(entry: OutboxEntry): Promise<OutboxSubmission | undefined>;
  /** Copies the lines of the submissions waiting on disk after them; returns the bytes. */
  copyTail?(out: StorageFile): Promise<number>;
}

/** A compaction done: what it wrote, and the handle to read the new file with. */
export interface Compaction extends CompactedLayout {
  /** Open on the new file (opened before the rename). */
  readonly reader: StorageFile;
}

const encoder = new TextEncoder();

/**
 * Rewrites the outbox at `path` from `input` (see the module documentation). Rejects, with the
 * old file in place and the temporary file removed, when any step before the rename fails; a
 * failure to remove it (`outbox_compaction_cleanup_failed`) or to sync the directory after the
 * rename (`outbox_directory_sync_failed`) is logged.
 */
export async function compactOutbox(
  fs: StorageFs,
  path: string,
  input: CompactionInput,
  log: Logger,
): Promise<Compaction> {
  const temporary = compactionPath(path);
  // Left by a crash during an earlier compaction (or put there by someone else): removed, never
  // followed (removing a link removes the link), then created afresh and exclusively.
  await removeIfPresent(fs, temporary);
  const out = await fs.open(temporary, { write: true, createNew: true, mode: 0o600 });
  let reader: StorageFile | undefined;
  try {
    const layout = await _write(out, input);
    reader = await fs.open(temporary, { read: true });
    await fs.rename(temporary, path);
    try {
      await syncDirectory(fs, path);
    } catch (error) {
      // The file itself is synced; only a power loss soon after could bring the old one back.
      log("error", { event: "outbox_directory_sync_failed", error: describeError(error) });
    }
    return { ...layout, reader };
  } catch (error) {
    reader?.close();
    await removeTemporary(fs, temporary, log, "outbox_compaction_cleanup_failed");
    throw error;
  }
}

/** Writes the compacted lines and the tail to `out`, syncs and closes it. */
async function _write(out: StorageFile, input: CompactionInput): Promise<CompactedLayout> {
  try {
    const moved: Array<[OutboxEntry, number, number]> = [];
    const dropped: OutboxEntry[] = [];
    let size = 0;
    const lines: string[] = [];
    for (const entry of input.entries) {
      const submission = await input.readEntry(entry);
      if (submission === undefined) {
        dropped.push(entry); // damaged, kept aside by the reader: nothing left to deliver
        continue;
      }
      const line = compactedLine(submission, entry);
      const length = encoder.encode(line).byteLength;
      moved.push([entry, size, length]);
      size += length;
      lines.push(line);
      if (lines.length >= 256) await writeAll(out, encoder.encode(lines.splice(0).join("")));
    }
    await writeAll(out, encoder.encode(lines.join("")));
    const tailSize = input.copyTail === undefined ? 0 : await input.copyTail(out);
    await out.syncData();
    return { moved, dropped, size, tailSize };
  } finally {
    out.close();
  }
}
