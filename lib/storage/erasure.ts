/**
 * Erasure on request (`contactd forget`): which submissions a request names (by id, by contact,
 * by client address, every written form of one address alike), and removing every trace
 * contactd keeps of them: their records in the backup file (rewritten through the appender, so
 * nothing appended meanwhile is lost) and their outbox entries (a pending one is given up, so it
 * is never delivered; the compaction that follows drops their lines).
 *
 * @module
 */
import { canonicalIp } from "../common/ip.ts";
import { isRecord, parseJsonText } from "../common/json.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import type { Logger } from "../log/logger.ts";
import type { Appender } from "./group_commit.ts";
import { type Outbox, OutboxEntryDamaged, type OutboxSubmission } from "./outbox.ts";
import { rewriteBackup, type RewriteFs } from "./rewrite.ts";

/** What `forget` names: `--id`, `--contact` or `--address`. */
export type ForgetMatch =
  | { readonly by: "id"; readonly value: string }
  | { readonly by: "contact"; readonly value: string }
  | { readonly by: "address"; readonly value: string };

/** The options of `forget`, one per kind of match. */
export const FORGET_KINDS = ["id", "contact", "address"] as const;

/**
 * The match for `--<by> value`, or why it cannot be one: an id is what the chat shows after `#`,
 * a contact is not blank, an address is an IPv4 or IPv6 address.
 */
export function parseForgetMatch(
  by: ForgetMatch["by"],
  value: string,
): ForgetMatch | { readonly error: string } {
  const text = value.trim();
  if (by === "id") {
    return /^#?[A-Za-z0-9_-]{1,64}$/.test(text)
      ? { by, value: text.replace(/^#/, "") }
      : { error: "--id takes a submission id, as the chat shows it after #" };
  }
  if (by === "contact") {
    return text === "" ? { error: "--contact takes the contact to forget" } : { by, value: text };
  }
  const ip = canonicalIp(text);
  return ip === null ? { error: "--address takes an IPv4 or IPv6 address" } : { by, value: ip };
}

/** A contact as compared: Unicode NFC, trimmed, lower case (emails and @names alike). */
function _contactKey(text: string): string {
  return text.normalize("NFC").trim().toLowerCase();
}

/**
 * Whether a record (or an outbox submission: `id`, `contact`, `ip`) is one `match` names:
 * the same id; the same contact (case and Unicode form aside); the same address in any of its
 * written forms (`2001:DB8::1`, `2001:db8:0:0:0:0:0:1`, `::ffff:192.0.2.1` for `192.0.2.1`).
 */
export function matches(match: ForgetMatch, value: Readonly<Record<string, unknown>>): boolean {
  switch (match.by) {
    case "id":
      return value.id === match.value;
    case "contact":
      return typeof value.contact === "string" &&
        _contactKey(value.contact) === _contactKey(match.value);
    case "address":
      return typeof value.ip === "string" && canonicalIp(value.ip) === match.value;
  }
}

/** Whether a backup line is a record that `match` names (a damaged line is not). */
export function lineMatches(match: ForgetMatch, line: string): boolean {
  const value = parseJsonText(line);
  return isRecord(value) && matches(match, value);
}

/** What an erasure removed (or, dry, would remove). */
export interface ErasureOutcome {
  /** Records of the backup file. */
  readonly records: number;
  /** Submissions still waiting for delivery in the outbox: never delivered now. */
  readonly pending: number;
}

/** What {@linkcode erase} works on. */
export interface ErasureDeps {
  /** The backup file's appender (a stopped service's: any task runs at once). */
  readonly appender: Pick<Appender, "exclusive">;
  readonly fs: RewriteFs;
  /** The backup file. */
  readonly path: string;
  readonly outbox: Pick<Outbox, "entries" | "read" | "done" | "recorded" | "compact">;
  /**
   * The service is stopped (`forget` holds the lock): an entry whose sender was never answered
   * (a crash) is noted as recorded too, so the next start writes no record for it. While the
   * service runs, such a sender is being answered, and its record is written after the erasure.
   */
  readonly stopped?: boolean;
  /** The wall clock, ms since the epoch. */
  readonly now: () => number;
  readonly log: Logger;
}

/**
 * Removes what `match` names: the pending outbox entries first (given up, so the queue never
 * sends them), then the backup records, then the outbox compacted (the lines of every finished
 * submission go, the forgotten ones with them). `dryRun` only counts. Rejects when a file cannot
 * be read or written; what was done before stays done (run it again to finish).
 */
export async function erase(
  deps: ErasureDeps,
  match: ForgetMatch,
  dryRun: boolean,
): Promise<ErasureOutcome> {
  let pending = 0;
  for (const entry of [...deps.outbox.entries()]) {
    const waiting = entry.done === false;
    const unrecorded = deps.stopped === true && entry.status === undefined;
    if (!waiting && !unrecorded) continue;
    let submission: OutboxSubmission;
    try {
      submission = await deps.outbox.read(entry.id);
    } catch (error) {
      if (error instanceof OutboxEntryDamaged) continue; // its text is lost already
      throw error;
    }
    const { id, contact, ip } = submission;
    if (!matches(match, { id, contact, ip })) continue;
    if (waiting) pending++;
    if (dryRun) continue;
    if (waiting) {
      await deps.outbox.done(entry.id, formatTimestamp(new Date(deps.now())), "given_up");
    }
    if (unrecorded) await deps.outbox.recorded(entry.id, null);
  }
  // With the file to itself: lines appended meanwhile go to the new file, after the rename.
  const keep = (line: string) => !lineMatches(match, line);
  const { removed } = await deps.appender.exclusive(() =>
    rewriteBackup(deps.fs, deps.path, keep, deps.log, dryRun)
  );
  if (!dryRun) await deps.outbox.compact();
  return { records: removed, pending };
}
