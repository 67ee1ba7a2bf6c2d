/**
 * contactd: wiring only. Hands the command line to `lib/cli/cli.ts` with the real I/O; `serve`
 * gives the service builder (`lib/service/service.ts`) the real world (files, clocks, `fetch`,
 * `Deno.serve`, signals) and waits until a stop signal (SIGTERM/SIGINT/SIGHUP; SIGINT and
 * SIGBREAK on Windows) has let it finish. Every rule lives in `lib/`.
 *
 * @module
 */
import { readCapped } from "./lib/common/capped_read.ts";
import { runCli, type ServeOptions } from "./lib/cli/cli.ts";
import type { NeededPermission } from "./lib/config/permissions.ts";
import { permissionLine } from "./lib/config/permissions.ts";
import type { Settings } from "./lib/config/settings.ts";
import { settingsLogger } from "./lib/log/logger.ts";
import { startService } from "./lib/service/service.ts";
import { smtpTransport } from "./lib/mail/smtp_transport.ts";
import denoJson from "./deno.json" with { type: "json" };

const encoder = new TextEncoder();

const granted = (permission: NeededPermission) =>
  Deno.permissions.querySync(permission).state === "granted";

/**
 * Runs the service until it is stopped: 0 after a graceful stop, 1 when it cannot start or lost
 * its database.
 */
async function serve(settings: Settings, options: ServeOptions): Promise<number> {
  await using service = await startService(settings, {
    log: settingsLogger(
      settings,
      (line, level) => writeAllSync(level === "info" ? Deno.stdout : Deno.stderr, line),
    ),
    granted,
    fetch,
    clock: {
      now: () => performance.now(),
      wallNow: Date.now,
      setTimer: (fn, ms) => setTimeout(fn, ms),
      clearTimer: (handle) => clearTimeout(handle as number),
    },
    every: (fn, ms) => {
      const timer = setInterval(fn, ms);
      Deno.unrefTimer(timer);
      return () => clearInterval(timer);
    },
    random: Math.random,
    readFile: (url) => Deno.readFile(url),
    serve: (serveOptions, handler) => Deno.serve(serveOptions, handler),
    pid: Deno.pid,
    os: Deno.build.os,
    addSignalListener: (signal, handler) => Deno.addSignalListener(signal, handler),
    removeSignalListener: (signal, handler) => Deno.removeSignalListener(signal, handler),
    ...(options.stopOnStdinEof === true ? { stdinEnded } : {}),
    ...commitDelay(),
  });
  if (service === undefined) return 1;
  await service.finished;
  // A service that lost its database stops and exits non-zero, so systemd restarts it.
  return service.stoppedBy() === "database_lost" ? 1 : 0;
}

/**
 * The bench's slow-disk hook (`CONTACTD_TEST_COMMIT_DELAY_MS`: every database commit takes that
 * much longer), read only where the flags let it be read: the service's own flags never do.
 */
function commitDelay(): { commitDelayMs?: number } {
  const name = "CONTACTD_TEST_COMMIT_DELAY_MS";
  if (Deno.permissions.querySync({ name: "env", variable: name }).state !== "granted") return {};
  const ms = Number(Deno.env.get(name));
  return Number.isFinite(ms) && ms > 0 ? { commitDelayMs: ms } : {};
}

/** Resolves when standard input ends (the launcher never writes to it). */
async function stdinEnded(): Promise<void> {
  for await (const _ of Deno.stdin.readable) { /* the launcher never writes */ }
}

/** Writes all of `text`: one `writeSync` may take fewer bytes (a pipe, an export's rows). */
function writeAllSync(stream: { writeSync(bytes: Uint8Array): number }, text: string): void {
  const bytes = encoder.encode(text);
  let written = 0;
  while (written < bytes.byteLength) written += stream.writeSync(bytes.subarray(written));
}

const line = (stream: { writeSync(bytes: Uint8Array): number }) => (text: string) =>
  writeAllSync(stream, `${text}\n`);

/**
 * Standard input as text, at most `maxBytes` (64 KiB: `forget --contact -`; `train` asks more);
 * `undefined` when larger.
 */
async function readStdin(maxBytes = 64 * 1024): Promise<string | undefined> {
  const read = await readCapped({ headers: new Headers(), body: Deno.stdin.readable }, maxBytes);
  return read.ok ? new TextDecoder().decode(read.bytes) : undefined;
}

/** Runs the command line; a missing permission ends as one line naming what to grant. */
async function main(): Promise<number> {
  try {
    return await runCli(Deno.args, {
      version: denoJson.version,
      env: (name) => Deno.env.get(name),
      readTextFile: (path) => Deno.readTextFile(path),
      fileMode: async (path) => (await Deno.stat(path)).mode,
      fetch,
      now: () => new Date(),
      granted,
      out: line(Deno.stdout),
      err: line(Deno.stderr),
      serve,
      revoke: (name) => Deno.permissions.revokeSync({ name }),
      pid: Deno.pid,
      readStdin: () => readStdin(),
      readAllStdin: readStdin,
      smtpTransport,
    });
  } catch (error) {
    const text = permissionLine(error);
    if (text === undefined) throw error;
    line(Deno.stderr)(text);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main());
