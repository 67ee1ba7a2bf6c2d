/**
 * The service builder: from the settings and the real world's I/O to a running service with one
 * disposer. Start-up opens and starts, in order: the configuration (and the permission gaps of a
 * compiled binary), the backup file, the outbox, crash recovery, the example page, the delivery
 * queue, the challenge, the handler, the stop signals, and then the listening server. Every
 * resource goes onto one `AsyncDisposableStack` as it is opened, so a start that fails at any
 * step, and a stop, clean up the same way (in the reverse order). The shape of benbjohnson/wtf's
 * `Main` with `Run` and `Close`: {@linkcode startService} runs, `[Symbol.asyncDispose]` closes.
 *
 * @module
 */
import { openBackupFile } from "../storage/backup.ts";
import { ConfigError, parseConfig } from "../config/config.ts";
import {
  fileOpenFailure,
  listenFailure,
  type NeededPermission,
  permissionGaps,
} from "../config/permissions.ts";
import type { Settings } from "../config/settings.ts";
import { DeliveryQueue, stopWaitMs } from "../delivery/queue.ts";
import type { DeliveryClock } from "../delivery/queue.ts";
import { Pacer } from "../delivery/pacer.ts";
import { EXAMPLE_PAGE_URL } from "../config/example_page.ts";
import { Altcha, type ChallengeGate, REPLAY_CAPACITY } from "../challenge/altcha.ts";
import { isTurnstileTestSecret, Turnstile } from "../challenge/turnstile.ts";
import { createHandler, type Handler } from "../http/handler.ts";
import { CHALLENGE_BUDGET, postBudget } from "../http/budgets.ts";
import { keepServing, type KeptServing, pause, type Serving } from "../http/keep_serving.ts";
import { describeError, type Logger } from "../log/logger.ts";
import { SUMMARY_INTERVAL_MS, tallyRefusals } from "../log/tally.ts";
import { RateLimiter } from "../net/rate_limit.ts";
import { openOutbox, outboxPath } from "../storage/outbox.ts";
import type { KeptFile } from "../storage/erasure.ts";
import { formatTimestamp } from "../common/timestamp.ts";
import { openReplyStore, type ReplyStore } from "../mail/reply_store.ts";
import { smtpTransport } from "../mail/smtp_transport.ts";
import { findRecord } from "../storage/records.ts";
import type { ChatDeletion } from "../storage/ledger.ts";
import type { InlineKeyboard } from "../bot/keyboard.ts";
import { oldestMessageMs, pendingItems } from "../inbox/status_text.ts";
import { recoverRecords } from "../storage/recovery.ts";
import { applyRetention, RETENTION_INTERVAL_MS } from "../storage/retention.ts";
import { denoRewriteFs } from "../storage/rewrite.ts";
import { FORGET_POLL_MS, serveForgetRequest } from "../storage/forget_request.ts";
import { ForgottenIds, pendingOnDisk } from "../storage/erasure.ts";
import { FilesLocked, lockFiles } from "../storage/lock.ts";
import { lockPath, rewritePath } from "../common/state_files.ts";
import { denoFs, removeIfPresent } from "../storage/file_system.ts";
import { newSubmissionId } from "../form/submission_id.ts";
import { botCheckReport, getMe, sendMessage } from "../bot/api.ts";
import { serviceSignals } from "./signals.ts";
import { keyboardFor } from "../bot/keyboard.ts";
import { blockListPath, ledgerPath, repliesPath } from "../common/state_files.ts";
import { RecentCounts } from "../log/recent_counts.ts";
import { BlockStore, readBlockList } from "../spam/block_file.ts";
import { type Ledger, openLedger } from "../storage/ledger.ts";
import { deleteFromChat } from "../inbox/deletions.ts";
import { type RunningInbox, startChatInbox } from "../inbox/start.ts";

/**
 * What stopped the service: a signal, the launcher's end of standard input, or disposing the
 * service before any of them.
 */
export type StopReason = Deno.Signal | "stdin_eof" | "disposed";

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
}

/**
 * Starts the service. Returns `undefined` when it cannot start, after one log line saying why
 * (`config_invalid`, `files_locked`, `lock_failed`, `backup_open_failed`, `outbox_open_failed`,
 * `recovery_failed`, `example_read_failed`, `listen_failed`) and after closing whatever it had opened.
 */
export async function startService(
  settings: Settings,
  io: ServiceIO,
): Promise<RunningService | undefined> {
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
  // One getMe, asked while the files open: the bot's username goes in the listening line.
  const botCheck = config.messenger === undefined ? undefined : getMe({
    apiUrl: config.apiUrl,
    token: config.messenger.token,
    timeoutMs: config.timeoutMs,
    fetch: io.fetch,
  });
  if (config.messenger === undefined) {
    log("warn", {
      event: "not_configured",
      hint: "set MESSENGER_BOT_TOKEN and MESSENGER_CHAT_ID; submissions are stored and delivered " +
        "once they are set",
    });
  }

  // Disposed at the end of this function unless moved into the running service.
  await using stack = new AsyncDisposableStack();
  // Signal listeners are removed last, once everything else is closed: a second SIGTERM while the
  // queue waits for a call in flight must find them, not the default action (exit 143).
  const signalListeners = stack.use(new AsyncDisposableStack());
  const signals = serviceSignals(io.os);
  // A file-size limit (RLIMIT_FSIZE, systemd LimitFSIZE=) must fail the write, not kill the
  // process: with SIGXFSZ handled before any file is opened (a compaction at start writes too),
  // the write returns EFBIG and the answer stays honest.
  for (const signal of signals.ignore) listen(signalListeners, io, signal, () => {});
  // Listening for the stop signals before anything is opened or started, and so before the port
  // is: a stop that comes during start-up (the files, getMe, the first "listening" line) is
  // graceful too, never the default action with a send in flight.
  let server: KeptServing | undefined;
  let queueToClose: DeliveryQueue | undefined;
  let inboxToClose: RunningInbox | undefined;
  let stopping = false;
  const stop = (reason: StopReason) => {
    if (stopping) return;
    stopping = true;
    log("info", { event: "stopping", signal: reason });
    // Waiting senders are answered now ("saved, will be delivered"): what is left stays in the
    // outbox for the next start. A call in flight is waited for (at most stopWaitMs), so its
    // sender gets the real answer. shutdown() stops accepting and waits for in-flight requests
    // (and their records); the disposer awaits the queue's close before closing the files.
    void queueToClose?.close(); // never rejects; the disposer awaits it
    void inboxToClose?.close(); // the long poll ends at once; never rejects
    server?.shutdown();
  };
  // SIGHUP stops gracefully too (decided, not ignored): it means the terminal or session that
  // started the service is gone, and there is nothing to reload (settings and permissions are
  // read once; the unit has no ExecReload=). Its default would end the process at once, with
  // in-flight senders unanswered and their records unwritten. Windows has SIGINT and SIGBREAK.
  for (const signal of signals.stop) listen(signalListeners, io, signal, () => stop(signal));
  if (io.stdinEnded !== undefined) {
    // The launcher's end (even by SIGKILL, which it cannot forward) closes the pipe, and the
    // service stops with it instead of living on. A read error means the pipe is gone too.
    io.stdinEnded().then(() => stop("stdin_eof"), (error) => {
      log("warn", { event: "stdin_failed", error: describeError(error) });
      stop("stdin_eof");
    });
  }
  const onLoose = (file: string) => (mode: number) =>
    log("warn", {
      event: "file_mode",
      file,
      mode: mode.toString(8),
      hint: "chmod 600 it: it holds personal data",
    });
  // One service per MESSAGES_FILE: locked before anything beside it is read or written.
  try {
    stack.use(await lockFiles(config.messagesFile, io.pid));
  } catch (error) {
    log("error", {
      event: error instanceof FilesLocked ? "files_locked" : "lock_failed",
      file: lockPath(config.messagesFile),
      ...fileOpenFailure(error, lockPath(config.messagesFile)),
    });
    return undefined;
  }
  let backup;
  try {
    backup = await openBackupFile(config.messagesFile, onLoose(config.messagesFile));
  } catch (error) {
    log("error", {
      event: "backup_open_failed",
      file: config.messagesFile,
      ...fileOpenFailure(error, config.messagesFile),
    });
    return undefined;
  }
  stack.defer(() => backup.close());
  // A rewrite's temporary file left by a crash holds records erased or past RETENTION: gone now.
  await removeIfPresent(denoFs, rewritePath(config.messagesFile)).catch((error) =>
    log("error", { event: "backup_rewrite_cleanup_failed", error: describeError(error) })
  );
  const outboxFile = outboxPath(config.messagesFile);
  let outbox;
  try {
    outbox = await openOutbox(outboxFile, { log, onLoose: onLoose(outboxFile) });
  } catch (error) {
    log("error", {
      event: "outbox_open_failed",
      file: outboxFile,
      ...fileOpenFailure(error, outboxFile),
    });
    return undefined;
  }
  stack.defer(() => outbox.close());
  try {
    const recovered = await recoverRecords(outbox, (line) => backup.append(line), log);
    log("info", { event: "outbox_loaded", pending: outbox.pendingCount, recovered });
  } catch (error) {
    log("error", { event: "recovery_failed", error: describeError(error) });
    return undefined;
  }
  // The chat ledger: what reached the chat for each submission (the buttons act on it, a forget
  // deletes from the chat by it).
  const ledgerFile = ledgerPath(config.messagesFile);
  let ledger: Ledger;
  try {
    ledger = await openLedger(ledgerFile, {
      log,
      onLoose: onLoose(ledgerFile),
      onLateDeletion: (deletion) => void deleteLater([deletion]),
    });
  } catch (error) {
    log("error", {
      event: "ledger_open_failed",
      file: ledgerFile,
      ...fileOpenFailure(error, ledgerFile),
    });
    return undefined;
  }
  stack.defer(() => ledger.close());
  // The senders marked as spam (contactd unblock appends to it while the service runs).
  const blockFile = blockListPath(config.messagesFile);
  let blocks: BlockStore;
  try {
    blocks = await BlockStore.open({
      fs: denoRewriteFs,
      path: blockFile,
      now: io.clock.wallNow,
      log,
    });
  } catch (error) {
    log("error", {
      event: "block_list_open_failed",
      file: blockFile,
      ...fileOpenFailure(error, blockFile),
    });
    return undefined;
  }
  stack.defer(() => blocks.close());
  let refreshing: Promise<void> = Promise.resolve();
  const cancelRefresh = io.every(() => {
    refreshing = refreshing.then(() => blocks.refresh()).catch((error) =>
      log("error", { event: "block_list_refresh_failed", error: describeError(error) })
    );
  }, BLOCK_REFRESH_MS);
  stack.defer(async () => {
    cancelRefresh();
    await refreshing;
  });
  // Deletions from the chat (erasure) wait for the queue, created below.
  let deleteLater: (deletions: readonly ChatDeletion[]) => Promise<void> = () => Promise.resolve();
  // Replies by email (SMTP_URL, with the chat actions): the replies file, waiting and done.
  const mail = config.mail !== undefined && config.chatActions.enabled ? config.mail : undefined;
  if (config.mail !== undefined && !config.chatActions.enabled) {
    log("warn", {
      event: "replies_off",
      hint: "SMTP_URL is set but CHAT_ACTIONS=0: replies by email come from the chat, so none " +
        "are sent; set CHAT_ACTIONS=1, or unset SMTP_URL",
    });
  }
  let replies: ReplyStore | undefined;
  if (mail !== undefined) {
    const repliesFile = repliesPath(config.messagesFile);
    try {
      replies = await openReplyStore({
        fs: denoFs,
        path: repliesFile,
        log,
        now: () => new Date(io.clock.wallNow()),
        retentionMs: config.retentionMs,
      });
    } catch (error) {
      log("error", {
        event: "replies_open_failed",
        file: repliesFile,
        ...fileOpenFailure(error, repliesFile),
      });
      return undefined;
    }
    const store = replies;
    stack.defer(() => store.close());
  }
  // The other files that keep something of a submission: retention and forget reach them too.
  const kept: KeptFile[] = [
    {
      name: "blocked",
      prune: (cutoff) => blocks.prune(cutoff),
      forget: async (match, ids, dryRun) =>
        dryRun
          ? (await readBlockList(denoFs, blockFile)).list.forgotten(match, ids).length
          : await blocks.forget(match, ids),
    },
  ];
  if (replies !== undefined) {
    const store = replies;
    kept.push({
      name: "replies",
      prune: (cutoff) => store.prune(formatTimestamp(new Date(cutoff))),
      forget: (_match, ids, dryRun) =>
        dryRun
          ? Promise.resolve(
            [...store.pending(), ...store.audits()].filter((r) => ids.has(r.submission)).length,
          )
          : store.forget(ids),
    });
  }
  const { retentionMs } = config;
  if (retentionMs !== undefined) {
    const retain = () =>
      applyRetention({
        appender: backup,
        fs: denoRewriteFs,
        path: config.messagesFile,
        outbox,
        now: io.clock.wallNow,
        retentionMs,
        log,
        ledger,
        extra: kept,
      });
    // At start (before the first POST), then daily; a stop waits for a run in progress.
    let retaining: Promise<unknown> = retain();
    await retaining;
    const cancelRetention = io.every(() => {
      retaining = retaining.then(retain);
    }, RETENTION_INTERVAL_MS);
    stack.defer(async () => {
      cancelRetention();
      await retaining;
    });
  }
  // contactd forget, run while the service runs, leaves its request beside MESSAGES_FILE. What it
  // erased is remembered while senders may still wait, so the queue sends none of it and no
  // record of it is written afterwards.
  const forgotten = new ForgottenIds(2 * config.deliveryWaitMs + 60_000, io.clock.now);
  let forgetting: Promise<void> = Promise.resolve();
  let forgetBusy = false;
  const cancelForget = io.every(() => {
    // A tick while the last request is still served is skipped: ticks never pile up.
    if (forgetBusy) return;
    forgetBusy = true;
    forgetting = forgetting.then(() =>
      serveForgetRequest({
        forgotten,
        pendingOnDisk: pendingOnDisk(outboxFile, denoFs),
        appender: backup,
        fs: denoRewriteFs,
        path: config.messagesFile,
        messagesFile: config.messagesFile,
        outbox,
        now: io.clock.wallNow,
        log,
        ledger,
        onChatDeletions: (deletions) => void deleteLater(deletions),
        extra: kept,
      })
    ).finally(() => forgetBusy = false);
  }, FORGET_POLL_MS);
  stack.defer(async () => {
    cancelForget();
    await forgetting;
  });

  let examplePage: Uint8Array | undefined;
  if (config.serveExample) {
    try {
      // Read once: the handler serves these bytes and never touches the file system.
      examplePage = await io.readFile(EXAMPLE_PAGE_URL);
    } catch (error) {
      log("error", { event: "example_read_failed", error: describeError(error) });
      return undefined;
    }
    log("info", { event: "serving_example", path: "/" });
  }

  const { messenger } = config;
  const tally = tallyRefusals(log);
  const cancelSummaries = io.every(tally.flush, SUMMARY_INTERVAL_MS);
  stack.defer(() => {
    cancelSummaries();
    tally.flush();
  });
  const api = { apiUrl: config.apiUrl, timeoutMs: config.timeoutMs, fetch: io.fetch };
  // The last 24 hours, for the chat's /status: delivered (noted by the outbox), held as spam and
  // refused by the rate limiter (their log lines).
  const recent = new RecentCounts();
  const counted: typeof tally.log = (level, fields) => {
    if (fields.event === "contact" && (fields.result === "held_spam" || fields.status === 429)) {
      recent.add(fields.result === "held_spam" ? "held_spam" : "rate_limited", io.clock.now());
    }
    tally.log(level, fields);
  };
  const { chatActions } = config;
  const queue = messenger === undefined ? undefined : new DeliveryQueue({
    chatId: messenger.chatId,
    send: (text, to, markup) =>
      sendMessage(
        { ...api, token: messenger.token },
        to?.chatId ?? messenger.chatId,
        text,
        to === undefined ? messenger.topicId : to.topicId,
        markup === undefined ? undefined : { replyMarkup: markup as InlineKeyboard },
      ),
    // A redelivered notification shows the state the owner set on an earlier copy.
    ...(chatActions.enabled
      ? { markup: (id: string) => keyboardFor(ledger.get(id)?.state ?? "open", id) }
      : {}),
    onSent: async ({ submission, chat, messageId, first }) => {
      if (messageId === undefined) return;
      if (forgotten.has(submission.id)) {
        // Erased (contactd forget) while this part was on its way: deleted, never recorded.
        void deleteLater([{ chat, messages: [messageId] }]);
        return;
      }
      await ledger.noteSent({
        id: submission.id,
        ts: submission.ts,
        chat,
        messageId,
        first,
        ...(submission.form === undefined ? {} : { form: submission.form }),
        ip: submission.ip,
        contact: submission.contact,
      });
    },
    destination: (id) => {
      const form = config.forms.find((form) => form.id === id);
      return form?.chatId === undefined
        ? undefined
        : { form: id, chatId: form.chatId, topicId: form.topicId, title: form.title };
    },
    store: {
      entries: () => outbox.entries(),
      read: (id) => outbox.read(id),
      failed: (id, ts, error) => outbox.failed(id, ts, error),
      done: (id, ts, result) => {
        if (result === "delivered") recent.add("delivered", io.clock.now());
        return outbox.done(id, ts, result);
      },
    },
    pacer: new Pacer(),
    clock: io.clock,
    random: io.random,
    log: tally.log,
    waitMs: config.deliveryWaitMs,
    maxAgeMs: config.deliveryMaxAgeMs,
    stopWaitMs: stopWaitMs(config.timeoutMs),
    forgotten,
  });
  if (queue !== undefined && messenger !== undefined) {
    queueToClose = queue;
    if (!stopping) queue.start();
    // Before the outbox closes: a call in flight at the stop is answered and noted first.
    stack.defer(() => queue.close());
    const token = messenger.token;
    deleteLater = (deletions) =>
      deleteFromChat(deletions, {
        api: { ...api, token },
        // After the owner's calls and the backlog: deleting is never urgent.
        call: (chat, fn) => queue.call(chat, fn, "later"),
        deleted: (deletion) => ledger.deleted(deletion),
        log,
      }).then(() => {});
    // Erased while the service was stopped (contactd forget): deleted from the chat now.
    void deleteLater(ledger.pendingDeletions());
  }
  if (config.challenge.kind === "turnstile" && isTurnstileTestSecret(config.challenge.secret)) {
    log("warn", { event: "challenge_test_secret", setting: "CHALLENGE_SECRET" });
  }
  const challenge: ChallengeGate | undefined = config.challenge.kind === "altcha"
    ? new Altcha({
      secret: config.challenge.secret,
      clock: io.clock,
      onFull: () => log("warn", { event: "challenge_replay_set_full", capacity: REPLAY_CAPACITY }),
    })
    : config.challenge.kind === "turnstile"
    ? new Turnstile({
      secret: config.challenge.secret,
      verifyUrl: config.challenge.verifyUrl,
      fetch: io.fetch,
      onOutage: (reason) => log("warn", { event: "challenge_unavailable", reason }),
    })
    : undefined;
  const handler = createHandler({
    now: () => io.clock.wallNow(),
    trustedProxies: config.trustedProxies,
    realIpHeader: config.realIpHeader,
    limiter: new RateLimiter(postBudget(config.rateLimit)),
    outbox,
    queue,
    newId: () => newSubmissionId(),
    forgotten,
    append: (line) => backup.append(line),
    log: counted,
    blocks,
    allowedOrigins: config.allowedOrigins,
    forms: config.forms,
    examplePage,
    challenge,
    challengeLimiter: challenge?.issue === undefined
      ? undefined
      : new RateLimiter(CHALLENGE_BUDGET),
    deliveryStatus: () => ({
      ...(queue?.status() ?? { state: "paused", reason: "not_configured" }),
      pending: outbox.pendingCount,
    }),
  });
  const identity = botCheck === undefined ? undefined : await botCheck;
  const bot = identity === undefined ? undefined : botCheckReport(identity);
  if (bot !== undefined && "fields" in bot) log(bot.level, bot.fields);
  if (queue !== undefined && messenger !== undefined && chatActions.enabled && !stopping) {
    const waiting = () =>
      pendingItems(outbox.entries(), replies?.pending() ?? [], io.clock.wallNow());
    const inbox: RunningInbox = startChatInbox({
      api: { ...api, token: messenger.token },
      queue,
      ledger,
      blocks,
      spamBlockMs: config.spamBlockMs,
      chats: new Set([messenger.chatId, ...config.forms.flatMap((form) => form.chatId ?? [])]),
      by: chatActions.by,
      botUsername: identity?.ok === true ? identity.username : undefined,
      botId: identity?.ok === true ? identity.id : undefined,
      ...(mail === undefined || replies === undefined ? {} : {
        mail: {
          store: replies,
          transport: (() => {
            const transport = smtpTransport({ server: mail, name: domainOf(mail.from) });
            stack.defer(() => transport.close());
            return transport;
          })(),
          settings: {
            from: mail.from,
            ...(mail.replyTo === undefined ? {} : { replyTo: mail.replyTo }),
          },
          limit: config.replyLimit,
          maxAgeMs: config.deliveryMaxAgeMs,
          findRecord: (id: string) => findRecord(denoFs, config.messagesFile, id),
          formTitle: (form: string | undefined) =>
            config.forms.find((candidate) => candidate.id === form)?.title,
        },
      }),
      status: () => {
        const now = io.clock.now();
        return {
          delivery: queue.status(),
          pending: outbox.pendingCount,
          oldestMs: oldestMessageMs(waiting()),
          replies: replies?.pending().length,
          delivered: recent.count("delivered", now),
          heldSpam: recent.count("held_spam", now),
          rateLimited: recent.count("rate_limited", now),
        };
      },
      pending: waiting,
      messagesFile: config.messagesFile,
      fs: denoFs,
      clock: io.clock,
      random: io.random,
      // Refusals are tallied into the contact_summary lines.
      log: tally.log,
    });
    // A stop ends the long poll at once; the disposer (before the queue's) waits for an update
    // being handled.
    inboxToClose = inbox;
    stack.defer(() => inbox.close());
  }

  const serveOptions: Deno.ServeTcpOptions = {
    hostname: config.host,
    port: config.port,
    onListen: ({ hostname, port }) =>
      log("info", {
        event: "listening",
        hostname,
        port,
        ...(bot !== undefined && "bot" in bot ? { bot: bot.bot } : {}),
      }),
    onError: (error) => {
      log("error", { event: "internal_error", status: 500, error: describeError(error) });
      return new Response(null, { status: 500 });
    },
  };
  try {
    // Out of descriptors, Deno's accept loop ends: listen again rather than end the process.
    server = keepServing({
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
  if (stopping) server.shutdown();

  const running = server;
  const owned = stack.move();
  return {
    finished: running.finished,
    stop,
    async [Symbol.asyncDispose]() {
      stop("disposed");
      await running.finished;
      await owned.disposeAsync();
      log("info", { event: "stopped" });
    },
  };
}

/** The domain of an address: the EHLO name contactd gives the mail server. */
function domainOf(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1);
}

/** How often the block list takes in what `contactd unblock` appended. */
export const BLOCK_REFRESH_MS = 1000;

/** Adds a signal listener that the stack removes. */
function listen(
  stack: AsyncDisposableStack,
  io: ServiceIO,
  signal: Deno.Signal,
  handler: () => void,
): void {
  io.addSignalListener(signal, handler);
  stack.defer(() => io.removeSignalListener(signal, handler));
}
