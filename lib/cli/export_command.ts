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
  exportText,
  selectRecords,
} from "../storage/export.ts";
import { CommandFailure, type CommandIo, run } from "./commands.ts";

/** What `export` needs beyond the other commands. */
export interface ExportIo extends CommandIo {
  /** Reads a whole file as UTF-8 text. */
  readonly readTextFile: (path: string) => Promise<string>;
}

/** `export`'s options, already checked by the command line. */
export interface ExportOptions extends ExportFilter {
  readonly format: ExportFormat;
}

/**
 * The text of the backup file `path`, or a {@linkcode CommandFailure} that says why it cannot be
 * read (missing, refused by the system, outside what this contactd may read).
 */
export async function readBackupText(io: ExportIo, path: string): Promise<string> {
  try {
    return await io.readTextFile(path);
  } catch (error) {
    throw new CommandFailure(`cannot read ${path}: ${_reason(error)}`);
  }
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
 * lines as they are in the file, or CSV); how many, and any damaged line skipped, to stderr.
 */
export const exportCommand = (settings: Settings, io: ExportIo, options: ExportOptions) =>
  run<ExportIo>("export", async (settings, io) => {
    const path = messagesFileOf(settings);
    const { records, damaged } = selectRecords(await readBackupText(io, path), options);
    const text = exportText(records, options.format);
    // `out` ends each line with "\n": the text's own last line break is left to it.
    if (text !== "") io.out(text.slice(0, -1));
    const skipped = damaged === 0 ? "" : `; ${damaged} damaged line(s) skipped`;
    io.err(`contactd export: ${records.length} record(s) from ${path}${skipped}`);
  })(settings, io);

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
