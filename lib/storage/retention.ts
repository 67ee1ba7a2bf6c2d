/**
 * `RETENTION`: records older than it leave the backup file, the outbox drops what it keeps
 * of delivered (or given up) submissions, the chat ledger its entries of older submissions
 * (their messages stay in the chat), and each other file beside the backup file (the block
 * list, the replies) what it keeps past the same age, at start and then daily. The age cut is a
 * pure rule; {@linkcode applyRetention} is its shell (the rewrite through the appender, the
 * compaction, the other files' own prunes).
 *
 * @module
 */
import { describeError, type Logger } from "../log/logger.ts";
import type { KeptFile } from "./erasure.ts";
import type { Appender } from "./group_commit.ts";
import type { Ledger } from "./ledger.ts";
import { parseRecordLine, recordTime } from "./records.ts";
import { rewriteBackup, type RewriteFs, type RewriteOutcome } from "./rewrite.ts";

/** How often retention runs after the one at start. */
export const RETENTION_INTERVAL_MS = 86_400_000;

/**
 * Whether a backup line stays when records before `cutoff` (ms since the epoch) go: a record at
 * or after it stays; so does a line that is not a record, or whose `ts` is not a time (the rule
 * removes only what it knows to be old; such lines are for the operator to look at).
 */
export function keptByAge(cutoff: number): (line: string) => boolean {
  return (line) => {
    const record = parseRecordLine(line);
    if (record === undefined) return true;
    const time = recordTime(record);
    return Number.isNaN(time) || time >= cutoff;
  };
}

/** What {@linkcode applyRetention} works on. */
export interface RetentionDeps {
  /** The backup file's appender: the rewrite holds appends back while it runs. */
  readonly appender: Pick<Appender, "exclusive">;
  readonly fs: RewriteFs;
  /** The backup file. */
  readonly path: string;
  /** The outbox: compacted afterwards, which drops finished submissions. */
  readonly outbox: { compact(): Promise<void> };
  /** The wall clock, ms since the epoch. */
  readonly now: () => number;
  /** `RETENTION` in ms. */
  readonly retentionMs: number;
  readonly log: Logger;
  /** The chat ledger: pruned with the same cut (lib/storage/ledger.ts). */
  readonly ledger?: Pick<Ledger, "prune">;
  /** The other files beside the backup file, each pruned with the same cut. */
  readonly extra?: readonly KeptFile[];
}

/**
 * One retention run: the backup file without records older than `RETENTION`, then the outbox
 * compacted, then the chat ledger and the other files pruned with the same cut (each one's
 * failure logged on its own, the others still run; a failed rewrite of the backup file ends the
 * run, tried again the next day). Logs `retention` (counts only: `removed`
 * and `kept` of the backup file, `chat`, and one count per other file by its name) or
 * `retention_failed` (with `file`); never rejects.
 */
export async function applyRetention(deps: RetentionDeps): Promise<RewriteOutcome | undefined> {
  const { log } = deps;
  const cutoff = deps.now() - deps.retentionMs;
  let outcome: RewriteOutcome;
  try {
    // With the file to itself: lines appended meanwhile go to the new file, after the rename.
    const keep = keptByAge(cutoff);
    outcome = await deps.appender.exclusive(() => rewriteBackup(deps.fs, deps.path, keep, log));
  } catch (error) {
    log("error", { event: "retention_failed", file: "backup", error: describeError(error) });
    return undefined;
  }
  try {
    await deps.outbox.compact();
  } catch (error) {
    log("error", { event: "retention_failed", file: "outbox", error: describeError(error) });
  }
  const others: Record<string, number> = {};
  const prunes: Array<readonly [string, (cutoffMs: number) => Promise<number>]> = [];
  const { ledger } = deps;
  if (ledger !== undefined) prunes.push(["chat", (cut) => ledger.prune(cut)]);
  for (const file of deps.extra ?? []) {
    if (file.prune !== undefined) prunes.push([file.name, (cut) => file.prune!(cut)]);
  }
  for (const [file, prune] of prunes) {
    try {
      others[file] = await prune(cutoff);
    } catch (error) {
      log("error", { event: "retention_failed", file, error: describeError(error) });
    }
  }
  log("info", { event: "retention", removed: outcome.removed, kept: outcome.kept, ...others });
  return outcome;
}
