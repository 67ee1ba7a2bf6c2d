/**
 * contactd: wiring only. Hands the command line to `lib/cli/cli.ts` with the real I/O; `serve`
 * builds the real dependencies, serves, and stops gracefully on SIGTERM/SIGINT/SIGHUP (SIGINT
 * and SIGBREAK on Windows). Every rule lives in `lib/`.
 *
 * @module
 */
import { openBackupFile } from "./lib/storage/backup.ts";
import { runCli, type ServeOptions } from "./lib/cli/cli.ts";
import { ConfigError, parseConfig } from "./lib/config/config.ts";
import { DeliveryQueue } from "./lib/delivery/queue.ts";
import { EXAMPLE_PAGE_URL } from "./lib/http/example_page.ts";
import type { Appender } from "./lib/storage/group_commit.ts";
import { Altcha, type ChallengeGate, REPLAY_CAPACITY } from "./lib/challenge/altcha.ts";
import { createHandler } from "./lib/http/handler.ts";
import { keepServing, type KeptServing, pause } from "./lib/http/keep_serving.ts";
import { describeError, type Logger, settingsLogger } from "./lib/log/logger.ts";
import { tallyRefusals } from "./lib/log/tally.ts";
import {
  loadOutbox,
  openOutbox,
  type Outbox,
  outboxPath,
  readSubmissions,
} from "./lib/storage/outbox.ts";
import { Pacer } from "./lib/delivery/pacer.ts";
import { type NeededPermission, permissionGaps, permissionLine } from "./lib/config/permissions.ts";
import { RateLimiter } from "./lib/net/rate_limit.ts";
import { recoverRecords } from "./lib/storage/recovery.ts";
import type { Settings } from "./lib/config/settings.ts";
import { newSubmissionId } from "./lib/form/submission_id.ts";
import { serviceSignals } from "./lib/service/signals.ts";
import { sendMessage } from "./lib/bot/api.ts";
import { isTurnstileTestSecret, Turnstile } from "./lib/challenge/turnstile.ts";
import denoJson from "./deno.json" with { type: "json" };

const encoder = new TextEncoder();

const granted = (permission: NeededPermission) =>
  Deno.permissions.querySync(permission).state === "granted";

async function serve(settings: Settings, options: ServeOptions): Promise<number> {
  const log: Logger = settingsLogger(
    settings,
    (line, level) => (level === "info" ? Deno.stdout : Deno.stderr).writeSync(encoder.encode(line)),
  );

  let config;
  try {
    config = parseConfig(settings);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    log("error", { event: "config_invalid", setting: error.setting, error: error.message });
    return 1;
  }
  // A compiled binary's permissions are fixed at build time: refuse settings beyond them now.
  const gaps = permissionGaps(config, granted);
  for (const gap of gaps) {
    log("error", { event: "config_invalid", setting: gap.setting, error: gap.message });
  }
  if (gaps.length > 0) return 1;
  if (config.messenger === undefined) {
    log("warn", {
      event: "not_configured",
      hint: "set MESSENGER_BOT_TOKEN and MESSENGER_CHAT_ID; submissions are stored and delivered " +
        "once they are set",
    });
  }

  const onLoose = (file: string) => (mode: number) =>
    log("warn", {
      event: "file_mode",
      file,
      mode: mode.toString(8),
      hint: "chmod 600 it: it holds personal data",
    });
  let backup: Appender;
  try {
    backup = await openBackupFile(config.messagesFile, onLoose(config.messagesFile));
  } catch (error) {
    log("error", {
      event: "backup_open_failed",
      file: config.messagesFile,
      error: describeError(error),
    });
    return 1;
  }
  const outboxFile = outboxPath(config.messagesFile);
  let outbox: Outbox;
  try {
    outbox = await openOutbox(outboxFile, { onLoose: onLoose(outboxFile) });
  } catch (error) {
    log("error", { event: "outbox_open_failed", file: outboxFile, error: describeError(error) });
    await backup.close();
    return 1;
  }
  const closeFiles = async () => {
    await outbox.close();
    await backup.close();
  };
  try {
    const recovered = await recoverRecords(outbox, (line) => backup.append(line), log);
    log("info", { event: "outbox_loaded", pending: outbox.pendingCount, recovered });
  } catch (error) {
    log("error", { event: "recovery_failed", error: describeError(error) });
    await closeFiles();
    return 1;
  }

  let examplePage: Uint8Array | undefined;
  if (config.serveExample) {
    try {
      // Read once: the handler serves these bytes and never touches the file system.
      examplePage = await Deno.readFile(EXAMPLE_PAGE_URL);
    } catch (error) {
      log("error", { event: "example_read_failed", error: describeError(error) });
      await closeFiles();
      return 1;
    }
    log("info", { event: "serving_example", path: "/" });
  }

  const { messenger } = config;
  const tally = tallyRefusals(log);
  const summaries = setInterval(tally.flush, 10_000);
  Deno.unrefTimer(summaries);
  const api = { apiUrl: config.apiUrl, timeoutMs: config.timeoutMs, fetch };
  const queue = messenger === undefined ? undefined : new DeliveryQueue({
    chatId: messenger.chatId,
    send: (text) => sendMessage({ ...api, token: messenger.token }, messenger.chatId, text),
    store: outbox,
    pacer: new Pacer(),
    clock: {
      now: () => performance.now(),
      wallNow: Date.now,
      setTimer: (fn, ms) => setTimeout(fn, ms),
      clearTimer: (handle) => clearTimeout(handle as number),
    },
    random: Math.random,
    log: tally.log,
    waitMs: config.deliveryWaitMs,
    maxAgeMs: config.deliveryMaxAgeMs,
  });
  queue?.start();
  if (config.challenge.kind === "turnstile" && isTurnstileTestSecret(config.challenge.secret)) {
    log("warn", { event: "challenge_test_secret", setting: "CHALLENGE_SECRET" });
  }
  const challenge: ChallengeGate | undefined = config.challenge.kind === "altcha"
    ? new Altcha({
      secret: config.challenge.secret,
      onFull: () => log("warn", { event: "challenge_replay_set_full", capacity: REPLAY_CAPACITY }),
    })
    : config.challenge.kind === "turnstile"
    ? new Turnstile({
      secret: config.challenge.secret,
      verifyUrl: config.challenge.verifyUrl,
      fetch,
      onOutage: (reason) => log("warn", { event: "challenge_unavailable", reason }),
    })
    : undefined;
  const handler = createHandler({
    now: Date.now,
    trustedProxies: config.trustedProxies,
    realIpHeader: config.realIpHeader,
    limiter: new RateLimiter({ limit: 5, windowMs: 60_000, maxEntries: 1_000_000 }),
    outbox,
    queue,
    newId: () => newSubmissionId(),
    append: (line) => backup.append(line),
    log: tally.log,
    allowedOrigins: config.allowedOrigins,
    examplePage,
    challenge,
    // GET /api/challenge has a budget of its own: fetching challenges never uses up the POSTs'.
    // Fewer keys than the POSTs' (30 times per key are kept): an evicted key only gets more
    // challenges, each of which still costs a solve.
    challengeLimiter: challenge?.issue === undefined
      ? undefined
      : new RateLimiter({ limit: 30, windowMs: 60_000, maxEntries: 250_000 }),
  });

  const serveOptions: Deno.ServeTcpOptions = {
    hostname: config.host,
    port: config.port,
    onListen: ({ hostname, port }) => log("info", { event: "listening", hostname, port }),
    onError: (error) => {
      log("error", { event: "internal_error", status: 500, error: describeError(error) });
      return new Response(null, { status: 500 });
    },
  };
  // Listening for signals before the port is: a stop that comes with the first "listening" line
  // is graceful too.
  let server: KeptServing | undefined;
  let stopping = false;
  const stop = (signal: Deno.Signal | "stdin_eof") => {
    if (stopping) return;
    stopping = true;
    log("info", { event: "stopping", signal });
    // Waiting senders are answered now ("saved, will be delivered"): what is left stays in the
    // outbox for the next start. shutdown() stops accepting and waits for in-flight requests
    // (and their records).
    queue?.close();
    server?.shutdown();
  };
  // SIGHUP stops gracefully too (decided, not ignored): it means the terminal or session that
  // started the service is gone, and there is nothing to reload (settings and permissions are
  // read once; the unit has no ExecReload=). Its default would end the process at once, with
  // in-flight senders unanswered and their records unwritten. Windows has SIGINT and SIGBREAK.
  const signals = serviceSignals(Deno.build.os);
  for (const signal of signals.stop) Deno.addSignalListener(signal, () => stop(signal));
  if (options.stopOnStdinEof === true) {
    // deno task start's launcher holds the other end of stdin: its end (even by SIGKILL, which
    // it cannot forward) closes the pipe, and the service stops with it instead of living on.
    (async () => {
      try {
        for await (const _ of Deno.stdin.readable) { /* the launcher never writes */ }
      } catch {
        // A read error means the pipe is gone too.
      }
      stop("stdin_eof");
    })();
  }
  try {
    // Out of descriptors, Deno's accept loop ends: listen again rather than end the process.
    server = keepServing({
      first: Deno.serve(serveOptions, handler),
      start: () => Deno.serve({ ...serveOptions, onListen: () => {} }, handler),
      log,
      now: () => performance.now(),
      sleep: pause,
    });
  } catch (error) {
    log("error", { event: "listen_failed", error: describeError(error) });
    queue?.close();
    await closeFiles();
    return 1;
  }

  if (stopping) server.shutdown();
  // A file-size limit (RLIMIT_FSIZE, systemd LimitFSIZE=) must fail the write, not kill the
  // process: with SIGXFSZ handled, the write returns EFBIG and the answer stays honest.
  for (const signal of signals.ignore) Deno.addSignalListener(signal, () => {});

  await server.finished;
  queue?.close();
  clearInterval(summaries);
  tally.flush();
  await closeFiles();
  log("info", { event: "stopped" });
  return 0;
}

const line = (stream: { writeSync(bytes: Uint8Array): number }) => (text: string) => {
  stream.writeSync(encoder.encode(`${text}\n`));
};

/** Runs the command line; a missing permission ends as one line naming what to grant. */
async function main(): Promise<number> {
  try {
    return await runCli(Deno.args, {
      version: denoJson.version,
      env: (name) => Deno.env.get(name),
      readTextFile: (path) => Deno.readTextFile(path),
      fetch,
      readOutbox: loadOutbox,
      readSubmissions,
      now: () => new Date(),
      granted,
      out: line(Deno.stdout),
      err: line(Deno.stderr),
      serve,
    });
  } catch (error) {
    const text = permissionLine(error);
    if (text === undefined) throw error;
    line(Deno.stderr)(text);
    return 1;
  }
}

if (import.meta.main) Deno.exit(await main());
