/**
 * The signals the service listens for, per operating system (Windows knows only two).
 *
 * @module
 */

/** What the service does on each signal it listens for. */
export interface ServiceSignals {
  /** Signals that stop the service gracefully. */
  readonly stop: readonly Deno.Signal[];
  /** Signals handled only so their default action (ending the process) does not happen. */
  readonly ignore: readonly Deno.Signal[];
}

/**
 * The service's signals on `os`. On Windows, Deno listens for SIGINT (Ctrl+C) and SIGBREAK
 * (Ctrl+Break) only and throws for any other. Elsewhere SIGTERM, SIGINT and SIGHUP stop it
 * (SIGHUP: the session that started it is gone, and there is nothing to reload), and SIGXFSZ
 * is handled so a file-size limit fails the write (EFBIG) instead of killing the process.
 */
export function serviceSignals(os: typeof Deno.build.os): ServiceSignals {
  if (os === "windows") return { stop: ["SIGINT", "SIGBREAK"], ignore: [] };
  return { stop: ["SIGTERM", "SIGINT", "SIGHUP"], ignore: ["SIGXFSZ"] };
}
