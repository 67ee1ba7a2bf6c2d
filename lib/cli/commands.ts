/**
 * Operator commands: `check`, `chat-id`, `send-test`. They reuse the service's Bot API client,
 * print plain lines for a person, and on failure exit 1 with one line saying why. The token is
 * never printed (the client redacts it from every error), and names that strangers chose (chat
 * titles) are stripped of control characters before they reach the terminal.
 *
 * @module
 */
import { formatTimestamp } from "../common/timestamp.ts";
import { type Config, ConfigError, formSettingName, parseConfig } from "../config/config.ts";
import { type NeededPermission, netAddress, permissionGaps } from "../config/permissions.ts";
import type { Settings } from "../config/settings.ts";
import { isRecord } from "../common/json.ts";
import {
  databasePath,
  openLocalStore,
  type OpResult,
  type Store,
  StoreError,
} from "../storage/store.ts";
import { lockHolder } from "../storage/lock.ts";
import { type OutboxSubmission, submissionOf } from "../storage/outbox.ts";
import { MailSendError } from "../mail/send_error.ts";
import { ehloName, isLoopbackHost } from "../mail/smtp_server.ts";
// Types only: nodemailer is loaded by main.ts, not by the launcher that imports the commands.
import type { SmtpTransport, SmtpTransportOptions } from "../mail/smtp_transport.ts";
import {
  type BotApiOptions,
  callBotApi,
  getMe,
  isTokenRefused,
  sendNotification,
  TOKEN_REFUSED_HINT,
} from "../bot/api.ts";

/** What the commands need from the outside world. */
export interface CommandIo {
  readonly fetch: typeof fetch;
  readonly now: () => Date;
  /** Whether this process holds a permission (a compiled binary's are fixed at build time). */
  readonly granted: (permission: NeededPermission) => boolean;
  /** Writes one line for the operator (stdout). */
  readonly out: (line: string) => void;
  /** Writes one line about a failure (stderr). */
  readonly err: (line: string) => void;
}

/** What `chat-id` needs beyond the other commands. */
export interface ChatIdIo extends CommandIo {
  /**
   * The running service holding the lock of `messagesFile` (its process id when known), else
   * `undefined`; default: the lock file itself (lib/storage/lock.ts `lockHolder`).
   */
  readonly serviceHolding?: (
    messagesFile: string,
  ) => Promise<{ readonly pid: string | undefined } | undefined>;
}

/** A command's failure: the one line it exits with. */
export class CommandFailure extends Error {}

/** A command's body: throws {@linkcode CommandFailure} to fail in one line. */
export type Command<Io extends CommandIo = CommandIo> = (
  settings: Settings,
  io: Io,
) => Promise<void>;

/** Runs `command`, turning its {@linkcode CommandFailure} into one stderr line and exit 1. */
export function run<Io extends CommandIo = CommandIo>(name: string, command: Command<Io>) {
  return async (settings: Settings, io: Io): Promise<number> => {
    try {
      await command(settings, io);
      return 0;
    } catch (error) {
      if (!(error instanceof CommandFailure)) throw error;
      io.err(`contactd ${name}: ${error.message}`);
      return 1;
    }
  };
}

function configOf(settings: Settings, io: CommandIo): Config {
  try {
    const config = parseConfig(settings);
    const gap = permissionGaps(config, io.granted)[0];
    if (gap !== undefined) throw new CommandFailure(gap.message);
    return config;
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandFailure(error.message);
    throw error;
  }
}

/** The settings parsed, without asking for the service's permissions. */
function _parsed(settings: Settings): Config {
  try {
    return parseConfig(settings);
  } catch (error) {
    if (error instanceof ConfigError) throw new CommandFailure(error.message);
    throw error;
  }
}

function api(settings: Settings, io: CommandIo): { config: Config; options: BotApiOptions } {
  const config = configOf(settings, io);
  const token = settings.MESSENGER_BOT_TOKEN?.trim();
  if (!token) throw new CommandFailure(`"MESSENGER_BOT_TOKEN" is not set`);
  return {
    config,
    options: { apiUrl: config.apiUrl, token, timeoutMs: config.timeoutMs, fetch: io.fetch },
  };
}

function chatIdOf(config: Config): number {
  if (config.messenger === undefined) {
    throw new CommandFailure(`"MESSENGER_CHAT_ID" is not set (contactd chat-id lists candidates)`);
  }
  return config.messenger.chatId;
}

/** What `check` needs beyond the other commands. */
export interface CheckIo extends CommandIo {
  /**
   * The mail transport `SMTP_URL` is tried through (main.ts: lib/mail/smtp_transport.ts); absent,
   * the mail server is not tried.
   */
  readonly smtpTransport?: (options: SmtpTransportOptions) => SmtpTransport;
}

/**
 * `contactd check`: settings valid (with the spam challenge and the messages waiting in the
 * outbox), token accepted (`getMe`), chat reachable (`getChat`), and with `SMTP_URL` the mail
 * server reachable and the login accepted.
 */
export const checkCommand = run<CheckIo>("check", async (settings, io) => {
  const { config, options } = api(settings, io);
  io.out(
    `settings: ok (listen ${netAddress(config.host, config.port)}, backup ${config.messagesFile})`,
  );
  io.out(`challenge: ${config.challenge.kind}`);
  io.out(`pending: ${await _pendingText(config)}`);
  const bot = await getMe(options);
  if (!bot.ok) {
    const hint = bot.tokenRefused ? ` (${TOKEN_REFUSED_HINT})` : "";
    throw new CommandFailure(`getMe failed: ${bot.error}${hint}`);
  }
  io.out(`bot: @${printable(bot.username)} (id ${bot.id})`);
  const chatId = chatIdOf(config);
  const topicId = config.messenger?.topicId;
  const chat = await _checkChat(options, bot.id, chatId, topicId, {
    chat: "MESSENGER_CHAT_ID",
    topic: "MESSENGER_TOPIC_ID",
  });
  io.out(`chat: ${chat}`);
  // The Bot API cannot look a topic up: only a post (send-test) shows that it still exists.
  if (topicId !== undefined) {
    io.out(`topic: ${topicId} (in a forum; contactd send-test posts into it)`);
  }
  // Every form of FORMS, each chat and topic checked the same way.
  for (const form of config.forms) {
    const formChat = form.chatId ?? chatId;
    await _checkChat(options, bot.id, formChat, form.topicId, {
      chat: formSettingName(form.id, "CHAT_ID"),
      topic: formSettingName(form.id, "TOPIC_ID"),
    });
    const topic = form.topicId === undefined ? "" : `, topic ${form.topicId}`;
    // A form in the service's chat says so: a mistyped FORM_<ID>_CHAT_ID would look set.
    const whose = formChat === chatId ? " (the service's chat)" : "";
    io.out(
      `form ${form.id}: POST /api/contact/${form.id} to chat ${formChat}${whose}${topic} ` +
        `("${printable(form.title)}")`,
    );
  }
  if (config.mail !== undefined && io.smtpTransport !== undefined) {
    io.out(`mail: ${await _checkMail(config.mail, io.smtpTransport)}`);
  }
  io.out("ok: ready to deliver");
});

/**
 * `SMTP_URL`'s server tried as a reply would reach it (connect, EHLO, STARTTLS or TLS, the
 * login), nothing sent: its description, or a {@linkcode CommandFailure} with contactd's reason
 * (never the server's words, never the password).
 */
async function _checkMail(
  mail: NonNullable<Config["mail"]>,
  connect: (options: SmtpTransportOptions) => SmtpTransport,
): Promise<string> {
  const transport = connect({
    server: mail,
    name: ehloName(mail.from),
  });
  const address = netAddress(mail.host, mail.port);
  try {
    await transport.verify();
  } catch (error) {
    if (!(error instanceof MailSendError)) throw error;
    throw new CommandFailure(
      `mail server ${address}: ${error.reason} (SMTP_URL, SMTP_USER, SMTP_PASSWORD; replies by ` +
        "email would wait in the replies file)",
    );
  } finally {
    transport.close();
  }
  const tls = mail.secure
    ? "TLS"
    : isLoopbackHost(mail.host)
    ? "STARTTLS where offered, loopback"
    : "STARTTLS";
  return `${address} answers (${tls}${mail.user === undefined ? "" : ", login accepted"})`;
}

/**
 * Checks that `chatId` is reachable (`getChat`) and, with a topic, that it has forum topics;
 * returns its description, or throws {@linkcode CommandFailure} naming the setting to change.
 */
async function _checkChat(
  options: BotApiOptions,
  botId: number,
  chatId: number,
  topicId: number | undefined,
  names: { readonly chat: string; readonly topic: string },
): Promise<string> {
  if (chatId === botId) {
    throw new CommandFailure(`chat ${chatId} is the bot itself; use the id of a person or group`);
  }
  const chat = await callBotApi(options, "getChat", { chat_id: chatId });
  if (!chat.ok) {
    const migrated = chat.parameters?.migrate_to_chat_id;
    if (migrated !== undefined) {
      throw new CommandFailure(`chat ${chatId} became a supergroup: set ${names.chat}=${migrated}`);
    }
    throw new CommandFailure(
      `chat ${chatId} is not reachable: ${chat.error} (message the bot from that chat first)`,
    );
  }
  if (topicId !== undefined && !(isRecord(chat.result) && chat.result.is_forum === true)) {
    throw new CommandFailure(
      `chat ${chatId} has no forum topics: unset ${names.topic} (now ${topicId})`,
    );
  }
  return describeChat(chat.result, chatId);
}

/**
 * `contactd chat-id`: the chats that wrote to the bot recently, from `getUpdates`. A running
 * service with `CHAT_ACTIONS` reads (and confirms) the updates itself: with none left, it says so
 * and what to do instead of asking to message the bot again.
 */
export const chatIdCommand = run<ChatIdIo>("chat-id", async (settings, io) => {
  const { config, options } = api(settings, io);
  // No offset: reading does not confirm (consume) the updates.
  const updates = await callBotApi(options, "getUpdates", { limit: 100, timeout: 0 });
  if (!updates.ok) {
    const hint = isTokenRefused(updates)
      ? ` (${TOKEN_REFUSED_HINT})`
      : updates.errorCode === 409 && /terminated by other getUpdates/i.test(updates.error)
      ? ` (${_serviceReads(await _holding(io, config.messagesFile))})`
      : updates.errorCode === 409
      ? " (the bot has a webhook, and getUpdates works only without one: remove it with the " +
        "Bot API's deleteWebhook, or read the chat id from an update your webhook receives)"
      : "";
    throw new CommandFailure(`getUpdates failed: ${updates.error}${hint}`);
  }
  const { chats, migrations } = chatsOf(updates.result);
  if (chats.size === 0) {
    const holder = config.chatActions.enabled ? await _holding(io, config.messagesFile) : undefined;
    if (holder !== undefined) throw new CommandFailure(`no chat to list: ${_serviceReads(holder)}`);
    throw new CommandFailure(
      "no chat has written to the bot yet: message the bot first (in a group, add it and " +
        "send /start@<bot username>), then run contactd chat-id again",
    );
  }
  io.out("id\ttype\tname");
  for (const [id, chat] of chats) io.out(`${id}\t${describeType(chat)}\t${describeName(chat)}`);
  for (const [from, to] of migrations) {
    io.out(`note: group ${from} became supergroup ${to}; use ${to}`);
  }
});

/** The service holding `messagesFile`'s lock, if one does; unknown (unreadable lock) as none. */
async function _holding(
  io: ChatIdIo,
  messagesFile: string,
): Promise<{ readonly pid: string | undefined } | undefined> {
  try {
    return await (io.serviceHolding ?? ((file) => lockHolder(file)))(messagesFile);
  } catch {
    // An unreadable lock file leaves the usual advice, which still holds.
    return undefined;
  }
}

/**
 * Why `chat-id` sees no update while the service runs, and what to do instead; with no holder
 * known (a 409 from another poller), a contactd elsewhere is the likely one.
 */
function _serviceReads(holder: { readonly pid: string | undefined } | undefined): string {
  const which = holder?.pid === undefined ? "" : ` (process ${holder.pid})`;
  return `${
    holder === undefined ? "another process, likely a" : "the"
  } running contactd${which} reads the bot's updates itself (CHAT_ACTIONS), so none ` +
    "are left for chat-id: stop it, message the bot from the chat, run contactd chat-id, then " +
    "start it again";
}

/** `contactd send-test`: one notification to the configured chat. */
export const sendTestCommand = run("send-test", async (settings, io) => {
  const { config, options } = api(settings, io);
  const chatId = chatIdOf(config);
  const text = `contactd test notification\nTime: ${formatTimestamp(io.now())}\n\n` +
    "If you can read this, contact form messages will arrive here.";
  const topicId = config.messenger?.topicId; // MESSENGER_TOPIC_ID: the test goes to the topic too
  const result = await sendNotification({ ...options, chatId, topicId }, text);
  if (!result.ok) {
    const migrated = result.migrateToChatId === undefined
      ? ""
      : ` (the group became a supergroup: set MESSENGER_CHAT_ID=${result.migrateToChatId})`;
    throw new CommandFailure(`not delivered: ${result.error}${migrated}`);
  }
  io.out(`sent: test notification delivered to chat ${chatId}`);
});

/**
 * `contactd pending`: the submissions not delivered yet, oldest first: id, when received, failed
 * attempts, what the sender was answered, the last error. Names, contacts and messages only with
 * `withText`. Then the owner's replies waiting to be emailed: reply and submission ids, when
 * accepted, age, failed attempts, the last error (never an address or a text, even with
 * `withText`). Reads the database (`MESSAGES_FILE.db`) in short read transactions, a page at a
 * time, so it is safe while the service runs; a missing database has nothing pending.
 */
export const pendingCommand = (settings: Settings, io: CommandIo, withText: boolean) =>
  run("pending", async (settings, io) => {
    // Only the database is read: the service's other permissions (network, the backup file)
    // are not asked for (lib/config/permissions.ts `pendingFlags`).
    const config = _parsed(settings);
    const path = databasePath(config.messagesFile);
    let store: Store | undefined;
    try {
      store = _openDatabase(path);
    } catch (error) {
      throw new CommandFailure(`cannot read ${path}: ${_failure(error)}`);
    }
    if (store === undefined) {
      io.out(`nothing pending in ${path}: there is no database (contactd makes it when it starts)`);
      return;
    }
    try {
      await _listPending(store, path, io, withText);
    } catch (error) {
      if (!(error instanceof StoreError)) throw error;
      throw new CommandFailure(`cannot read ${path}: ${_failure(error)}`);
    } finally {
      await store.close();
    }
  })(settings, io);

/** `pending`'s lines, read from `store`. */
async function _listPending(
  store: Store,
  path: string,
  io: CommandIo,
  withText: boolean,
): Promise<void> {
  let count = 0;
  let oldest = "";
  for await (const entry of _waiting(store, withText)) {
    if (count++ === 0) {
      oldest = entry.ts;
      io.out("id\treceived\tattempts\tanswered\tlast error");
    }
    const answered = entry.recorded === 0 ? "-" : entry.status === null ? "none" : entry.status;
    io.out(
      `${entry.id}\t${entry.ts}\t${entry.attempts}\t${answered}\t` +
        printable(entry.lastError ?? "-"),
    );
    if (entry.submission !== undefined) {
      _submissionLines(submissionOf(entry, entry.submission), entry.submission, io);
    }
  }
  if (count === 0) {
    // Delivered or given up (too old, or refused by Telegram even as a notice): the log's
    // delivery_given_up lines name those, and their records are in the backup file.
    io.out(
      `nothing pending in ${path}: every message was delivered or given up ` +
        "(delivery_given_up in the log names those; their records are in the backup file)",
    );
  } else {
    io.out(`${count} pending, oldest ${oldest}: contactd delivers them while it runs`);
  }
  for (const line of _repliesLines(await store.run("replies.waiting", undefined), io)) {
    io.out(line);
  }
  const files = await store.run("files.waitingCount", undefined);
  if (files > 0) {
    io.out(
      `${files} file${files === 1 ? "" : "s"} sent with forms waiting for the chat: contactd ` +
        "sends them after their notifications while it runs",
    );
  }
}

/**
 * A waiting submission's text (lib/storage/outbox.ts `submissionOf`), or its row's JSON as it is
 * when it is no submission.
 */
function _submissionLines(
  submission: OutboxSubmission | undefined,
  json: string,
  io: CommandIo,
): void {
  if (submission === undefined) {
    io.out(`  (unreadable: ${printable(json, 200)})`);
    return;
  }
  io.out(`  name: ${printable(submission.name || "-")}`);
  io.out(`  contact: ${printable(submission.contact || "-")}`);
  io.out(`  ip: ${printable(submission.ip)}`);
  io.out(`  message: ${printable(JSON.stringify(submission.message), Infinity)}`);
  if (submission.form !== undefined) io.out(`  form: ${printable(submission.form)}`);
  // The form's other fields (lib/form/fields.ts), labelled apart from the lines above.
  for (const [field, value] of Object.entries(submission.fields ?? {})) {
    io.out(`  field ${printable(field)}: ${printable(value, Infinity)}`);
  }
}

type _OutboxRow = OpResult<"outbox.window">[number];

/** The outbox rows waiting for delivery, oldest first, a page (one read transaction) at a time. */
async function* _waiting(
  store: Store,
  withText: boolean,
): AsyncGenerator<_OutboxRow & { submission?: string }> {
  let afterSeq = 0;
  while (true) {
    const page = withText
      ? await store.run("outbox.texts", { afterSeq, limit: _PAGE })
      : await store.run("outbox.window", { afterSeq, limit: _PAGE });
    for (const row of page) if (row.done === null) yield row;
    if (page.length < _PAGE) return;
    afterSeq = page[page.length - 1]!.seq;
  }
}

const _PAGE = 256;

/**
 * The database at `path` opened for a command, or `undefined` when there is none (contactd never
 * ran there); throws when it cannot be opened.
 */
function _openDatabase(path: string): Store | undefined {
  try {
    return openLocalStore(path, { create: false });
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Why the database could not be read, in a few words (never a stack). */
function _failure(error: unknown): string {
  if (error instanceof StoreError) return error.message.split("\n")[0]!.slice(0, 200);
  return error instanceof Error ? error.name : "error";
}

/** `pending`'s lines on the replies waiting to be emailed (none when there are none). */
function _repliesLines(waiting: OpResult<"replies.waiting">, io: CommandIo): string[] {
  if (waiting.length === 0) return [];
  const now = io.now().getTime();
  return [
    "reply\tsubmission\taccepted\tage\tattempts\tlast error",
    ...waiting.map((reply) =>
      `${printable(reply.id)}\t${printable(reply.submission)}\t${printable(reply.ts)}\t` +
      `${_age(now - Date.parse(reply.ts))}\t${reply.attempts}\t` +
      printable(reply.lastError ?? "-")
    ),
    `${waiting.length} repl${waiting.length === 1 ? "y" : "ies"} waiting to be ` +
    `emailed, oldest ${waiting[0]!.ts}: contactd sends them while it runs`,
  ];
}

/** An age for a person: `45s`, `12m`, `5h`, `3d` (`-` when unknown or negative). */
function _age(ms: number): string {
  if (!(ms >= 0)) return "-";
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/**
 * How many messages wait in the outbox, and since when, for `check`; a database that cannot be
 * read is said so without failing the check (it is the service's file, not a setting).
 */
async function _pendingText(config: Config): Promise<string> {
  const path = databasePath(config.messagesFile);
  let count = 0;
  let oldest = "";
  try {
    const store = _openDatabase(path);
    if (store === undefined) return "0 messages waiting";
    try {
      for await (const entry of _waiting(store, false)) if (count++ === 0) oldest = entry.ts;
    } finally {
      await store.close();
    }
  } catch (error) {
    return `unknown (cannot read ${path}: ${_failure(error)})`;
  }
  return count === 0
    ? "0 messages waiting"
    : `${count} message${count === 1 ? "" : "s"} waiting, oldest ${oldest} ` +
      "(contactd pending lists them)";
}

type Chat = Record<string, unknown>;

/** Every chat in the updates (messages, edits, channel posts, membership changes, callbacks). */
function chatsOf(result: unknown): { chats: Map<number, Chat>; migrations: Map<number, number> } {
  const chats = new Map<number, Chat>();
  const migrations = new Map<number, number>();
  for (const update of Array.isArray(result) ? result : []) {
    if (!isRecord(update)) continue;
    for (const part of Object.values(update)) {
      if (!isRecord(part)) continue;
      const chat = isRecord(part.chat)
        ? part.chat
        : isRecord(part.message)
        ? part.message.chat
        : undefined;
      if (!isRecord(chat) || !Number.isSafeInteger(chat.id)) continue;
      chats.set(chat.id as number, chat);
      if (Number.isSafeInteger(part.migrate_to_chat_id)) {
        migrations.set(chat.id as number, part.migrate_to_chat_id as number);
      }
    }
  }
  return { chats, migrations };
}

function describeChat(result: unknown, chatId: number): string {
  const chat = isRecord(result) ? result : {};
  return `${chatId}, ${describeType(chat)}, ${describeName(chat)}`;
}

function describeType(chat: Chat): string {
  return printable(chat.type ?? "unknown");
}

function describeName(chat: Chat): string {
  if (typeof chat.title === "string") return printable(chat.title);
  if (typeof chat.username === "string") return `@${printable(chat.username)}`;
  const name = [chat.first_name, chat.last_name].filter((part) => typeof part === "string");
  return name.length > 0 ? printable(name.join(" ")) : "-";
}

/**
 * A value a stranger chose, safe for a terminal: no control, bidi or line-break characters, at
 * most `max` characters.
 */
export function printable(value: unknown, max = 64): string {
  const text = String(value).replace(/[\p{Cc}\p{Cf}\u2028\u2029]+/gu, " ").trim();
  const chars = Array.from(text); // code points: a cut never splits a surrogate pair
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : text || "-";
}
