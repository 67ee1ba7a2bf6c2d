/**
 * `contactd export [--since DATE] [--form ID] [--format jsonl|csv]`: the backup file's records
 * on standard output. It only reads the backup file (from a checkout it runs with no other
 * permission: lib/config/permissions.ts `exportFlags`), so it is safe while the service runs; a
 * record being appended meanwhile is left for the next export.
 *
 * @module
 */
import { ConfigError, parseConfig } from "../config/config.ts";
import type { Settings } from "../config/settings.ts";
import {
  type ExportFilter,
  type ExportFormat,
  exportRecords,
  type ExportSource,
} from "../storage/export.ts";
import { denoFs, type StorageFile, type StorageFs } from "../storage/file_system.ts";
import { UTF8_BOM } from "../common/csv.ts";
import { filesDirectory } from "../common/state_files.ts";
import { copyOut, type RecordFile, recordFiles } from "../files/export_files.ts";
import { CommandFailure, type CommandIo, run } from "./commands.ts";

/** What `export` needs beyond the other commands. */
export interface ExportIo extends CommandIo {
  /** The file system the backup file is read through; the real one by default. */
  readonly fs?: StorageFs;
}

/** `export`'s options, already checked by the command line. */
export interface ExportOptions extends ExportFilter {
  readonly format: ExportFormat;
  /** CSV only: `false` leaves out the UTF-8 byte-order mark written before the header. */
  readonly bom?: boolean;
  /**
   * `--files DIR`: the files of the records exported are copied into this existing directory
   * (lib/files/export_files.ts).
   */
  readonly filesDir?: string;
}

/**
 * The backup file `path` opened for reading, each of its reads (and seeks) failing as a
 * {@linkcode CommandFailure} that says why it cannot be read (missing, refused by the system,
 * outside what this contactd may read).
 */
async function _openBackup(
  io: ExportIo,
  path: string,
): Promise<ExportSource & Pick<StorageFile, "close">> {
  const failure = (error: unknown) => new CommandFailure(`cannot read ${path}: ${_reason(error)}`);
  let file: StorageFile;
  try {
    file = await (io.fs ?? denoFs).open(path, { read: true });
  } catch (error) {
    throw failure(error);
  }
  return {
    read: (into) => file.read(into).catch((error) => Promise.reject(failure(error))),
    seek: (offset, whence) =>
      file.seek(offset, whence).catch((error) => Promise.reject(failure(error))),
    close: () => file.close(),
  };
}

/** The `MESSAGES_FILE` of the settings, or the setting's error as a {@linkcode CommandFailure}. */
export function messagesFileOf(settings: Settings): string {
  try {
    return parseConfig(settings).messagesFile;
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandFailure(error.message);
    throw error;
  }
}

/**
 * `contactd export`: the records that pass the options, in file order, to standard output (JSON
 * lines as they are in the file, or CSV), streamed as they are read (memory does not grow with
 * the file); how many, and any damaged line skipped, to stderr.
 */
export const exportCommand = (settings: Settings, io: ExportIo, options: ExportOptions) =>
  run<ExportIo>("export", async (settings, io) => {
    const path = messagesFileOf(settings);
    const file = await _openBackup(io, path);
    let counts;
    // CSV starts with the byte-order mark (spreadsheets then read UTF-8), once, before the header.
    let bom = options.format === "csv" && options.bom !== false ? UTF8_BOM : "";
    try {
      // `out` ends each line with "\n": each batch's own last line break is left to it.
      counts = await exportRecords(
        file,
        options,
        options.format,
        (text) => {
          io.out(bom + text.slice(0, -1));
          bom = "";
        },
      );
    } finally {
      file.close();
    }
    const { records, damaged } = counts;
    const skipped = damaged === 0 ? "" : `; ${damaged} damaged line(s) skipped`;
    io.err(`contactd export: ${records} record(s) from ${path}${skipped}`);
    if (options.filesDir !== undefined) await _exportFiles(io, path, options, options.filesDir);
  })(settings, io);

/** `--files DIR`: the exported records' files, copied into `dir`; what was copied, to stderr. */
async function _exportFiles(
  io: ExportIo,
  path: string,
  filter: ExportFilter,
  dir: string,
): Promise<void> {
  const wanted: RecordFile[] = [];
  const file = await _openBackup(io, path);
  try {
    await exportRecords(file, filter, "jsonl", (text) => {
      for (const line of text.split("\n")) {
        if (line === "") continue;
        wanted.push(...recordFiles(JSON.parse(line)));
      }
    });
  } finally {
    file.close();
  }
  let counts;
  try {
    counts = await copyOut(filesDirectory(path), dir, wanted);
  } catch (error) {
    throw new CommandFailure(`cannot copy the files into ${dir}: ${_reason(error)}`);
  }
  const { copied, missing, damaged } = counts;
  io.err(
    `contactd export: ${copied} file(s) copied into ${dir}` +
      (missing === 0 ? "" : `; ${missing} no longer kept`) +
      (damaged === 0 ? "" : `; ${damaged} not matching their sha256, not copied`),
  );
}

function _reason(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) {
    return "no such file (nothing received yet, or MESSAGES_FILE names another file)";
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return "the system refused access: run it as the user that runs contactd";
  }
  if (error instanceof Deno.errors.NotCapable) {
    return "not permitted: this contactd may read only the MESSAGES_FILE it was built or " +
      "started for";
  }
  return error instanceof Error ? error.name : "unreadable";
}
