/**
 * Start-up after a crash. The order of the two durable writes for one submission is: commit its
 * outbox row, deliver, append and sync its backup record, answer the sender, then mark the row
 * recorded. A crash can therefore leave a row unmarked whose record is, or is not, in the backup
 * file. Each unmarked row is looked for there (from where the previous start left the file, so
 * the search is short): found, the row is only marked; not found, its record is appended now,
 * marked `interrupted` unless it had reached the chat. Either way it stays in the outbox until
 * delivered. No record is written twice. A row whose text cannot be read gets no record (logged
 * `record_unrecoverable`).
 *
 * @module
 */
import { formatRecord } from "./backup.ts";
import type { Logger } from "../log/logger.ts";
import type { Appender } from "./group_commit.ts";
import { type Outbox, type OutboxSubmission, submissionOf } from "./outbox.ts";
import { recordIdsIn } from "./backup_scan.ts";
import type { Store } from "./store.ts";

/** The `messenger_error` of a record written at start-up for an unanswered submission. */
export const INTERRUPTED = "interrupted";

/** A row whose backup record was never marked written. */
export interface Unrecorded {
  readonly id: string;
  /** Its text; `undefined` when it cannot be read. */
  readonly submission: OutboxSubmission | undefined;
  /** It reached the chat already. */
  readonly delivered: boolean;
}

/** What {@linkcode recoverRecords} works with. */
export interface RecoveryDeps {
  /** The rows never marked recorded, oldest first. */
  readonly unrecorded: () => Promise<readonly Unrecorded[]>;
  /** Which of `ids` have a record in the backup file already. */
  readonly inBackup: (ids: ReadonlySet<string>) => Promise<ReadonlySet<string>>;
  /** Appends one record, synced. */
  readonly append: (line: string) => Promise<unknown>;
  /** Marks a row recorded (no answer was given: `null`). */
  readonly recorded: (id: string) => Promise<void>;
  readonly log: Logger;
}

/**
 * Writes the missing backup records; returns how many were written. A failed write stops
 * start-up (it rejects); an unreadable row does not.
 */
export async function recoverRecords(deps: RecoveryDeps): Promise<number> {
  const rows = await deps.unrecorded();
  if (rows.length === 0) return 0;
  const found = await deps.inBackup(new Set(rows.map((row) => row.id)));
  let written = 0;
  for (const row of rows) {
    if (found.has(row.id)) {
      await deps.recorded(row.id);
      deps.log("info", { event: "record_found", id: row.id });
      continue;
    }
    const submission = row.submission;
    if (submission === undefined) {
      deps.log("error", { event: "record_unrecoverable", id: row.id, reason: "damaged" });
      await deps.recorded(row.id);
      continue;
    }
    const { ts, name, contact, message, ip } = submission;
    await deps.append(formatRecord({
      ts,
      id: row.id,
      name,
      contact,
      message,
      ip,
      messenger_ok: row.delivered,
      messenger_error: row.delivered ? null : INTERRUPTED,
      form: submission.form,
      fields: submission.fields,
    }));
    await deps.recorded(row.id);
    deps.log("warn", { event: "record_recovered", id: row.id, delivered: row.delivered });
    written++;
  }
  return written;
}

/** Where the next start's search of the backup file begins (`meta`; the file's size). */
export const SCAN_FROM_KEY = "backup_scan_from";

/**
 * A record a crash left unmarked was appended after the previous start's end of the file; a
 * rewrite since (retention, erasure) may have moved it this much earlier.
 */
export const SCAN_MARGIN_BYTES = 1024 * 1024;

/**
 * After a rewrite of the backup file (retention, erasure) the next start's search begins at its
 * start: records may have moved earlier by more than the margin.
 */
export async function searchBackupFromStart(store: Pick<Store, "run">): Promise<void> {
  await store.run("meta.set", { key: SCAN_FROM_KEY, value: "0" });
}

/** What {@linkcode recoverWithStore} works with. */
export interface StoreRecoveryDeps {
  readonly store: Store;
  readonly outbox: Pick<Outbox, "recorded">;
  readonly backup: Pick<Appender, "append">;
  /** The backup file's path. */
  readonly messagesFile: string;
  readonly log: Logger;
}

/**
 * {@linkcode recoverRecords} over the database and the backup file; then notes where the next
 * start's search begins.
 */
export async function recoverWithStore(deps: StoreRecoveryDeps): Promise<number> {
  const { store, messagesFile } = deps;
  const saved = Number(await store.run("meta.get", { key: SCAN_FROM_KEY }) ?? 0);
  const written = await recoverRecords({
    unrecorded: async () =>
      (await store.run("outbox.unrecorded", undefined)).map((row) => ({
        id: row.id,
        submission: submissionOf(row, row.submission),
        delivered: row.done === "delivered",
      })),
    inBackup: async (ids) => {
      const size = (await Deno.stat(messagesFile)).size;
      const from = size < saved ? 0 : Math.max(0, saved - SCAN_MARGIN_BYTES);
      return await recordIdsIn(messagesFile, from, ids);
    },
    append: (line) => deps.backup.append(line),
    recorded: (id) => deps.outbox.recorded(id, null),
    log: deps.log,
  });
  const size = (await Deno.stat(messagesFile)).size;
  await store.run("meta.set", { key: SCAN_FROM_KEY, value: String(size) });
  return written;
}
