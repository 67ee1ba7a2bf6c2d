/**
 * The command line of `contactd`: parsing, `--help`, `--version`, the optional env file, and
 * dispatch to the service or an operator command. All I/O is passed in.
 *
 * @module
 */
import { parseArgs as parseNodeArgs } from "node:util";
import {
  DEFAULTS,
  FORM_ID,
  type FormSettingName,
  SETTING_NAMES,
  type SettingName,
} from "../config/config.ts";
import {
  chatIdCommand,
  type ChatIdIo,
  checkCommand,
  type CheckIo,
  pendingCommand,
  sendTestCommand,
} from "./commands.ts";
import { BUILD_SETTINGS } from "../config/permissions.ts";
import { exportCommand, type ExportOptions } from "./export_command.ts";
import { forgetCommand, type ForgetOptions } from "./forget_command.ts";
import { blockedCommand, unblockCommand, type UnblockOptions } from "./blocked_command.ts";
import { TRAIN_INPUT_MAX, trainCommand, type TrainOptions } from "./train_command.ts";
import { FORGET_KINDS, parseForgetMatch } from "../storage/erasure.ts";
import { DEFAULT_FORM, EXPORT_FORMATS, type ExportFormat, parseSince } from "../storage/export.ts";
import {
  type EnvFile,
  envFileNotes,
  environmentLookalikes,
  environmentNotes,
  formSettingWarnings,
  mergeSettings,
  parseEnvFile,
  readSettings,
  type Settings,
} from "../config/settings.ts";
import { settingsLogger } from "../log/logger.ts";

/**
 * `--built-default NAME=VALUE`: a default baked into a binary by `deno task compile` (arguments
 * after the script come before the operator's). Only the settings its permissions were built
 * for; the env file and the environment still win.
 */
export const BUILT_DEFAULT_FLAG = "--built-default";

/**
 * `--launched-by-task`: `deno task contactd` (tasks/launch.ts) runs this; its settings come
 * from `.env` in the checkout, so help and messages name that way of running contactd.
 */
export const LAUNCHED_BY_TASK_FLAG = "--launched-by-task";

/** Defaults baked into a binary, by setting name. */
export type BuiltDefaults = Readonly<Partial<Record<typeof BUILD_SETTINGS[number], string>>>;

/** The commands, `serve` being the default. */
export const COMMANDS = {
  serve: "run the service (the default)",
  check: "validate the settings, call getMe, check the chat; exit 1 with the reason otherwise",
  "chat-id": "list the chats that wrote to the bot (id, type, name): finds MESSENGER_CHAT_ID",
  "send-test": "send one test notification to MESSENGER_CHAT_ID and report the result",
  pending:
    "list undelivered messages (id, received, attempts, last error; --with-text adds them) and replies waiting to be emailed",
  export:
    "print the backup file's records (read only): --since DATE, --form ID, --format csv [--no-bom]",
  forget: "remove every trace of submissions: --id ID, --contact TEXT or --address IP; --dry-run",
  blocked: "list the senders blocked as spam (kind, value, until, submission id)",
  unblock: "lift the blocks of ADDRESS (IPv6: its /64) or CONTACT (exact); - reads it from stdin",
  train:
    'teach the spam filter from stdin: JSON lines with "label":"spam"|"ham", or --label and texts',
} as const;

/** One of {@linkcode COMMANDS}. */
export type CommandName = keyof typeof COMMANDS;

/** The help lines of a form's own settings (`FORM_<ID>_*`, lib/config/config.ts). */
const FORM_SETTING_HELP = [
  "  FORM_<ID>_CHAT_ID          its chat (else MESSENGER_CHAT_ID)",
  "  FORM_<ID>_TOPIC_ID         its forum topic (else MESSENGER_TOPIC_ID, in the service's chat)",
  "  FORM_<ID>_ALLOWED_ORIGINS  origins whose pages may post to it (else ALLOWED_ORIGINS)",
  "  FORM_<ID>_TITLE            shown in its notifications' header (else the id)",
  "  FORM_<ID>_ATTACHMENTS      its files' total size per submission (else ATTACHMENTS)",
];

/** One line of help per setting; a new setting does not compile without one. */
const SETTING_HELP: Record<SettingName, string> = {
  MESSENGER_BOT_TOKEN: "bot credential from @BotFather, <digits>:<chars>; never printed",
  MESSENGER_CHAT_ID: "chat that receives notifications; negative for groups",
  MESSENGER_TOPIC_ID: "forum topic of that chat (message_thread_id); unset: none or General",
  FORMS: "extra forms (comma list of ids: a-z, 0-9, -), each at POST /api/contact/<id>",
  MESSAGES_FILE: "backup file, relative to the working directory",
  HOST: "listen address",
  PORT: "listen port",
  MESSENGER_API_URL: "Bot API base URL",
  TRUSTED_PROXIES: 'proxies (addresses/CIDRs) whose REAL_IP_HEADER is believed, or "none"',
  REAL_IP_HEADER: "X-Forwarded-For (walked from the right past TRUSTED_PROXIES) or X-Real-IP",
  MESSENGER_TIMEOUT_MS: "time limit of one Bot API call, 100 to 120000 ms",
  DELIVERY_WAIT_MS: "how long a sender waits for delivery before 502 'saved', 1000 to 30000 ms",
  DELIVERY_MAX_AGE: "undelivered messages older than this are given up: 90m, 36h, 7d (1m-365d)",
  RETENTION: "records older than this are removed, at start then daily: 90d (unset: kept)",
  ALLOWED_ORIGINS: "origins (comma list) whose pages may post: CORS, Origin check, redirects",
  SERVE_EXAMPLE:
    "1 serves examples/contact.html at / for trying contactd out (not in the binary; CHALLENGE=none)",
  RATE_LIMIT: "POSTs per client address (IPv6: /64) per window: 5/60s, 30/10m (1-100, 1s-24h)",
  ATTACHMENTS: "files per submission, total size: 10MB, 512KiB (at most 50MiB); 0: no files",
  ATTACHMENT_TYPES:
    "kinds of file taken, by content: pdf,png,jpeg,gif,webp,txt,zip,gzip,7z,rar,tar",
  CHALLENGE: "spam challenge a POST must pass: none, altcha (self-hosted) or turnstile",
  CHALLENGE_SECRET:
    "altcha: HMAC key, >= 32 bytes: 43+ base64 or 64+ hex chars; turnstile: secret key; never printed",
  TURNSTILE_VERIFY_URL: "Turnstile siteverify URL (CHALLENGE=turnstile)",
  CHAT_ACTIONS: "1 (default): buttons, /status, /pending and replies in the chat; 0: none",
  CHAT_ACTIONS_BY: "who in a group may press, command and reply: members (default) or admins",
  SPAM_BLOCK_FOR: "how long Spam blocks the sender's address (/64) and contact: 30d (1m-365d)",
  SPAM_FILTER: "what looks like spam to the learned filter: mark (default: silent), hold, off",
  SMTP_URL: "mail server for replies: smtp://host[:port] (STARTTLS) or smtps://; unset: no email",
  SMTP_USER: "mail server user (else the one in SMTP_URL)",
  SMTP_PASSWORD: "mail server password (else the one in SMTP_URL); never printed",
  REPLY_FROM: "From of replies: the site's own address (required with SMTP_URL)",
  REPLY_TO: "Reply-To of replies, if set",
  REPLY_LIMIT: "replies by email per window, all senders together: 20/1h (1-100, 1s-24h)",
};

/** What `export` gives up before it reads: it writes nothing and calls nothing. */
export const READ_ONLY_REVOKED = ["write", "net", "run"] as const;

/** What `forget` gives up before it starts: it touches contactd's own files, nothing else. */
export const OWN_FILES_REVOKED = ["net", "run"] as const;

/** What the command line asked for. */
export type Invocation =
  | { readonly kind: "help"; readonly builtDefaults?: BuiltDefaults; readonly viaTask?: boolean }
  | { readonly kind: "version" }
  | {
    readonly kind: "run";
    /** Run by `deno task contactd` (see {@linkcode LAUNCHED_BY_TASK_FLAG}). */
    readonly viaTask?: boolean;
    readonly command: CommandName;
    readonly envFile?: string;
    /** `pending --with-text`: show the messages themselves. */
    readonly withText?: boolean;
    /** `export`'s options. */
    readonly export?: ExportOptions;
    /** `forget`'s options. */
    readonly forget?: ForgetOptions;
    /** `unblock`'s address or contact. */
    readonly unblock?: UnblockOptions;
    /** `train`'s options. */
    readonly train?: TrainOptions;
    readonly builtDefaults?: BuiltDefaults;
    /** `--stop-on-stdin-eof`: see {@linkcode ServeOptions}. */
    readonly stopOnStdinEof?: boolean;
  };

/** How `serve` runs. */
export interface ServeOptions {
  /**
   * Stop gracefully when standard input reaches its end: `deno task start` holds the other end
   * of the pipe, so the service ends with its launcher, even one killed by SIGKILL.
   */
  readonly stopOnStdinEof?: boolean;
}

/** A command line that cannot be understood; the message fits one line. */
class UsageError extends Error {
  override readonly name = "UsageError";
}

/** Parses `contactd [command] [--env-file PATH] [--help] [--version]`. */
export function parseCommandLine(args: readonly string[]): Invocation {
  let parsed;
  try {
    parsed = parseNodeArgs({
      args: [...args],
      options: {
        "env-file": { type: "string" },
        "with-text": { type: "boolean" },
        since: { type: "string" },
        form: { type: "string" },
        format: { type: "string" },
        "no-bom": { type: "boolean" },
        files: { type: "string" },
        id: { type: "string" },
        contact: { type: "string" },
        address: { type: "string" },
        "dry-run": { type: "boolean" },
        label: { type: "string" },
        "stop-on-stdin-eof": { type: "boolean" },
        [LAUNCHED_BY_TASK_FLAG.slice(2)]: { type: "boolean" },
        [BUILT_DEFAULT_FLAG.slice(2)]: { type: "string", multiple: true },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "V" },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message.split("\n")[0] : String(error));
  }
  const builtDefaults = parseBuiltDefaults(parsed.values[BUILT_DEFAULT_FLAG.slice(2)]);
  const built = Object.keys(builtDefaults).length > 0 ? { builtDefaults } : {};
  const viaTask = parsed.values[LAUNCHED_BY_TASK_FLAG.slice(2)] === true ? { viaTask: true } : {};
  if (parsed.values.help) return { kind: "help", ...built, ...viaTask };
  if (parsed.values.version) return { kind: "version" };
  const [command = "serve", ...rest] = parsed.positionals;
  if (!Object.hasOwn(COMMANDS, command)) throw new UsageError(`unknown command "${command}"`);
  const unblock = _unblockOptions(command, rest);
  if (unblock === undefined && rest.length > 0) {
    throw new UsageError(`unexpected argument "${rest[0]}"`);
  }
  const envFile = parsed.values["env-file"];
  if (envFile === "") throw new UsageError("--env-file needs a path");
  const withText = parsed.values["with-text"] === true;
  if (withText && command !== "pending") throw new UsageError("--with-text is for pending only");
  const exported = _exportOptions(command, parsed.values);
  const forget = _forgetOptions(command, parsed.values);
  const train = _trainOptions(command, parsed.values.label);
  return {
    kind: "run",
    ...viaTask,
    command: command as CommandName,
    ...(envFile === undefined ? {} : { envFile }),
    ...(withText ? { withText } : {}),
    ...(exported === undefined ? {} : { export: exported }),
    ...(forget === undefined ? {} : { forget }),
    ...(unblock === undefined ? {} : { unblock }),
    ...(train === undefined ? {} : { train }),
    ...built,
    ...(parsed.values["stop-on-stdin-eof"] === true ? { stopOnStdinEof: true } : {}),
  };
}

/** `export`'s options checked, or `undefined` for another command (which may not take them). */
function _exportOptions(
  command: string,
  values: { since?: string; form?: string; format?: string; "no-bom"?: boolean; files?: string },
): ExportOptions | undefined {
  const given = (["since", "form", "format", "no-bom", "files"] as const).filter((name) =>
    values[name] !== undefined
  );
  if (command !== "export") {
    if (given.length > 0) throw new UsageError(`--${given[0]} is for export only`);
    return undefined;
  }
  const since = values.since === undefined ? undefined : parseSince(values.since);
  if (values.since !== undefined && since === undefined) {
    throw new UsageError(
      "--since takes a date the calendar has (2026-11-01) or a time with its zone " +
        "(2026-11-01T09:30:00Z)",
    );
  }
  if (values.form !== undefined && !FORM_ID.test(values.form)) {
    throw new UsageError(
      `--form takes a form id (lowercase letters, digits, -; ${DEFAULT_FORM}: the default form)`,
    );
  }
  const format = values.format ?? EXPORT_FORMATS[0];
  if (!(EXPORT_FORMATS as readonly string[]).includes(format)) {
    throw new UsageError(`--format takes ${EXPORT_FORMATS.join(" or ")}`);
  }
  if (values["no-bom"] === true && format !== "csv") {
    throw new UsageError("--no-bom is for --format csv only");
  }
  return {
    format: format as ExportFormat,
    ...(values["no-bom"] === true ? { bom: false } : {}),
    ...(since === undefined ? {} : { since }),
    ...(values.form === undefined ? {} : { form: values.form }),
    ...(values.files === undefined ? {} : { filesDir: _filesDir(values.files) }),
  };
}

/** `export --files DIR`: a directory path (it must exist; the files are created in it). */
function _filesDir(value: string): string {
  if (value.trim() === "" || value.includes("\0") || value.includes(",")) {
    throw new UsageError('--files takes a directory path without "," (it must exist)');
  }
  return value.replace(/\/+$/, "") || "/";
}

/** `forget`'s options checked: exactly one match; `undefined` for another command. */
function _forgetOptions(
  command: string,
  values: { id?: string; contact?: string; address?: string; "dry-run"?: boolean },
): ForgetOptions | undefined {
  const given = FORGET_KINDS.filter((kind) => values[kind] !== undefined);
  if (command !== "forget") {
    if (given.length > 0) throw new UsageError(`--${given[0]} is for forget only`);
    if (values["dry-run"] === true) throw new UsageError("--dry-run is for forget only");
    return undefined;
  }
  if (given.length !== 1) {
    throw new UsageError("forget takes one of --id ID, --contact TEXT or --address IP");
  }
  const by = given[0]!;
  // `-`: the value is standard input's first line, kept out of the process list (runCli reads it).
  if (values[by] === "-") {
    return { match: { by, value: "-" }, dryRun: values["dry-run"] === true, fromStdin: true };
  }
  const match = parseForgetMatch(by, values[by]!);
  if ("error" in match) throw new UsageError(match.error);
  return { match, dryRun: values["dry-run"] === true };
}

/** `train`'s options checked (`--label`), or `undefined` for another command. */
function _trainOptions(command: string, label: string | undefined): TrainOptions | undefined {
  if (command !== "train") {
    if (label !== undefined) throw new UsageError("--label is for train only");
    return undefined;
  }
  if (label === undefined) return undefined;
  if (label !== "spam" && label !== "ham") throw new UsageError("--label takes spam or ham");
  return { label };
}

/** `unblock`'s one argument (an address or a contact), or `undefined` for another command. */
function _unblockOptions(command: string, rest: readonly string[]): UnblockOptions | undefined {
  if (command !== "unblock") return undefined;
  if (rest.length !== 1 || rest[0]!.trim() === "") {
    throw new UsageError("unblock takes one ADDRESS or CONTACT (- reads it from standard input)");
  }
  return { target: rest[0]! };
}

/** `forget`'s options with a `-` value replaced by standard input's first line, or why not. */
async function _forgetFromStdin(
  options: ForgetOptions,
  io: CliIo,
): Promise<ForgetOptions | { readonly error: string }> {
  if (options.fromStdin !== true) return options;
  const text = await io.readStdin?.();
  if (text === undefined) {
    return {
      error:
        `--${options.match.by} - reads the value from standard input: one line, at most 64 KiB`,
    };
  }
  const match = parseForgetMatch(options.match.by, text.split(/\r?\n/)[0] ?? "");
  return "error" in match ? match : { match, dryRun: options.dryRun };
}

function parseBuiltDefaults(values: unknown): BuiltDefaults {
  const defaults: Partial<Record<typeof BUILD_SETTINGS[number], string>> = {};
  for (const item of Array.isArray(values) ? values as string[] : []) {
    const eq = item.indexOf("=");
    const name = item.slice(0, eq) as typeof BUILD_SETTINGS[number];
    if (eq < 0 || !BUILD_SETTINGS.includes(name)) {
      throw new UsageError(`${BUILT_DEFAULT_FLAG} takes one of ${BUILD_SETTINGS.join(", ")}=VALUE`);
    }
    defaults[name] = item.slice(eq + 1);
  }
  return defaults;
}

/**
 * Fills the settings a binary was built with where the env file and the environment leave them
 * unset or blank (blank means "the default", and the built value is this binary's default).
 */
export function withBuiltDefaults(settings: Settings, builtDefaults: BuiltDefaults): Settings {
  const result: Settings = { ...settings };
  for (const name of BUILD_SETTINGS) {
    const built = builtDefaults[name];
    if (built !== undefined && (result[name] ?? "").trim() === "") result[name] = built;
  }
  return result;
}

/**
 * The `--help` text: every command and every setting with its default. `viaTask`: run by
 * `deno task contactd`, which reads `.env` in the checkout and takes no `--env-file`.
 */
export function helpText(
  version: string,
  builtDefaults: BuiltDefaults = {},
  viaTask = false,
): string {
  const width = Math.max(...SETTING_NAMES.map((name) => name.length));
  const commandWidth = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const defaults: Readonly<Record<string, string>> = { ...DEFAULTS, ...builtDefaults };
  const usage = viaTask
    ? [
      "Usage: deno task contactd [command]      (settings: .env in the checkout, then the",
      "       deno task contactd pending [--with-text]          environment, which wins)",
      "       deno task contactd export [--since DATE] [--form ID] [--format jsonl|csv] [--no-bom]",
      "                                 [--files DIR]",
      "       deno task contactd forget --id ID | --contact TEXT | --address IP [--dry-run]",
      "       deno task contactd blocked | unblock ADDRESS|CONTACT|-",
      "       deno task contactd train [--label spam|ham] < FILE",
      "       deno task contactd --help | --version",
    ]
    : [
      "Usage: contactd [command] [--env-file PATH]",
      "       contactd pending [--with-text] [--env-file PATH]",
      "       contactd export [--since DATE] [--form ID] [--format jsonl|csv] [--no-bom]",
      "                       [--files DIR] [--env-file PATH]",
      "       contactd forget --id ID | --contact TEXT | --address IP [--dry-run] [--env-file PATH]",
      "       contactd blocked [--env-file PATH]",
      "       contactd unblock ADDRESS|CONTACT|- [--env-file PATH]",
      "       contactd train [--label spam|ham] [--env-file PATH] < FILE",
      "       contactd --help | --version",
    ];
  return [
    `contactd ${version}: relays contact-form submissions to a Telegram chat`,
    "",
    ...usage,
    "",
    "Commands:",
    ...Object.entries(COMMANDS).map(([name, text]) => `  ${name.padEnd(commandWidth)}  ${text}`),
    "",
    "Options:",
    ...(viaTask ? [] : [
      "  --env-file PATH      also read settings from PATH (KEY=value lines); the environment wins",
    ]),
    "  --since DATE         export: records from then on (2026-11-01 is midnight UTC; or a time+zone)",
    "  --form ID            export: one form's records (default: the default form's, no form key)",
    "  --format jsonl|csv   export: the JSON lines as stored (default), or CSV (formulas neutralised)",
    "  --no-bom             export --format csv: leave out the UTF-8 byte-order mark it starts with",
    "                       (spreadsheets need it to read UTF-8; leave it out for other programs)",
    "  --files DIR          export: also copy the records' files (ATTACHMENTS) into DIR, which must",
    "                       exist, as <id>-<n>-<name>, 0600, each checked against its sha256",
    "  --id ID              forget: the submission of that #id (the chat shows it)",
    "  --contact TEXT       forget: every submission with that contact (any letter case; - reads it",
    "                       from standard input, out of the process list)",
    "  --address IP         forget: every submission from that address (any written form of it; -",
    "                       reads it from standard input)",
    "  --dry-run            forget: print what would go, change nothing",
    "  ADDRESS|CONTACT|-    unblock: an IP address lifts its key (IPv6: the /64, as blocked lists",
    "                       it); anything else lifts that exact contact; - reads it from stdin",
    "  --label spam|ham     train: stdin holds plain texts of that label, several separated by NUL",
    "                       bytes; without it, JSON lines (contactd export's) each with a label",
    "  --stop-on-stdin-eof  stop serving when standard input ends (deno task start passes it)",
    "  --launched-by-task   run by deno task contactd, which reads .env (it passes this)",
    "  --built-default N=V  a default baked in by deno task compile; env file and environment win",
    "  -h, --help           print this help",
    "  -V, --version        print the version",
    "",
    "Settings (environment variables):",
    ...SETTING_NAMES.map((name) => {
      const fallback = Object.hasOwn(defaults, name) && defaults[name] !== ""
        ? ` (default ${defaults[name]})`
        : "";
      return `  ${name.padEnd(width)}  ${SETTING_HELP[name]}${fallback}`;
    }),
    "",
    "Each form of FORMS (<ID>: its id upper-cased, - as _; unset ones fall back to the above):",
    ...FORM_SETTING_HELP,
    "",
  ].join("\n");
}

/** What {@linkcode runCli} needs from the outside world. */
export interface CliIo extends ChatIdIo, CheckIo {
  readonly version: string;
  /** Reads one process environment variable (only setting names are asked for). */
  readonly env: (name: SettingName | FormSettingName) => string | undefined;
  readonly readTextFile: (path: string) => Promise<string>;
  /** The permission bits of a file (`null` where the system has none); absent: not checked. */
  readonly fileMode?: (path: string) => Promise<number | null>;
  /** Runs the service until it stops; returns the exit code. */
  readonly serve: (settings: Settings, options: ServeOptions) => Promise<number>;
  /**
   * Gives up a permission for the rest of the process: `export` drops writing and the network
   * before it reads (a binary carries the service's flags; from a checkout it never had them).
   */
  readonly revoke?: (name: "write" | "net" | "run") => void;
  /** This process's id (`forget` writes it into the lock it takes); absent: 0. */
  readonly pid?: number;
  /** Standard input as text (at most 64 KiB; `forget --contact -`); absent: none to read. */
  readonly readStdin?: () => Promise<string | undefined>;
  /** Standard input as text, at most `maxBytes` (`train`); absent: none to read. */
  readonly readAllStdin?: (maxBytes: number) => Promise<string | undefined>;
}

/** Runs the command line; returns the exit code (2 for a usage error). */
export async function runCli(args: readonly string[], io: CliIo): Promise<number> {
  let invocation: Invocation;
  try {
    invocation = parseCommandLine(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(_usageLine(error, args.includes(LAUNCHED_BY_TASK_FLAG)));
    return 2;
  }
  if (invocation.kind === "help") {
    io.out(helpText(io.version, invocation.builtDefaults, invocation.viaTask).trimEnd());
    return 0;
  }
  if (invocation.kind === "version") {
    io.out(`contactd ${io.version}`);
    return 0;
  }
  const { command, envFile } = invocation;
  let fromFile: Record<string, string | undefined> = {};
  const notes = [];
  let file: EnvFile | undefined;
  if (envFile !== undefined) {
    try {
      file = parseEnvFile(await io.readTextFile(envFile));
      fromFile = file.values;
      notes.push(...envFileNotes(envFile, file, (await io.fileMode?.(envFile)) ?? null));
    } catch (error) {
      io.err(`contactd ${command}: cannot read env file ${envFile}: ${envFileReason(error)}`);
      return 1;
    }
  }
  const settings = withBuiltDefaults(
    mergeSettings(fromFile, readSettings(io.env, fromFile.FORMS)),
    invocation.builtDefaults ?? {},
  );
  // A FORM_<X>_<SETTING> line no form of the FORMS in effect reads: told like the other lines.
  if (file !== undefined && envFile !== undefined) {
    notes.push(
      ...envFileNotes(envFile, { warnings: formSettingWarnings(file, settings.FORMS) }, null),
    );
  }
  // A form's setting spelt otherwise in the environment (FORM_SITEB_CHAT_ID for site-b): read
  // by name, as FORM_* allows, since the environment cannot be listed.
  const lookalikes = environmentLookalikes(
    settings.FORMS,
    (name) => io.env(name as FormSettingName),
  );
  notes.push(...environmentNotes(lookalikes));
  // Told once, at start: the service's log gets JSON lines, a person at a terminal plain ones.
  const log = settingsLogger(settings, (line) => io.err(line.trimEnd()));
  for (const note of notes) {
    if (command === "serve") log("warn", note.fields);
    else io.err(`contactd ${command}: ${note.text}`);
  }
  switch (command) {
    case "serve":
      return await io.serve(
        settings,
        invocation.stopOnStdinEof === true ? { stopOnStdinEof: true } : {},
      );
    case "check":
      return await checkCommand(settings, io);
    case "chat-id":
      return await chatIdCommand(settings, io);
    case "send-test":
      return await sendTestCommand(settings, io);
    case "pending":
      return await pendingCommand(settings, io, invocation.withText === true);
    case "export":
      // With --files DIR it writes into DIR (and nothing else: the flags grant only that).
      for (const name of READ_ONLY_REVOKED) {
        if (name !== "write" || invocation.export?.filesDir === undefined) io.revoke?.(name);
      }
      return await exportCommand(settings, io, invocation.export ?? { format: "jsonl" });
    case "forget": {
      for (const name of OWN_FILES_REVOKED) io.revoke?.(name);
      // A usage error otherwise: parseCommandLine requires one match.
      const options = await _forgetFromStdin(invocation.forget!, io);
      if ("error" in options) {
        io.err(_usageLine(new UsageError(options.error), args.includes(LAUNCHED_BY_TASK_FLAG)));
        return 2;
      }
      return await forgetCommand(settings, { ...io, pid: io.pid ?? 0 }, options);
    }
    case "blocked":
      // It reads the database, which SQLite (node:sqlite) opens for writing even to read.
      for (const name of OWN_FILES_REVOKED) io.revoke?.(name);
      return await blockedCommand(settings, io);
    case "unblock": {
      for (const name of OWN_FILES_REVOKED) io.revoke?.(name);
      let target = invocation.unblock!.target; // parseCommandLine requires one
      if (target === "-") {
        target = (await io.readStdin?.())?.split(/\r?\n/)[0] ?? "";
        if (target.trim() === "") {
          io.err(_usageLine(
            new UsageError("unblock - reads the address or contact from standard input: one line"),
            args.includes(LAUNCHED_BY_TASK_FLAG),
          ));
          return 2;
        }
      }
      return await unblockCommand(settings, io, { target });
    }
    case "train": {
      for (const name of OWN_FILES_REVOKED) io.revoke?.(name);
      const readInput = () => io.readAllStdin?.(TRAIN_INPUT_MAX) ?? Promise.resolve("");
      return await trainCommand(settings, { ...io, readInput }, invocation.train ?? {});
    }
  }
}

/**
 * Why an env file could not be read. Only a compiled contactd gets here with `--env-file`
 * (`deno task contactd` refuses the option: it reads `.env`), whose permissions name one file.
 */
function envFileReason(error: unknown): string {
  if (error instanceof Deno.errors.NotCapable) {
    return "not permitted: this binary may read only the env file it was built for " +
      "(CONTACTD_ENV_FILE at deno task compile, default /etc/contactd/env; docs/deployment.md)";
  }
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) {
    return "the system refused access: check its owner and mode (chmod 600, owned by the " +
      "user running contactd)";
  }
  return error instanceof Error ? error.name : "unreadable";
}

/** The one line of a usage error, pointing at the help of the way contactd was run. */
function _usageLine(error: UsageError, viaTask: boolean): string {
  return `contactd: ${error.message} (see ${viaTask ? "deno task contactd" : "contactd"} --help)`;
}
