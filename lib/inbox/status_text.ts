/**
 * The answers to `/status` and `/pending` in the owner's chat: delivery's state, what waits and
 * how old it is, and the last 24 hours' counts. Ids and ages only: no personal data.
 *
 * @module
 */
import type { DeliveryStatus } from "../delivery/health.ts";
import { MIN_EXAMPLES } from "../learn/classifier.ts";

/** What `/status` reports. */
export interface StatusReport {
  /** The queue's health (lib/delivery/health.ts). */
  readonly delivery: DeliveryStatus;
  /** Submissions not yet in the chat. */
  readonly pending: number;
  /** The oldest of them, in ms; `undefined` when none waits. */
  readonly oldestMs: number | undefined;
  /** Replies by email waiting (`undefined`: replies by email are off). */
  readonly replies: number | undefined;
  /** Files sent with forms waiting for the chat (`undefined` or 0: no line). */
  readonly files?: number | undefined;
  /**
   * The last 24 hours, site-wide: only in the default form's chat (a form's own chat sees what
   * belongs to it only); `undefined` elsewhere.
   */
  readonly last24h?: {
    readonly delivered: number;
    readonly heldSpam: number;
    readonly rateLimited: number;
  } | undefined;
  /**
   * The learned spam filter's examples (lib/spam/spam_filter.ts `SpamFilter.counts`);
   * `undefined`: `SPAM_FILTER=off`.
   */
  readonly spamFilter?: { readonly spam: number; readonly ham: number; readonly ready: boolean };
}

/** The `/status` line of the learned spam filter: what it has learnt, and whether it scores. */
export function spamFilterLine(
  counts: { readonly spam: number; readonly ham: number; readonly ready: boolean },
  least: { readonly spam: number; readonly ham: number },
): string {
  const learnt = `Spam filter: learnt from ${counts.spam} spam and ${counts.ham} other submissions`;
  return counts.ready
    ? `${learnt}, scoring each new one.`
    : `${learnt}; it scores from ${least.spam} and ${least.ham} on.`;
}

/** One line of `/pending`. */
export interface PendingItem {
  readonly kind: "message" | "reply" | "file";
  /** The submission's id (a reply: the submission it answers; a file: the one it came with). */
  readonly id: string;
  readonly ageMs: number;
  /** Failed attempts so far. */
  readonly attempts: number;
}

/** Which chat's items {@linkcode pendingItems} keeps: `chat`, and the chat of each form. */
export interface ChatFilter {
  readonly chat: number;
  /** The chat a form's submissions go to (`undefined`: the default form). */
  readonly chatOf: (form: string | undefined) => number;
}

/**
 * What waits, for `/pending`: the submissions not yet in the chat (outbox entries not done) and
 * the replies not yet emailed, with their ages at `wallNow` (ms since the epoch) by their `ts`;
 * with `only`, those of that chat alone (a form's group never sees another form's).
 */
export function pendingItems(
  messages: Iterable<
    {
      readonly id: string;
      readonly ts: string;
      readonly attempts: number;
      readonly done: unknown;
      readonly form?: string | undefined;
    }
  >,
  replies: Iterable<
    {
      readonly submission: string;
      readonly ts: string;
      readonly attempts: number;
      readonly chat?: number;
    }
  >,
  wallNow: number,
  only?: ChatFilter,
  files: Iterable<
    {
      readonly submission: string;
      readonly ts: string;
      readonly attempts: number;
      readonly form: string | null;
    }
  > = [],
): PendingItem[] {
  const ageMs = (ts: string) => Math.max(0, wallNow - Date.parse(ts));
  const items: PendingItem[] = [];
  for (const entry of messages) {
    if (entry.done) continue;
    if (only !== undefined && only.chatOf(entry.form) !== only.chat) continue;
    items.push({ kind: "message", id: entry.id, ageMs: ageMs(entry.ts), attempts: entry.attempts });
  }
  for (const reply of replies) {
    if (only !== undefined && reply.chat !== only.chat) continue;
    items.push({
      kind: "reply",
      id: reply.submission,
      ageMs: ageMs(reply.ts),
      attempts: reply.attempts,
    });
  }
  // Files sent with forms, waiting for the chat (lib/delivery/documents.ts).
  for (const file of files) {
    if (only !== undefined && only.chatOf(file.form ?? undefined) !== only.chat) continue;
    items.push({
      kind: "file",
      id: file.submission,
      ageMs: ageMs(file.ts),
      attempts: file.attempts,
    });
  }
  return items;
}

/** The oldest waiting submission's age among `items` (`/status`); `undefined` when none waits. */
export function oldestMessageMs(items: readonly PendingItem[]): number | undefined {
  let oldest: number | undefined;
  for (const item of items) {
    if (item.kind === "message") oldest = Math.max(oldest ?? 0, item.ageMs);
  }
  return oldest;
}

/** At most this many items are listed by `/pending`; the rest are counted. */
export const PENDING_LISTED = 30;

/** An age as people say it, rounded down: `45 s`, `12 min`, `3 h`, `2 d`. */
export function formatAge(ms: number): string {
  return _spoken(ms, Math.floor, 0);
}

/** A duration as people say it, rounded up (a wait): `45 s`, `12 min`, `3 h`, `2 d`. */
export function formatPeriodShort(ms: number): string {
  return _spoken(ms, Math.ceil, 1);
}

/** `ms` in the largest unit that fits (days from 48 hours on), rounded by `round`. */
function _spoken(ms: number, round: (x: number) => number, least: number): string {
  const s = Math.max(least, round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${round(s / 60)} min`;
  if (s < 172_800) return `${round(s / 3600)} h`;
  return `${round(s / 86_400)} d`;
}

/** The answer to `/status`. */
export function statusText(report: StatusReport): string {
  const { delivery } = report;
  const state = delivery.state === "ok"
    ? "✅ Delivery: ok"
    : delivery.state === "outage"
    ? "⚠️ Delivery: the Bot API is failing, retrying with back-off"
    : `⛔ Delivery: paused (${delivery.reason ?? "settings"})`;
  const pending = report.pending === 0
    ? "Nothing waits."
    : `Waiting: ${report.pending}, the oldest ${formatAge(report.oldestMs ?? 0)} old.`;
  const lines = [state, pending];
  if (report.replies !== undefined) lines.push(`Replies by email waiting: ${report.replies}.`);
  if ((report.files ?? 0) > 0) lines.push(`Files waiting to be sent: ${report.files}.`);
  const day = report.last24h;
  if (day !== undefined) {
    lines.push(
      `Last 24 h: ${day.delivered} delivered, ${day.heldSpam} held as spam, ` +
        `${day.rateLimited} refused by the rate limit.`,
    );
  }
  if (report.spamFilter !== undefined) lines.push(spamFilterLine(report.spamFilter, MIN_EXAMPLES));
  return lines.join("\n");
}

/** How `/pending` names each kind of item before its `#id`. */
const PENDING_PREFIX: Readonly<Record<PendingItem["kind"], string>> = {
  message: "",
  reply: "reply to ",
  file: "file of ",
};

/** At most this many held submissions are listed by `/held`, each with its release button. */
export const HELD_LISTED = 10;

/**
 * The answer to `/held`: the submissions the learned spam filter held (`SPAM_FILTER=hold`),
 * newest first, `#<id> · <age> · <score> %` (ids, ages and scores only), at most
 * {@linkcode HELD_LISTED}; the rest counted.
 */
export function heldText(
  items: readonly { readonly id: string; readonly ts: string; readonly score: number }[],
  count: number,
  wallNow: number,
): string {
  if (count === 0) return "Nothing is held as spam.";
  const lines = items.slice(0, HELD_LISTED).map((item) =>
    `#${item.id} · ${formatAge(Math.max(0, wallNow - Date.parse(item.ts)))} · ` +
    `${Math.floor(item.score * 100)} %`
  );
  if (count > lines.length) lines.push(`… and ${count - lines.length} more`);
  return `Held as spam (${count}); a button below sends one to this chat:\n${lines.join("\n")}`;
}

/** The answer to `/pending`: ids and ages, oldest first, at most {@linkcode PENDING_LISTED}. */
export function pendingText(items: readonly PendingItem[]): string {
  if (items.length === 0) return "Nothing waits.";
  const sorted = [...items].sort((a, b) => b.ageMs - a.ageMs);
  const lines = sorted.slice(0, PENDING_LISTED).map((item) =>
    `${PENDING_PREFIX[item.kind]}#${item.id} · ${formatAge(item.ageMs)}` +
    (item.attempts > 0 ? ` · ${item.attempts} failed attempt${item.attempts === 1 ? "" : "s"}` : "")
  );
  if (sorted.length > PENDING_LISTED) lines.push(`… and ${sorted.length - PENDING_LISTED} more`);
  return `Waiting (${items.length}):\n${lines.join("\n")}`;
}
