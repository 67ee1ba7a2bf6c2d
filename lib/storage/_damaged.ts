/**
 * Damaged outbox lines kept aside for the operator: appended, whole lines, to the file
 * `MESSAGES_FILE.outbox.damaged` (created 0600, never through a link) and synced.
 *
 * @module
 */
import { openNoFollow, type StorageFs, writeAll } from "./file_system.ts";

/** Appends `lines` (each ended with a newline if it lacks one) to `path`; rejects when it cannot. */
export async function keepAside(
  fs: StorageFs,
  path: string,
  lines: readonly Uint8Array[],
): Promise<void> {
  if (lines.length === 0) return;
  const file = await openNoFollow(fs, path, { append: true, create: true, mode: 0o600 });
  try {
    for (const line of lines) {
      await writeAll(file, line);
      if (line[line.byteLength - 1] !== 0x0a) await writeAll(file, new Uint8Array([0x0a]));
    }
    await file.syncData();
  } finally {
    file.close();
  }
}
