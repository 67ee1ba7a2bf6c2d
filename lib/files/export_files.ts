/**
 * `contactd export --files DIR`: the files of the records exported, copied out of the spool
 * (`MESSAGES_FILE.files/<id>-<index>`) into `DIR` as `<id>-<n>-<name>` (`n` from 1, `name` the
 * record's cleaned label), each created `0600` and exclusively (never over a file, never through a
 * link), its SHA-256 checked against the record's as it is copied.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { cleanFileName } from "./file_name.ts";

/** One file a record lists. */
export interface RecordFile {
  /** The record's id. */
  readonly id: string;
  /** Its place among the record's files, from 0. */
  readonly index: number;
  readonly name: string;
  readonly sha256: string;
}

/** What a copy did. */
export interface CopyCounts {
  readonly copied: number;
  /** Listed by a record but not in the spool (removed, or never kept). */
  readonly missing: number;
  /** Copied, but their bytes do not match the record's sha256 (the copy is removed). */
  readonly damaged: number;
}

/** The files a backup record lists (`files`, lib/storage/backup.ts), by its id; none when none. */
export function recordFiles(record: Readonly<Record<string, unknown>>): RecordFile[] {
  const { id, files } = record;
  if (typeof id !== "string" || !/^[0-9a-z]{1,64}$/.test(id) || !Array.isArray(files)) return [];
  return files.flatMap((file, index) => {
    if (typeof file !== "object" || file === null) return [];
    const { name, sha256 } = file as Record<string, unknown>;
    if (typeof name !== "string" || typeof sha256 !== "string") return [];
    return [{ id, index, name, sha256 }];
  });
}

/** The name a file gets in the export directory: `<id>-<n>-<name>`, `n` from 1. */
export function exportedName(file: RecordFile): string {
  return `${file.id}-${file.index + 1}-${cleanFileName(file.name)}`;
}

/** Copies `files` from `spoolDir` to `outDir` (which must exist). */
export async function copyOut(
  spoolDir: string,
  outDir: string,
  files: Iterable<RecordFile>,
): Promise<CopyCounts> {
  let copied = 0, missing = 0, damaged = 0;
  for (const file of files) {
    const from = `${spoolDir}/${file.id}-${file.index}`;
    let source: Deno.FsFile;
    try {
      if ((await Deno.lstat(from)).isSymlink) throw new Deno.errors.NotFound(from);
      source = await Deno.open(from, { read: true });
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
      missing++;
      continue;
    }
    const to = `${outDir}/${exportedName(file)}`;
    const hash = createHash("sha256");
    try {
      using target = await Deno.open(to, { write: true, createNew: true, mode: 0o600 });
      for await (const chunk of source.readable) {
        hash.update(chunk);
        let at = 0;
        while (at < chunk.length) at += await target.write(chunk.subarray(at));
      }
      await target.syncData();
    } finally {
      try {
        source.close();
      } catch {
        // Closed by its stream already.
      }
    }
    if (hash.digest("hex") === file.sha256) copied++;
    else {
      damaged++;
      await Deno.remove(to);
    }
  }
  return { copied, missing, damaged };
}
