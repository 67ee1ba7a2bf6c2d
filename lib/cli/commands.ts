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
  type OutboxEntry,
  type OutboxIndex,
  outboxPath,
  type OutboxSubmission,
} from "../storage/outbox.ts";
import { damagedPath, repliesPath } from "../common/state_files.ts";
import { readReplies, type RepliesRead } from "../mail/reply_store.ts";
import { denoFs } from "../storage/file_system.ts";
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
  /** Reads the outbox's index (lib/storage/outbox.ts `loadOutbox`); never writes. */
  readonly readOutbox: (path: string) => Promise<OutboxIndex>;
  /** Reads the submissions of entries from the outbox (lib/storage/outbox.ts `readSubmissions`). */
  readonly readSubmissions: (
    path: string,
    entries: Iterable<OutboxEntry>,
  ) => AsyncIterable<OutboxSubmission | undefined>;
  readonly now: () => Date;
  /**
   * Reads the replies file (lib/mail/reply_store.ts `readReplies`) for `pending`; never writes.
   * Unset: the real file.
   */
  readonly readReplies?: (path: string) => Promise<RepliesRead>;
  /** Whether this process holds a permission (a compiled binary's are fixed at build time). */
  readonly granted: (permission: NeededPermission) => boolean;
  /** Writes one line for the operator (stdout). */
  readonly out: (line: string) => void;
  /** Writes one line about a failure (stderr). */
  readonly err: (line: string) => void;
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

/**
 * `contactd check`: settings valid (with the spam challenge and the messages waiting in the
 * outbox), token accepted (`getMe`), chat reachable (`getChat`).
 */
export const checkCommand = run("check", async (settings, io) => {
  const { config, options } = api(settings, io);
  io.out(
    `settings: ok (listen ${netAddress(config.host, config.port)}, backup ${config.messagesFile})`,
  );
  io.out(`challenge: ${config.challenge.kind}`);
  io.out(`pending: ${await _pendingText(config, io)}`);
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
  io.out("ok: ready to deliver");
});

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

/** `contactd chat-id`: the chats that wrote to the bot recently, from `getUpdates`. */
export const chatIdCommand = run("chat-id", async (settings, io) => {
  const { options } = api(settings, io);
  // No offset: reading does not confirm (consume) the updates.
  const updates = await callBotApi(options, "getUpdates", { limit: 100, timeout: 0 });
  if (!updates.ok) {
    const hint = isTokenRefused(updates)
      ? ` (${TOKEN_REFUSED_HINT})`
      : updates.errorCode === 409
      ? " (the bot has a webhook, and getUpdates works only without one: remove it with the " +
        "Bot API's deleteWebhook, or read the chat id from an update your webhook receives)"
      : "";
    throw new CommandFailure(`getUpdates failed: ${updates.error}${hint}`);
  }
  const { chats, migrations } = chatsOf(updates.result);
  if (chats.size === 0) {
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
 * `withText`). Reads the outbox and the replies file, never writes them, so it is safe while the
 * service runs.
 */
export const pendingCommand = (settings: Settings, io: CommandIo, withText: boolean) =>
  run("pending", async (settings, io) => {
    const config = configOf(settings, io);
    const path = outboxPath(config.messagesFile);
    let index: OutboxIndex;
    try {
      index = await io.readOutbox(path);
    } catch (error) {
      throw new CommandFailure(
        `cannot read ${path}: ${error instanceof Error ? error.name : error}`,
      );
    }
    const pending = [...index.entries.values()].filter((entry) => entry.done === false);
    const replies = await _repliesLines(config, io);
    // Damaged lines (a crash mid-write, a damaged disk) are never silent: skipped here, kept
    // aside by the service in damagedPath(path).
    const aside = index.keptAside ?? 0;
    const kept = damagedPath(path);
    const damage = index.skipped + aside === 0
      ? undefined
      : `damaged: ${index.skipped} line(s) of ${path} skipped, ${aside} kept aside in ${kept}`;
    if (pending.length === 0) {
      // Delivered or given up (too old, or refused by Telegram even as a notice): the log's
      // delivery_given_up lines name those, and their records are in the backup file.
      io.out(
        `nothing pending in ${path}: every message was delivered or given up ` +
          "(delivery_given_up in the log names those; their records are in the backup file)",
      );
      if (damage !== undefined) io.out(damage);
      for (const line of replies) io.out(line);
      return;
    }
    io.out("id\treceived\tattempts\tanswered\tlast error");
    const texts = withText ? io.readSubmissions(path, pending)[Symbol.asyncIterator]() : undefined;
    for (const entry of pending) {
      const answered = entry.status === undefined
        ? "-"
        : entry.status === null
        ? "none"
        : entry.status;
      io.out(
        `${entry.id}\t${entry.ts}\t${entry.attempts}\t${answered}\t` +
          printable(entry.lastError ?? "-"),
      );
      const next = await texts?.next();
      if (next !== undefined && !next.done && next.value === undefined) {
        io.out("  (its text moved: contactd compacted the outbox meanwhile; run this again)");
      } else if (next !== undefined && !next.done && next.value !== undefined) {
        const { name, contact, ip, message } = next.value;
        io.out(`  name: ${printable(name || "-")}`);
        io.out(`  contact: ${printable(contact || "-")}`);
        io.out(`  ip: ${printable(ip)}`);
        io.out(`  message: ${printable(JSON.stringify(message), Infinity)}`);
        if (next.value.form !== undefined) io.out(`  form: ${printable(next.value.form)}`);
        // The form's other fields (lib/form/fields.ts), labelled apart from the lines above.
        for (const [field, value] of Object.entries(next.value.fields ?? {})) {
          io.out(`  field ${printable(field)}: ${printable(value, Infinity)}`);
        }
      }
    }
    const oldest = pending[0]!.ts;
    io.out(`${pending.length} pending, oldest ${oldest}: contactd delivers them while it runs`);
    if (damage !== undefined) io.out(damage);
    for (const line of replies) io.out(line);
  })(settings, io);

/**
 * `pending`'s lines on the replies waiting to be emailed (none when there are none); a replies
 * file that cannot be read is said so in one line without failing the command.
 */
async function _repliesLines(config: Config, io: CommandIo): Promise<string[]> {
  const path = repliesPath(config.messagesFile);
  let read: RepliesRead;
  try {
    read = await (io.readReplies ?? ((path) => readReplies(denoFs, path)))(path);
  } catch (error) {
    return [
      `replies: unknown (cannot read ${path}: ${error instanceof Error ? error.name : "error"})`,
    ];
  }
  const lines: string[] = [];
  if (read.pending.length > 0) {
    const now = io.now().getTime();
    lines.push("reply\tsubmission\taccepted\tage\tattempts\tlast error");
    for (const reply of read.pending) {
      lines.push(
        `${printable(reply.id)}\t${printable(reply.submission)}\t${printable(reply.ts)}\t` +
          `${_age(now - Date.parse(reply.ts))}\t${reply.attempts}\t` +
          printable(reply.lastError ?? "-"),
      );
    }
    lines.push(
      `${read.pending.length} repl${read.pending.length === 1 ? "y" : "ies"} waiting to be ` +
        `emailed, oldest ${read.pending[0]!.ts}: contactd sends them while it runs`,
    );
  }
  if (read.skipped > 0) lines.push(`damaged: ${read.skipped} line(s) of ${path} skipped`);
  return lines;
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
 * How many messages wait in the outbox, and since when, for `check`; an outbox that cannot be
 * read is said so without failing the check (it is the service's file, not a setting).
 */
async function _pendingText(config: Config, io: CommandIo): Promise<string> {
  const path = outboxPath(config.messagesFile);
  let index: OutboxIndex;
  try {
    index = await io.readOutbox(path);
  } catch (error) {
    return `unknown (cannot read ${path}: ${error instanceof Error ? error.name : "error"})`;
  }
  const pending = [...index.entries.values()].filter((entry) => entry.done === false);
  return pending.length === 0
    ? "0 messages waiting"
    : `${pending.length} message${pending.length === 1 ? "" : "s"} waiting, oldest ` +
      `${pending[0]!.ts} (contactd pending lists them)`;
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
