/**
 * Erasure on request (`contactd forget`): which submissions a request names (by id, by contact,
 * by client address, every written form of one address alike), and removing every trace
 * contactd keeps of them: their records in the backup file (rewritten through the appender, so
 * nothing appended meanwhile is lost), their outbox entries (a pending one is given up, so it
 * is never delivered; the compaction that follows drops their lines), their chat ledger entries
 * (lib/storage/ledger.ts: their messages become deletions for the bot to make in the chat), and
 * whatever the other files beside the backup file keep of them ({@linkcode KeptFile}: the block
 * list, the replies). While the service runs, the
 * ids it erased are remembered ({@linkcode ForgottenIds}) so that a sender still waiting gets no
 * delivery and no record afterwards.
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
import { removeIfPresent } from "./file_system.ts";
import type { ChatDeletion, Ledger } from "./ledger.ts";
import { rewritePath } from "../common/state_files.ts";

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
    // As the ids are made (lib/form/submission_id.ts): lower-case Crockford base32, so any case
    // is the same id, and I, L and O are read as 1, 1 and 0 as Crockford's alphabet says.
    const id = text.replace(/^#/, "").toLowerCase().replace(/[il]/g, "1").replace(/o/g, "0");
    return /^[0-9a-hjkmnp-tv-z]{1,64}$/.test(id)
      ? { by, value: id }
      : { error: "--id takes a submission id, as the chat shows it after # (0-9 and a-z)" };
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
 * Whether `a` and `b` name the same: the same option and value (a contact whatever its case and
 * Unicode form; ids and addresses are canonical already).
 */
export function sameMatch(a: ForgetMatch, b: ForgetMatch): boolean {
  if (a.by !== b.by) return false;
  return a.by === "contact" ? _contactKey(a.value) === _contactKey(b.value) : a.value === b.value;
}

/**
 * Whether a record (or an outbox submission: `id`, `contact`, `ip`, `fields`, `follow_up`) is one
 * `match` names: the same id, or a follow-up of that id's case (lib/cases/); the same contact
 * (case and Unicode form aside) in `contact` or as the whole value of one of its other fields; the
 * same address in any of its written forms (`2001:DB8::1`, `2001:db8:0:0:0:0:0:1`,
 * `::ffff:192.0.2.1` for `192.0.2.1`). (A follow-up of a case whose first submission a contact or
 * an address names is erased with it by {@linkcode erase}, which finds the first one first.)
 */
export function matches(match: ForgetMatch, value: Readonly<Record<string, unknown>>): boolean {
  switch (match.by) {
    case "id":
      return value.id === match.value || value.follow_up === match.value;
    case "contact": {
      // The contact field, or any field the form kept beside it (an `email` or `phone` of its
      // own, when `contact` came from another field): each as a whole value.
      const key = _contactKey(match.value);
      const fields = isRecord(value.fields) ? Object.values(value.fields) : [];
      return [value.contact, ...fields].some((text) =>
        typeof text === "string" && _contactKey(text) === key
      );
    }
    case "address":
      return typeof value.ip === "string" && canonicalIp(value.ip) === match.value;
  }
}

/** What an erasure removed (or, dry, would remove). */
export interface ErasureOutcome {
  /** Records of the backup file. */
  readonly records: number;
  /** Submissions still waiting for delivery in the outbox: never delivered now. */
  readonly pending: number;
  /**
   * Submissions waiting on disk beyond the window the outbox holds in memory (1024): not
   * searched, so they may still be delivered; absent when there are none.
   */
  readonly unsearched?: number;
  /** Entries of the chat ledger (submissions sent to the chat); absent without a ledger. */
  readonly chatEntries?: number;
  /** Their messages, to be deleted from the chat by the bot; absent without a ledger. */
  readonly chatMessages?: number;
  /** What each {@linkcode KeptFile} removed, by its name; absent without any. */
  readonly extra?: Readonly<Record<string, number>>;
}

/**
 * Another file contactd keeps about submissions beside the backup file (the block list, the
 * replies): its part in retention (lib/storage/retention.ts) and in erasure. Each returns how
 * many of its entries went (or, dry, would go).
 */
export interface KeptFile {
  /** Its name in counts and log lines: a short snake_case word (`blocked`, `replies`). */
  readonly name: string;
  /** Removes what is older than `cutoffMs` (ms since the epoch). */
  prune?(cutoffMs: number): Promise<number>;
  /**
   * Removes what `match` names or belongs to the submissions `ids` (every id the erasure
   * found: in the backup file, the outbox and the chat ledger). `dryRun`: counts only, writes
   * nothing.
   */
  forget?(match: ForgetMatch, ids: ReadonlySet<string>, dryRun: boolean): Promise<number>;
}

/** At most this many forgotten ids are remembered by a running service (the oldest go first). */
export const FORGOTTEN_CAP = 10_000;

/**
 * The ids a running service forgot, remembered while their senders may still wait (`keepMs`,
 * about `DELIVERY_WAIT_MS`; at most {@linkcode FORGOTTEN_CAP}): the send queue never sends one
 * (lib/delivery/queue.ts) and no record is written for one (lib/http/accept.ts).
 */
export class ForgottenIds {
  readonly #until = new Map<string, number>();
  readonly #keepMs: number;
  readonly #now: () => number;
  readonly #cap: number;

  /** Remembers each id `keepMs` by the monotonic clock `now`, at most `cap` of them. */
  constructor(keepMs: number, now: () => number, cap = FORGOTTEN_CAP) {
    this.#keepMs = keepMs;
    this.#now = now;
    this.#cap = cap;
  }

  /** Remembers `id` as forgotten. */
  add(id: string): void {
    const now = this.#now();
    for (const [old, until] of this.#until) {
      if (until >= now && this.#until.size < this.#cap) break;
      this.#until.delete(old);
    }
    this.#until.delete(id);
    this.#until.set(id, now + this.#keepMs);
  }

  /** Whether `id` was forgotten (and is still remembered). */
  has(id: string): boolean {
    const until = this.#until.get(id);
    return until !== undefined && until >= this.#now();
  }

  /** How many ids are remembered. */
  get size(): number {
    return this.#until.size;
  }
}

/** What {@linkcode erase} works on. */
export interface ErasureDeps {
  /** The backup file's appender (a stopped service's: any task runs at once). */
  readonly appender: Pick<Appender, "exclusive">;
  readonly fs: RewriteFs;
  /** The backup file. */
  readonly path: string;
  readonly outbox:
    & Pick<Outbox, "entries" | "read" | "done" | "recorded" | "compact">
    & Partial<Pick<Outbox, "pendingCount" | "forget" | "flush">>;
  /**
   * The service is stopped (`forget` holds the lock): an entry whose sender was never answered
   * (a crash) is noted as recorded too, so the next start writes no record for it. While the
   * service runs, such a sender is being answered, and its record is written after the erasure.
   */
  readonly stopped?: boolean;
  /** The wall clock, ms since the epoch. */
  readonly now: () => number;
  readonly log: Logger;
  /** A running service's forgotten ids: each match is added before its entry is marked. */
  readonly forgotten?: Pick<ForgottenIds, "add">;
  /**
   * The pending submissions in the outbox's file, the ones beyond its window included
   * ({@linkcode pendingOnDisk}); absent: only the window is searched (`unsearched` says how many
   * more wait).
   */
  readonly pendingOnDisk?: () => AsyncIterable<OutboxSubmission>;
  /**
   * The chat ledger: the entries of the submissions found, and those it matches itself (by id,
   * contact or address), are forgotten; their messages become deletions waiting.
   */
  readonly ledger?: Pick<Ledger, "entries" | "forget">;
  /**
   * Told what the ledger's forget returned (not on a dry run, not when empty): the running
   * service deletes those messages from the chat now. Absent (the service stopped): they wait
   * in the ledger for its next start.
   */
  readonly onChatDeletions?: (deletions: ChatDeletion[]) => void;
  /** The other files beside the backup file, each asked to forget too. */
  readonly extra?: readonly KeptFile[];
  /**
   * Told what is erased by then, to note durably, at each point after which a crash leaves
   * something a run again could not find: once the outbox's matches are found, before anything
   * is committed (`records` and `pending` 0, their ids noted), after the outbox's part, right
   * before the rewritten backup file takes its place, and after the chat ledger's part, before
   * the other files'. It lets a run again say what this one removed, and finish it
   * (lib/storage/forget_request.ts). A rejection stops the erasure there. Never told on a dry
   * run.
   */
  readonly noteProgress?: (progress: ErasureProgress) => Promise<void>;
  /**
   * The submission ids an interrupted run of this erasure had found (noted by its
   * `noteProgress`): their records and outbox rows may be gone by now, so they count as found:
   * their follow-ups, chat ledger entries and parts of the other files go too.
   */
  readonly found?: Iterable<string>;
}

/** What an erasure removed by a point ({@linkcode ErasureDeps.noteProgress}). */
export interface ErasureProgress {
  /** Records of the backup file: 0 before its rename. */
  readonly records: number;
  /** Submissions given up (committed before the note). */
  readonly pending: number;
  /** Every submission id found: in the outbox, the backup file, and `found`. */
  readonly ids: ReadonlySet<string>;
  /** The rewritten backup file's identity (`dev:ino`), once there is one; else "". */
  readonly file: string;
}

/**
 * Removes what `match` names: the pending outbox entries first (given up, so the queue never
 * sends them), then the backup records, then the chat ledger's entries of every submission
 * found (and of those it matches itself), then each {@linkcode KeptFile}'s, then the outbox
 * compacted (the database's log emptied into its file, whose deleted rows are overwritten). `dryRun`
 * only counts. Rejects when a file cannot be read or written; what was done before stays done,
 * and a run again finishes it: given what this one noted (`noteProgress`) as `found`, it erases
 * the other files' parts of the submissions whose records and outbox rows are gone already
 * (lib/storage/forget_request.ts `eraseNoted` keeps the note of a failed or interrupted run).
 */
export async function erase(
  deps: ErasureDeps,
  match: ForgetMatch,
  dryRun: boolean,
): Promise<ErasureOutcome> {
  // Answers noted in memory only (lib/storage/outbox.ts `recordedSoon`) are committed first: a
  // row memory counts finished is deleted then, text and all, so none is left out of sight for
  // a later start's recovery to write back.
  if (!dryRun) await deps.outbox.flush?.();
  let pending = 0;
  /** Every submission id found, for the ledger and the other files. */
  const ids = new Set<string>();
  const pendingBefore = deps.outbox.pendingCount;
  const { found, onDisk, waitingInWindow, searchedDisk } = await _findInOutbox(deps, match);
  for (const id of [...found.keys(), ...onDisk]) ids.add(id);
  // What an interrupted run found, which neither the outbox nor the backup file may hold now.
  for (const id of deps.found ?? []) ids.add(id);
  // Noted at each point after which a run again could not find what went (see noteProgress):
  // first before anything is committed.
  const note = dryRun ? undefined : deps.noteProgress;
  let renamedTo = "";
  await note?.({ records: 0, pending: 0, ids, file: renamedTo });
  const now = () => formatTimestamp(new Date(deps.now()));
  for (const [id, { waiting, unrecorded }] of found) {
    if (waiting) pending++;
    if (dryRun) continue;
    deps.forgotten?.add(id);
    if (waiting) await deps.outbox.done(id, now(), "given_up");
    if (unrecorded) await deps.outbox.recorded(id, null);
  }
  for (const id of onDisk) {
    pending++;
    if (dryRun) continue;
    deps.forgotten?.add(id);
    await deps.outbox.done(id, now(), "given_up");
  }
  // Their rows go at once, text and all (beyond the window as in it): nothing of them is left for
  // a later start's recovery to write back.
  /** What the outbox gave up already. */
  const givenUp = new Set([...found.keys(), ...onDisk]);
  if (!dryRun && deps.outbox.forget !== undefined) await deps.outbox.forget(givenUp);
  await note?.({ records: 0, pending, ids, file: renamedTo });
  // With the file to itself: lines appended meanwhile go to the new file, after the rename. A
  // temporary file a crashed rewrite left (it may hold what is erased now) goes first.
  // A follow-up's record comes after its case's first one: found by then, it goes with it.
  const keep = (line: string) => {
    const value = parseJsonText(line);
    if (!isRecord(value)) return true;
    const followed = typeof value.follow_up === "string" && ids.has(value.follow_up);
    if (!followed && !matches(match, value)) return true;
    if (typeof value.id === "string") ids.add(value.id);
    return false;
  };
  const { removed } = await deps.appender.exclusive(async () => {
    if (!dryRun) await removeIfPresent(deps.fs, rewritePath(deps.path));
    return await rewriteBackup(
      deps.fs,
      deps.path,
      keep,
      deps.log,
      dryRun,
      note &&
        ((outcome, identity) =>
          note({ records: outcome.removed, pending, ids, file: renamedTo = identity })),
    );
  });
  // Follow-ups still waiting of a case found only in the backup file (a contact or an address
  // named its first submission): given up and gone too.
  pending += await _eraseFollowUps(deps, ids, givenUp, dryRun);
  const chat = deps.ledger === undefined ? {} : await _eraseLedger(deps, match, ids, dryRun);
  await note?.({ records: removed, pending, ids, file: renamedTo });
  const extra: Record<string, number> = {};
  for (const file of deps.extra ?? []) {
    if (file.forget !== undefined) extra[file.name] = await file.forget(match, ids, dryRun);
  }
  if (!dryRun) await deps.outbox.compact();
  // Pending submissions on disk beyond the window the outbox holds: not searched.
  const unsearched = pendingBefore === undefined || searchedDisk
    ? 0
    : Math.max(0, pendingBefore - waitingInWindow);
  return {
    records: removed,
    pending,
    ...(unsearched > 0 ? { unsearched } : {}),
    ...chat,
    ...(deps.extra === undefined || deps.extra.length === 0 ? {} : { extra }),
  };
}

/**
 * The outbox's submissions `match` names, nothing changed yet: those in its window (`found`,
 * waiting or never recorded), and those waiting beyond it on disk (`onDisk`, when
 * `pendingOnDisk` is given and more wait than the window holds).
 */
async function _findInOutbox(deps: ErasureDeps, match: ForgetMatch): Promise<{
  found: Map<string, { waiting: boolean; unrecorded: boolean }>;
  onDisk: string[];
  waitingInWindow: number;
  searchedDisk: boolean;
}> {
  let waitingInWindow = 0;
  const pendingBefore = deps.outbox.pendingCount;
  const inWindow = new Set<string>();
  /** Found in the window: whether each waits for delivery, and whether it was never recorded. */
  const found = new Map<string, { waiting: boolean; unrecorded: boolean }>();
  for (const entry of [...deps.outbox.entries()]) {
    inWindow.add(entry.id);
    const waiting = entry.done === false;
    if (waiting) waitingInWindow++;
    // Stopped: a crash left it unrecorded. Running: its sender is being answered; its record
    // would be appended after the rewrite, so it is noted recorded and its id forgotten instead.
    const unrecorded = entry.status === undefined &&
      (deps.stopped === true || deps.forgotten !== undefined);
    if (!waiting && !unrecorded) continue;
    let submission: OutboxSubmission;
    try {
      submission = await deps.outbox.read(entry.id);
    } catch (error) {
      if (error instanceof OutboxEntryDamaged) continue; // its text is lost already
      throw error;
    }
    if (!matches(match, _matched(submission))) continue;
    found.set(entry.id, { waiting, unrecorded });
  }
  // Beyond the window, on disk: given up too (the outbox notes a done line for an entry it does
  // not hold, and its refill reads the entry in as finished).
  const onDisk: string[] = [];
  let searchedDisk = false;
  if (deps.pendingOnDisk !== undefined && (pendingBefore ?? 1) > waitingInWindow) {
    for await (const submission of deps.pendingOnDisk()) {
      const { id } = submission;
      if (inWindow.has(id) || !matches(match, _matched(submission))) continue;
      onDisk.push(id);
    }
    searchedDisk = true;
  }
  return { found, onDisk, waitingInWindow, searchedDisk };
}

/** The fields of an outbox submission that {@linkcode matches} reads. */
function _matched(submission: OutboxSubmission): Record<string, unknown> {
  const { id, contact, ip, fields, followUp } = submission;
  return { id, contact, ip, fields, ...(followUp === undefined ? {} : { follow_up: followUp }) };
}

/**
 * The follow-ups of the cases `ids` names still in the outbox (waiting, in its window and beyond
 * it, or being answered) and not erased yet (`givenUp`): given up or noted recorded, their rows
 * deleted, their ids joining `ids`. Returns how many were waiting.
 */
async function _eraseFollowUps(
  deps: ErasureDeps,
  ids: Set<string>,
  givenUp: ReadonlySet<string>,
  dryRun: boolean,
): Promise<number> {
  /** Found: whether each still waits for delivery. */
  const found = new Map<string, boolean>();
  const ofErased = (submission: OutboxSubmission) =>
    submission.followUp !== undefined && ids.has(submission.followUp) &&
    !givenUp.has(submission.id);
  const inWindow = new Set<string>();
  for (const entry of [...deps.outbox.entries()]) {
    inWindow.add(entry.id);
    const waiting = entry.done === false;
    // As in erase's own pass: a row whose sender is being answered (running), or was never
    // answered (a crash, stopped), goes too, so no record of it comes afterwards.
    const unrecorded = entry.status === undefined &&
      (deps.stopped === true || deps.forgotten !== undefined);
    if ((!waiting && !unrecorded) || givenUp.has(entry.id)) continue;
    try {
      if (ofErased(await deps.outbox.read(entry.id))) found.set(entry.id, waiting);
    } catch (error) {
      if (!(error instanceof OutboxEntryDamaged)) throw error;
    }
  }
  if (deps.pendingOnDisk !== undefined) {
    for await (const submission of deps.pendingOnDisk()) {
      if (!inWindow.has(submission.id) && ofErased(submission)) found.set(submission.id, true);
    }
  }
  for (const id of found.keys()) ids.add(id);
  const waiting = [...found.values()].filter(Boolean).length;
  if (dryRun || found.size === 0) return waiting;
  const now = formatTimestamp(new Date(deps.now()));
  for (const [id, stillWaiting] of found) {
    deps.forgotten?.add(id);
    if (stillWaiting) await deps.outbox.done(id, now, "given_up");
    else await deps.outbox.recorded(id, null);
  }
  await deps.outbox.forget?.([...found.keys()]);
  return waiting;
}

/**
 * The ledger's part: the entries of the submissions `ids` and those `match` names (the ledger
 * keeps id, contact and address), forgotten; their ids join `ids`.
 */
async function _eraseLedger(
  deps: ErasureDeps,
  match: ForgetMatch,
  ids: Set<string>,
  dryRun: boolean,
): Promise<{ chatEntries: number; chatMessages: number }> {
  const chosen = new Set<string>();
  let chatMessages = 0;
  for (const entry of deps.ledger?.entries() ?? []) {
    const { id, contact, ip } = entry;
    if (!ids.has(id) && !matches(match, { id, contact, ip })) continue;
    chosen.add(id);
    chatMessages += entry.messages.length;
  }
  for (const id of chosen) ids.add(id);
  if (!dryRun && chosen.size > 0 && deps.ledger !== undefined) {
    const deletions = await deps.ledger.forget(chosen);
    if (deletions.length > 0) deps.onChatDeletions?.(deletions);
  }
  return { chatEntries: chosen.size, chatMessages };
}
