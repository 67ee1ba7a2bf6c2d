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

/** True for a `contact` outcome that refused the request (4xx, or a honeypot hit). */
export function isRefusal(fields: LogFields): boolean {
  if (fields.event !== "contact") return false;
  const status = fields.status;
  return fields.result === "honeypot" ||
    (typeof status === "number" && status >= 400 && status < 500);
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
