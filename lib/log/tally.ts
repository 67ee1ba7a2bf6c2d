/**
 * Refusals and preflights are counted, not logged one line each: a flood of honeypot hits,
 * 429s, invalid bodies, foreign origins or preflights would otherwise cost a write per request
 * here and in the log collector (journald drops lines beyond its rate limit, errors included).
 * Every submission that reaches the messenger or the backup file keeps its own line.
 *
 * @module
 */
import type { LogFields, Logger } from "./logger.ts";

/** A logger that tallies refusals, and the flush that reports them. */
export interface TallyLogger {
  readonly log: Logger;
  /**
   * Logs one `contact_summary` line with the counts per result since the last flush, if any,
   * and the first refused origin of the period (`refused_origin`, cut, one line).
   */
  flush(): void;
}

// What a flood is made of: cheap to send, answered at once. A 408 costs its sender the whole
// read deadline: it keeps its own line.
const TALLIED_STATUSES: ReadonlySet<unknown> = new Set([400, 413, 415, 429]);
// A missing or failed spam challenge (403) is what a flood of spam is made of too.
const TALLIED_RESULTS: ReadonlySet<unknown> = new Set([
  "honeypot",
  "challenge_required",
  "challenge_failed",
  // A flood from a sender blocked as spam (lib/spam/): counted like the refusals.
  "held_spam",
  // Guessed case pages, writing to a closed one or one waiting for a reply (lib/http/case_route.ts).
  "case_not_found",
  "case_closed",
  "case_waiting",
  // Written back on a decoy's page (a honeypot hit's, a blocked sender's): a bot's flood too.
  "decoy_follow_up",
]);

/**
 * True for a `contact` outcome that is tallied: a honeypot hit, a missing or failed challenge,
 * or a 400, 413, 415 or 429; and for a foreign origin refused (403 `origin_not_allowed`) by any
 * route, the preflight included.
 */
export function isRefusal(fields: LogFields): boolean {
  // Another site's page can make every visitor's browser send these: a flood like the others.
  if (fields.result === "origin_not_allowed") return true;
  // A press, command or reply in the chat refused (lib/inbox/): anyone who finds the bot can.
  if (fields.event === "action_refused") return true;
  if (fields.event !== "contact") return false;
  return TALLIED_RESULTS.has(fields.result) || TALLIED_STATUSES.has(fields.status);
}

/** True for a line that is tallied: a refusal, or an answered CORS preflight (one per POST). */
export function isTallied(fields: LogFields): boolean {
  return isRefusal(fields) || fields.event === "preflight";
}

/**
 * The summary's name for a tallied line: a `contact` line's `result`; otherwise the event, with
 * its `result` when it has one (`preflight`, `preflight_origin_not_allowed`).
 */
function tallyKey(fields: LogFields): string {
  if (fields.event === "contact") return String(fields.result);
  return fields.result === undefined ? fields.event : `${fields.event}_${fields.result}`;
}

/** How often the service flushes the tally: one `contact_summary` line per this many ms at most. */
export const SUMMARY_INTERVAL_MS = 10_000;

/** At most this many characters of a refused origin reach the summary. */
const ORIGIN_CHARS = 100;

/**
 * Wraps `log`: refusals and preflights are counted per {@linkcode tallyKey}; every other line
 * passes through at once.
 */
export function tallyRefusals(log: Logger): TallyLogger {
  let counts = new Map<string, number>();
  let refused = 0;
  let refusedOrigin: string | undefined;
  return {
    log(level, fields) {
      if (level !== "info" || !isTallied(fields)) return log(level, fields);
      const key = tallyKey(fields);
      counts.set(key, (counts.get(key) ?? 0) + 1);
      if (!isRefusal(fields)) return;
      refused++;
      if (refusedOrigin === undefined && typeof fields.origin === "string") {
        // Control characters (a line break included) become "?": the summary stays one line.
        // deno-lint-ignore no-control-regex
        refusedOrigin = fields.origin.slice(0, ORIGIN_CHARS).replace(/[\x00-\x1f\x7f]/g, "?");
      }
    },
    flush() {
      if (counts.size === 0) return;
      const summary: Record<string, number | string> = {};
      for (const [key, count] of counts) summary[key] = count;
      if (refusedOrigin !== undefined) summary.refused_origin = refusedOrigin;
      const total = refused;
      [counts, refused, refusedOrigin] = [new Map(), 0, undefined];
      log("info", { event: "contact_summary", refused: total, ...summary });
    },
  };
}

/** Logs how a request ended, as a `contact` line (tallied when it is a refusal). */
export function outcome(log: Logger, status: number, result: string): void {
  log("info", { event: "contact", status, result });
}
