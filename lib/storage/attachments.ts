/**
 * The files sent with submissions, over the store (`files`, lib/storage/sqlite/files_sql.ts) and
 * the spool (`MESSAGES_FILE.files/`, lib/files/spool.ts): kept with their submission, counted
 * while they wait for the chat, and removed with it (retention, erasure).
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import type { Spool } from "../files/spool.ts";
import type { KeptFile } from "./erasure.ts";
import type { OutboxSubmission } from "./outbox_lines.ts";
import type { FileRow, FileState } from "./sqlite/files_sql.ts";
import { call, type Store, type StoreCall } from "./store.ts";

export type { FileRow, FileState } from "./sqlite/files_sql.ts";

/** The `files` rows of a submission's files (none when it brought none), `silent` as its notification. */
export function fileRows(
  submission: OutboxSubmission,
  options: { readonly silent?: boolean } = {},
): FileRow[] {
  return (submission.files ?? []).map((file, idx) => ({
    ...(options.silent === true ? { silent: true } : {}),
    submission: submission.id,
    idx,
    ts: submission.ts,
    form: submission.form ?? null,
    name: file.name,
    size: file.size,
    type: file.type,
    sha256: file.sha256,
    stored: file.stored,
  }));
}

/** Removes the stored files of `rows`; a missing one is not an error. */
async function removeStored(spool: Pick<Spool, "remove">, rows: readonly FileState[]) {
  for (const row of rows) await spool.remove(row.stored);
}

/** The files' part in retention and erasure (lib/storage/erasure.ts `KeptFile`). */
export function keptAttachments(
  store: Pick<Store, "run">,
  spool: Pick<Spool, "remove">,
): KeptFile {
  return {
    name: "files",
    async prune(cutoffMs) {
      const rows = await store.run("files.prune", { before: formatTimestamp(new Date(cutoffMs)) });
      await removeStored(spool, rows);
      return rows.length;
    },
    async forget(_match, ids, dryRun) {
      if (dryRun) return (await store.run("files.list", { ids: [...ids] })).length;
      const rows = await store.run("files.forget", { ids: [...ids] });
      await removeStored(spool, rows);
      return rows.length;
    },
  };
}

/** The name a kept file has in the spool: its submission's id and its index (`k3x9q2ab-0`). */
export function keptName(submission: string, idx: number): string {
  return `${submission}-${idx}`;
}

/**
 * Keeps the files of `submission`: each renamed in the spool to {@linkcode keptName} (so the
 * backup record's id finds them, `contactd export --files`); resolves with the call that lists
 * them in the store, for the caller to commit with the submission's outbox row. A crash (or a
 * failed commit) before that leaves files the next start sweeps away ({@linkcode sweepSpool}).
 */
export async function keepingAttachments(
  spool: Pick<Spool, "rename">,
  submission: OutboxSubmission,
  options: { readonly silent?: boolean } = {},
): Promise<StoreCall[]> {
  const files = fileRows(submission, options);
  if (files.length === 0) return [];
  const kept = files.map((row) => ({ ...row, stored: keptName(row.submission, row.idx) }));
  for (const [i, row] of files.entries()) await spool.rename(row.stored, kept[i]!.stored);
  return [call("files.add", { files: kept })];
}

/** {@linkcode keepingAttachments}, committed alone (a redo writes nothing). */
export async function keepAttachments(
  store: Pick<Store, "transaction">,
  spool: Pick<Spool, "rename">,
  submission: OutboxSubmission,
): Promise<void> {
  const calls = await keepingAttachments(spool, submission);
  if (calls.length > 0) await store.transaction(calls);
}

/**
 * Removes the files of the spool the store does not list (an upload a crash cut short, a
 * submission whose outbox write failed), returning their names. Only at start, before any
 * upload: a file being received is not listed yet.
 */
export async function sweepSpool(
  store: Pick<Store, "run">,
  spool: Pick<Spool, "remove">,
  names: readonly string[],
): Promise<string[]> {
  const known = new Set(await store.run("files.storedNames", undefined));
  const stray = names.filter((name) => !known.has(name));
  for (const name of stray) await spool.remove(name);
  return stray;
}
