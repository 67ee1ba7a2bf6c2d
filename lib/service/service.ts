/**
 * The service builder: from the settings and the real world's I/O to a running service with one
 * disposer. Start-up opens and starts, in order: the configuration (and the permission gaps of a
 * compiled binary), the stop signals, the state (lib/service/state.ts: lock, backup file,
 * database, outbox and crash recovery, ledger, block list, replies), the upkeep
 * (lib/service/upkeep.ts), the example page, the delivery (lib/service/delivery.ts), the HTTP side
 * (lib/service/front.ts), the chat inbox (lib/service/chat.ts), and then the listening server.
 * This file holds no rule of its own: it orders the sub-assemblies. Every
 * resource goes onto one `AsyncDisposableStack` as it is opened, so a start that fails at any
 * step, and a stop, clean up the same way (in the reverse order). The shape of benbjohnson/wtf's
 * `Main` with `Run` and `Close`: {@linkcode startService} runs, `[Symbol.asyncDispose]` closes.
 *
 * @module
 */
import { ConfigError, parseConfig } from "../config/config.ts";
import type { Config } from "../config/config.ts";
import { listenFailure, type NeededPermission, permissionGaps } from "../config/permissions.ts";
import type { Settings } from "../config/settings.ts";
import type { DeliveryClock } from "../delivery/queue.ts";
import { EXAMPLE_PAGE_URL } from "../config/example_page.ts";
import type { Handler } from "../http/handler.ts";
import { Drain } from "../http/drain.ts";
import { keepServing, type KeptServing, pause, type Serving } from "../http/keep_serving.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { SUMMARY_INTERVAL_MS, tallyRefusals } from "../log/tally.ts";
import { ForgottenIds } from "../storage/erasure.ts";
import { botCheckReport, getMe } from "../bot/api.ts";
import { serviceSignals } from "./signals.ts";
import { RecentCounts } from "../log/recent_counts.ts";
import type { RunningInbox } from "../inbox/start.ts";
import { openState, type ServiceState } from "./state.ts";
import { startUpkeep } from "./upkeep.ts";
import { buildDelivery, type Delivery } from "./delivery.ts";
import { buildHandler } from "./front.ts";
import { openServiceFiles, startDocuments } from "./files.ts";
import type { DocumentSender } from "../delivery/documents.ts";
import { startChat } from "./chat.ts";
import { CaseBook } from "../cases/case_book.ts";
import { openSpamFilter, scoringFilter } from "./spam.ts";
import type { SpamFilter } from "../spam/spam_filter.ts";

/**
 * What stopped the service: a signal, the launcher's end of standard input, or disposing the
 * service before any of them.
 */
export type StopReason = Deno.Signal | "stdin_eof" | "disposed" | "database_lost";

/** The real world, as the service is given it (the tests pass fakes). */
export interface ServiceIO {
  /** Where log lines go (`settingsLogger` over stdout and stderr). */
  readonly log: Logger;
  /** Whether the process holds a permission (`Deno.permissions.querySync`). */
  readonly granted: (permission: NeededPermission) => boolean;
  /** The Bot API's and Turnstile's HTTP client. */
  readonly fetch: typeof fetch;
  /** The queue's time (monotonic and wall clocks, timers). */
  readonly clock: DeliveryClock;
  /** Calls `fn` every `ms` without keeping the process alive; returns the cancel. */
  readonly every: (fn: () => void, ms: number) => () => void;
  /** A number in [0, 1), for the back-off's jitter. */
  readonly random: () => number;
  /** Reads the example page (`Deno.readFile`). */
  readonly readFile: (url: URL) => Promise<Uint8Array>;
  /** Listens and serves (`Deno.serve`); throws when it cannot listen. */
  readonly serve: (options: Deno.ServeTcpOptions, handler: Handler) => Serving;
  /** This process's id (`Deno.pid`), written into the lock file for whoever finds it taken. */
  readonly pid: number;
  /** The operating system, which decides the signals (`Deno.build.os`). */
  readonly os: typeof Deno.build.os;
  /** Signal listeners (`Deno.addSignalListener`, `Deno.removeSignalListener`). */
  readonly addSignalListener: (signal: Deno.Signal, handler: () => void) => void;
  readonly removeSignalListener: (signal: Deno.Signal, handler: () => void) => void;
  /**
   * Resolves when standard input reaches its end, for `--stop-on-stdin-eof` (`deno task
   * start`'s launcher holds the other end); absent, standard input is not watched.
   */
  readonly stdinEnded?: () => Promise<void>;
  /** A test hook for the bench: every database commit takes this many milliseconds longer. */
  readonly commitDelayMs?: number;
}

/** A running service. Disposing it waits for the server, then closes everything it opened. */
export interface RunningService extends AsyncDisposable {
  /** Resolves once the server has stopped: after a stop signal, stdin's end or `stop`. */
  readonly finished: Promise<void>;
  /**
   * Stops gracefully (once; later calls do nothing): waiting senders are answered now ("saved,
   * will be delivered"), the server stops accepting and drains the requests in flight.
   */
  stop(reason: StopReason): void;
  /** Why it stopped (the first stop asked for), `undefined` while it runs. */
  stoppedBy(): StopReason | undefined;
}

/**
 * Starts the service. Returns `undefined` when it cannot start, after one log line saying why
 * (`config_invalid`, `files_locked`, `lock_failed`, `backup_open_failed`, `database_open_failed`,
 * `recovery_failed`, `example_read_failed`, `listen_failed`, and the state's others) and after
 * closing whatever it had opened.
 */
export async function startService(
  settings: Settings,
  io: ServiceIO,
): Promise<RunningService | undefined> {
  const config = _config(settings, io);
  if (config === undefined) return undefined;
  const { log } = io;
  // One getMe, asked while the files open: the bot's username goes in the listening line.
  const botCheck = config.messenger === undefined ? undefined : getMe({
    apiUrl: config.apiUrl,
    token: config.messenger.token,
    timeoutMs: config.timeoutMs,
    fetch: io.fetch,
  });
  // Disposed at the end of this function unless moved into the running service.
  await using stack = new AsyncDisposableStack();
  // The requests in flight, their bodies ended at the stop, the wait for the server bounded.
  const drain = new Drain({
    setTimer: (fn, ms) => io.clock.setTimer(fn, ms),
    clearTimer: (handle) => io.clock.clearTimer(handle),
    log,
  });
  const stopper = _listenForStops(io, stack.use(new AsyncDisposableStack()), drain);
  const state = await openState(
    config,
    {
      log,
      pid: io.pid,
      wallNow: io.clock.wallNow,
      ...(io.commitDelayMs === undefined ? {} : { commitDelayMs: io.commitDelayMs }),
    },
    stack,
    config.mail !== undefined && config.chatActions.enabled,
  );
  if (state === undefined) return undefined;
  // The database's worker ended: nothing can be stored any more, so the service stops rather
  // than answer falsely (health says so meanwhile).
  void state.store.lost.then((error) => {
    log("error", { event: "database_lost", error: describeError(error) });
    stopper.stop("database_lost");
  });
  // The learned spam filter's model, in memory (SPAM_FILTER=off too: retention and forget reach it).
  const spam = await openSpamFilter(config, { log, wallNow: io.clock.wallNow }, stack, state.store);
  if (spam === false) return undefined;
  const examplePage = await _examplePage(config, io);
  if (examplePage === false) return undefined;
  const tally = tallyRefusals(log);
  const cancelSummaries = io.every(tally.flush, SUMMARY_INTERVAL_MS);
  stack.defer(() => {
    cancelSummaries();
    tally.flush();
  });
  const running = await _assemble(
    config,
    io,
    stack,
    state,
    tally.log,
    examplePage,
    botCheck,
    spam,
    drain.signal,
  );
  stopper.started(running);
  const server = _listen(config, io, drain.track(running.handler), running.bot);
  if (server === undefined) return undefined;
  stopper.listening(server);
  const owned = stack.move();
  const finished = drain.bounded(server.finished).then(() => {});
  return {
    finished,
    stop: stopper.stop,
    stoppedBy: stopper.reason,
    async [Symbol.asyncDispose]() {
      stopper.stop("disposed");
      await finished;
      await owned.disposeAsync();
      log("info", { event: "stopped" });
    },
  };
}

/** The configuration, or `undefined` after logging why it is refused. */
function _config(settings: Settings, io: ServiceIO): Config | undefined {
  const { log } = io;
  let config;
  try {
    config = parseConfig(settings);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    log("error", { event: "config_invalid", setting: error.setting, error: error.message });
    return undefined;
  }
  // A compiled binary's permissions are fixed at build time: refuse settings beyond them now.
  const gaps = permissionGaps(config, io.granted);
  for (const gap of gaps) {
    log("error", { event: "config_invalid", setting: gap.setting, error: gap.message });
  }
  if (gaps.length > 0) return undefined;
  if (config.messenger === undefined) {
    log("warn", {
      event: "not_configured",
      hint: "set MESSENGER_BOT_TOKEN and MESSENGER_CHAT_ID; submissions are stored and delivered " +
        "once they are set",
    });
  }
  if (config.mail !== undefined && !config.chatActions.enabled) {
    log("warn", {
      event: "replies_off",
      hint: "SMTP_URL is set but CHAT_ACTIONS=0: replies by email come from the chat, so none " +
        "are sent; set CHAT_ACTIONS=1, or unset SMTP_URL",
    });
  }
  return config;
}

/** The example page's bytes (read once), `undefined` when not served, `false` when unreadable. */
async function _examplePage(
  config: Config,
  io: ServiceIO,
): Promise<Uint8Array | undefined | false> {
  if (!config.serveExample) return undefined;
  try {
    const page = await io.readFile(EXAMPLE_PAGE_URL);
    io.log("info", { event: "serving_example", path: "/" });
    return page;
  } catch (error) {
    io.log("error", { event: "example_read_failed", error: describeError(error) });
    return false;
  }
}

/** What runs once the state is open: delivery, upkeep, handler, chat. */
interface Assembled {
  readonly delivery: Delivery | undefined;
  readonly inbox: RunningInbox | undefined;
  readonly handler: Handler;
  /** The `getMe` report's listening-line field, when the bot answered. */
  readonly bot: string | undefined;
}

async function _assemble(
  config: Config,
  io: ServiceIO,
  stack: AsyncDisposableStack,
  state: ServiceState,
  log: Logger,
  examplePage: Uint8Array | undefined,
  botCheck: ReturnType<typeof getMe> | undefined,
  spam: SpamFilter,
  stopping: AbortSignal,
): Promise<Assembled> {
  const { clock } = io;
  // What contactd forget erased is remembered while senders may still wait.
  const forgotten = new ForgottenIds(2 * config.deliveryWaitMs + 60_000, clock.now);
  // The last 24 hours, for the chat's /status.
  const recent = new RecentCounts();
  // Files sent with forms (ATTACHMENTS): the spool beside the backup file.
  const files = await openServiceFiles(config, state.store, log);
  let documents: DocumentSender | undefined;
  // Case pages: the handler opens them with each submission's outbox row.
  const cases = new CaseBook(state.store);
  const delivery = buildDelivery(
    config,
    {
      fetch: io.fetch,
      clock,
      random: io.random,
      log,
      onDelivered: () => recent.add("delivered", clock.now()),
    },
    state,
    forgotten,
  );
  await startUpkeep(
    config,
    { log: io.log, wallNow: clock.wallNow, every: io.every },
    stack,
    state,
    forgotten,
    (deletions) => delivery?.deleteLater(deletions),
    spam,
    files,
  );
  if (delivery !== undefined) {
    delivery.queue.start();
    // Before the database closes: a call in flight at the stop is answered and noted first.
    stack.defer(() => delivery.queue.close());
    // Erased while the service was stopped (contactd forget): deleted from the chat now.
    delivery.deleteLater(state.ledger.pendingDeletions());
    // Files sent with forms follow their notifications (issue 32), /pending lists them.
    if (files !== undefined) {
      documents = startDocuments(
        config,
        { fetch: io.fetch, clock, random: io.random, log },
        stack,
        state,
        delivery.queue,
        files,
        forgotten,
      );
    }
  }
  const handler = buildHandler(
    config,
    { fetch: io.fetch, clock, log, count: (what) => recent.add(what, clock.now()), stopping },
    state,
    delivery?.queue,
    forgotten,
    examplePage,
    scoringFilter(config, spam),
    files,
    cases,
  );
  const identity = botCheck === undefined ? undefined : await botCheck;
  const report = identity === undefined ? undefined : botCheckReport(identity);
  if (report !== undefined && "fields" in report) io.log(report.level, report.fields);
  // A token refused at start pauses delivery now: health says so before any submission fails.
  if (identity?.ok === false && identity.tokenRefused) delivery?.queue.tokenRefused(identity.error);
  const inbox = delivery === undefined ? undefined : startChat(
    config,
    { fetch: io.fetch, clock, random: io.random, log },
    stack,
    state,
    delivery.queue,
    recent,
    {
      username: identity?.ok === true ? identity.username : undefined,
      id: identity?.ok === true ? identity.id : undefined,
    },
    scoringFilter(config, spam),
    documents,
  );
  return {
    delivery,
    inbox,
    handler,
    bot: report !== undefined && "bot" in report ? report.bot : undefined,
  };
}

/** Serves `handler`, kept listening; `undefined` after `listen_failed`. */
function _listen(
  config: Config,
  io: ServiceIO,
  handler: Handler,
  bot: string | undefined,
): KeptServing | undefined {
  const { log } = io;
  const serveOptions: Deno.ServeTcpOptions = {
    hostname: config.host,
    port: config.port,
    onListen: ({ hostname, port }) =>
      log("info", { event: "listening", hostname, port, ...(bot !== undefined ? { bot } : {}) }),
    onError: (error) => {
      log("error", { event: "internal_error", status: 500, error: describeError(error) });
      return new Response(null, { status: 500 });
    },
  };
  try {
    // Out of descriptors, Deno's accept loop ends: listen again rather than end the process.
    return keepServing({
      first: io.serve(serveOptions, handler),
      start: () => io.serve({ ...serveOptions, onListen: () => {} }, handler),
      log,
      now: () => io.clock.now(),
      sleep: pause,
    });
  } catch (error) {
    log("error", { event: "listen_failed", ...listenFailure(error, config.host, config.port) });
    return undefined;
  }
}

/** The stop, as the signals and the disposer ask for it, and what it reaches once started. */
interface Stopper {
  /** Stops gracefully (once): waiting senders answered, the inbox's poll ended, the server shut. */
  readonly stop: (reason: StopReason) => void;
  /** The first stop's reason, `undefined` before one. */
  readonly reason: () => StopReason | undefined;
  /** The queue and inbox now exist: a stop reaches them (at once if one came already). */
  started(running: Assembled): void;
  /** The server listens: a stop shuts it (at once if one came already). */
  listening(server: KeptServing): void;
}

/**
 * Listens for the stop signals (and standard input's end) onto `listeners`, which are removed
 * last, once everything else is closed: a second SIGTERM while the queue waits for a call in
 * flight must find them, not the default action (exit 143). They are listened for before
 * anything is opened, and so before the port is: a stop during start-up is graceful too.
 */
function _listenForStops(
  io: ServiceIO,
  listeners: AsyncDisposableStack,
  drain: Drain,
): Stopper {
  const signals = serviceSignals(io.os);
  // A file-size limit (RLIMIT_FSIZE, systemd LimitFSIZE=) must fail the write, not kill the
  // process: with SIGXFSZ handled before any file is opened, the write returns EFBIG and the
  // answer stays honest.
  for (const signal of signals.ignore) _listen1(listeners, io, signal, () => {});
  let stopping: StopReason | undefined;
  let running: Assembled | undefined;
  let server: KeptServing | undefined;
  const halt = () => {
    // Waiting senders are answered now ("saved, will be delivered"): what is left stays in the
    // outbox for the next start. A call in flight is waited for (at most stopWaitMs), so its
    // sender gets the real answer. The bodies still arriving end (uploads too: their files
    // removed, answered 503). shutdown() stops accepting and waits for in-flight requests (and
    // their records), for a bounded time (lib/http/drain.ts); the disposer awaits the queue's
    // close before closing the database.
    void running?.delivery?.queue.close(); // never rejects; the disposer awaits it
    void running?.inbox?.close(); // the long poll ends at once; never rejects
    drain.stop();
    server?.shutdown();
  };
  const stop = (reason: StopReason) => {
    if (stopping !== undefined) return;
    stopping = reason;
    io.log("info", { event: "stopping", signal: reason });
    halt();
  };
  // SIGHUP stops gracefully too (decided, not ignored): there is nothing to reload (settings and
  // permissions are read once), and its default would end the process at once, with in-flight
  // senders unanswered and their records unwritten. Windows has SIGINT and SIGBREAK.
  for (const signal of signals.stop) _listen1(listeners, io, signal, () => stop(signal));
  if (io.stdinEnded !== undefined) {
    // The launcher's end (even by SIGKILL, which it cannot forward) closes the pipe, and the
    // service stops with it instead of living on. A read error means the pipe is gone too.
    io.stdinEnded().then(() => stop("stdin_eof"), (error) => {
      io.log("warn", { event: "stdin_failed", error: describeError(error) });
      stop("stdin_eof");
    });
  }
  return {
    stop,
    reason: () => stopping,
    started(assembled) {
      running = assembled;
      if (stopping !== undefined) halt();
    },
    listening(kept) {
      server = kept;
      if (stopping !== undefined) halt();
    },
  };
}

/** Adds a signal listener that the stack removes. */
function _listen1(
  stack: AsyncDisposableStack,
  io: ServiceIO,
  signal: Deno.Signal,
  handler: () => void,
): void {
  io.addSignalListener(signal, handler);
  stack.defer(() => io.removeSignalListener(signal, handler));
}
