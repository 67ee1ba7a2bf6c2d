/**
 * Refusals are counted, not logged one line each: a flood of honeypot hits, 429s or invalid
 * bodies would otherwise cost a write per request here and in the log collector (journald
 * drops lines beyond its rate limit, errors included). Every submission that reaches the
 * messenger or the backup file keeps its own line.
 *
 * @module
 */
import type { LogFields, Logger } from "./log.ts";

/** A logger that tallies refusals, and the flush that reports them. */
export interface TallyLogger {
  readonly log: Logger;
  /** Logs one `contact_summary` line with the counts per result since the last flush, if any. */
  flush(): void;
}

// What a flood is made of: cheap to send, answered at once. A 408 costs its sender the whole
// read deadline, and a 403 names the foreign origin: those keep their own lines.
const TALLIED_STATUSES: ReadonlySet<unknown> = new Set([400, 413, 415, 429]);

/** True for a `contact` outcome that is tallied: a honeypot hit, or a 400, 413, 415 or 429. */
export function isRefusal(fields: LogFields): boolean {
  if (fields.event !== "contact") return false;
  return fields.result === "honeypot" || TALLIED_STATUSES.has(fields.status);
}

/** Wraps `log`: refusals are counted per `result`; every other line passes through at once. */
export function tallyRefusals(log: Logger): TallyLogger {
  let counts = new Map<string, number>();
  return {
    log(level, fields) {
      if (level !== "info" || !isRefusal(fields)) return log(level, fields);
      const result = String(fields.result);
      counts.set(result, (counts.get(result) ?? 0) + 1);
    },
    flush() {
      if (counts.size === 0) return;
      const summary: Record<string, number> = {};
      let total = 0;
      for (const [result, count] of counts) {
        summary[result] = count;
        total += count;
      }
      counts = new Map();
      log("info", { event: "contact_summary", refused: total, ...summary });
    },
  };
}

/** Logs how a request ended, as a `contact` line (tallied when it is a refusal). */
export function outcome(log: Logger, status: number, result: string): void {
  log("info", { event: "contact", status, result });
}
