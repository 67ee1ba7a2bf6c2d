/**
 * The one timestamp format of contactd's files and messages: UTC, whole seconds, a trailing `Z`
 * (`2026-11-22T14:03:09Z`), as the backup record's `ts`, the outbox's times and the test
 * notification carry it.
 *
 * @module
 */

/** Formats a time as `2026-11-22T14:03:09Z`: UTC, the milliseconds dropped (not rounded). */
export function formatTimestamp(time: Date): string {
  return time.toISOString().slice(0, 19) + "Z";
}
