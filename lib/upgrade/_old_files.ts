/**
 * The files an older release (up to 6c90727) kept beside `MESSAGES_FILE`, each read with that
 * release's read-only parser (still in the tree) and turned into the store calls that hold the
 * same state. Reading never writes; every insert is by id (a row already held is left as it is).
 *
 * @module
 */
import {
  blockListPath,
  compactionPath,
  ledgerPath,
  outboxPath,
  repliesPath,
  updatesOffsetPath,
} from "../common/state_files.ts";
import type { Logger } from "../log/logger.ts";
import { readTextIfPresent, type StorageFs } from "../storage/file_system.ts";
import { applyLine, emptyFold } from "../storage/ledger_lines.ts";
import { submissionText } from "../storage/outbox.ts";
import { loadOutbox, readSubmissions } from "../storage/outbox_lines.ts";
import { splitLines } from "../storage/records.ts";
import { call, type StoreCall } from "../storage/store.ts";
import { readBlockList } from "../spam/block_file.ts";
import { isLive } from "../spam/block_list.ts";
import { auditRow, readReplies, replyRow } from "../mail/reply_store.ts";
import { OFFSET_KEY, offsetText, readOffsetFile } from "../inbox/offset_file.ts";

/** One old file read: the calls that import it, how many rows they give, lines skipped. */
export interface OldFileRead {
  readonly calls: StoreCall[];
  readonly rows: number;
  /** Damaged lines skipped (a torn last line included), as the old reader skipped them. */
  readonly skipped: number;
}

/** What reading an old file needs. */
export interface ReadDeps {
  readonly messagesFile: string;
  readonly fs: StorageFs;
  readonly log: Logger;
  /** The wall clock, ms since the epoch (expired blocks are not imported). */
  readonly now: number;
}

/** One kind of old file. */
export interface OldFile {
  /** Its name beside `MESSAGES_FILE` (the `imports` row's `file`). */
  readonly suffix: string;
  /** Its path for a backup file path. */
  readonly path: (messagesFile: string) => string;
  /** The temporary file its rewrites went through (removed with it). */
  readonly temporary: (messagesFile: string) => string;
  /** Reads it (present, not a link) into store calls. */
  readonly read: (deps: ReadDeps) => Promise<OldFileRead>;
}

const _tmp = (path: (messagesFile: string) => string) => (messagesFile: string) =>
  `${path(messagesFile)}.tmp`;

/** Every file an older release kept that holds state, in the order they are imported. */
export const OLD_FILES: readonly OldFile[] = [
  {
    suffix: ".outbox",
    path: outboxPath,
    temporary: (file) => compactionPath(outboxPath(file)),
    read: _readOutbox,
  },
  { suffix: ".chat", path: ledgerPath, temporary: _tmp(ledgerPath), read: _readLedger },
  { suffix: ".blocked", path: blockListPath, temporary: _tmp(blockListPath), read: _readBlocks },
  { suffix: ".replies", path: repliesPath, temporary: _tmp(repliesPath), read: _readReplies },
  {
    suffix: ".updates",
    path: updatesOffsetPath,
    temporary: _tmp(updatesOffsetPath),
    read: _readOffset,
  },
];

/**
 * The outbox: every entry still pending or without its backup record, in the file's order, with
 * its tries, errors, time and outcome; one whose record was never written stays unrecorded (the
 * start-up's recovery writes it). An entry whose text cannot be read back is logged
 * (`import_entry_unreadable`) and skipped: without a text there is nothing to deliver.
 */
async function _readOutbox({ messagesFile, fs, log }: ReadDeps): Promise<OldFileRead> {
  const path = outboxPath(messagesFile);
  const index = await loadOutbox(path, fs);
  if ((index.keptAside ?? 0) > 0) {
    // The old service's damaged lines, kept aside for the operator: left where they are.
    log("warn", { event: "import_damaged_kept", file: ".outbox.damaged", lines: index.keptAside });
  }
  const entries = [...index.entries.values()];
  const calls: StoreCall[] = [];
  let at = 0;
  for await (const submission of readSubmissions(path, entries, fs)) {
    const entry = entries[at++]!;
    if (submission === undefined) {
      log("error", { event: "import_entry_unreadable", file: ".outbox", id: entry.id });
      continue;
    }
    calls.push(call("outbox.add", {
      id: entry.id,
      ts: entry.ts,
      form: entry.form,
      submission: submissionText(submission),
      attempts: entry.attempts,
      firstError: entry.firstError,
      lastError: entry.lastError,
      lastTs: entry.lastTs,
      recorded: entry.status !== undefined,
      status: entry.status ?? null,
      done: entry.done === false ? null : entry.done,
    }));
  }
  return { calls, rows: calls.length, skipped: index.skipped };
}

/** The chat ledger: its entries (parts, state) and the deletions still waiting. */
async function _readLedger({ messagesFile, fs }: ReadDeps): Promise<OldFileRead> {
  // readLedger's fold, with its damaged lines counted (it skips them silently).
  const { lines, partial } = splitLines(
    await readTextIfPresent(fs, ledgerPath(messagesFile)) ?? "",
  );
  const fold = emptyFold();
  let skipped = partial.trim() === "" ? 0 : 1;
  for (const line of lines) {
    if (line !== "" && applyLine(fold, line) === "damaged") skipped++;
  }
  const calls = [...fold.entries.values()].map((entry) => call("imports.chatEntry", entry));
  const deletions = [...fold.pending].map(([chat, messages]) => ({ chat, messages }));
  if (deletions.length > 0) calls.push(call("ledger.addDeletions", { deletions }));
  const rows = fold.entries.size + deletions.reduce((n, d) => n + d.messages.length, 0);
  return { calls, rows, skipped };
}

/** The block list: the blocks still live (a lifted or expired one holds nothing). */
async function _readBlocks({ messagesFile, fs, now }: ReadDeps): Promise<OldFileRead> {
  const { list, damaged } = await readBlockList(fs, blockListPath(messagesFile));
  const blocks = list.all().filter((block) => isLive(block, now));
  return {
    calls: blocks.length === 0 ? [] : [call("blocks.add", { blocks })],
    rows: blocks.length,
    skipped: damaged.length,
  };
}

/** The replies: the waiting ones with their drafts and tries, and the done ones' audits. */
async function _readReplies({ messagesFile, fs }: ReadDeps): Promise<OldFileRead> {
  const read = await readReplies(fs, repliesPath(messagesFile));
  const calls = [
    ...read.pending.map((reply) => call("replies.add", replyRow(reply))),
    ...read.audits.map((audit) => call("replies.addAudit", auditRow(audit))),
  ];
  return { calls, rows: calls.length, skipped: read.skipped };
}

/** The updates offset, with the bot it counts for (a damaged one is logged by its reader). */
async function _readOffset({ messagesFile, fs, log }: ReadDeps): Promise<OldFileRead> {
  const kept = await readOffsetFile(messagesFile, fs, log);
  return kept === undefined ? { calls: [], rows: 0, skipped: 0 } : {
    calls: [call("meta.set", { key: OFFSET_KEY, value: offsetText(kept) })],
    rows: 1,
    skipped: 0,
  };
}
