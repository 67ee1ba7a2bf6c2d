/**
 * Finding records by id in the backup file from a byte offset on, streamed (lib/storage/records.ts
 * `backupLines`): memory holds one chunk and one line, whatever the file's size.
 *
 * @module
 */
import { denoFs, type StorageFs } from "./file_system.ts";
import { backupLines, parseRecordLine } from "./records.ts";

/** Which of `ids` have a record in the backup file at `path` from byte `from` on. */
export async function recordIdsIn(
  path: string,
  from: number,
  ids: ReadonlySet<string>,
  fs: StorageFs = denoFs,
): Promise<Set<string>> {
  const found = new Set<string>();
  // From the byte before `from`: the first line read then ends at the first line break at or
  // after it, so it is a record's tail (or that line break alone), never a whole record.
  const start = Math.max(0, from - 1);
  for await (const line of backupLines(fs, path, { start })) {
    if (start > 0 && line.start === start) continue;
    if (!line.whole || line.text === undefined) continue;
    const id = parseRecordLine(line.text)?.id;
    if (id !== undefined && ids.has(id)) found.add(id);
  }
  return found;
}
