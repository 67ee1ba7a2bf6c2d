/**
 * The Deno permissions of the service, derived from its configuration: the one source of truth
 * for `deno task start`, `deno task compile` (the binary's baked-in flags) and the end-to-end tests.
 *
 * @module
 */
import { type Config, SETTING_NAMES, type SettingName } from "./config.ts";
import { describeError } from "../log/logger.ts";
import { examplePagePath } from "./example_page.ts";
import { databasePath, directoryOf, filesDirectory, stateFiles } from "../common/state_files.ts";

/** The parts of the configuration that decide what the service may touch. */
export type PermissionInputs =
  & Pick<
    Config,
    "host" | "port" | "apiUrl" | "messagesFile" | "serveExample"
  >
  & {
    /** Only its kind and, for Turnstile, its verify URL matter (absent: `none`). */
    readonly challenge?: Config["challenge"];
    /** Only the mail server's host and port matter (absent: no replies by email). */
    readonly mail?: Pick<NonNullable<Config["mail"]>, "host" | "port"> | undefined;
  };

/**
 * The settings that decide the permissions, so a binary is built with them (`deno task compile`
 * reads them from the build environment and bakes them in as the binary's defaults).
 */
export const BUILD_SETTINGS = [
  "HOST",
  "PORT",
  "MESSENGER_API_URL",
  "MESSAGES_FILE",
  "CHALLENGE",
  "TURNSTILE_VERIFY_URL",
] as const;

/** Extra grants beyond the configuration. */
export interface FlagOptions {
  /** An env file the binary may read (`contactd --env-file PATH`); absolute in deployments. */
  readonly envFile?: string;
}

/** `host:port` as Deno's `--allow-net` expects it (IPv6 in brackets). */
export function netAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The Turnstile verify URL's `host:port`, when `CHALLENGE=turnstile`. */
function verifyAddresses(config: PermissionInputs): string[] {
  const challenge = config.challenge;
  return challenge?.kind === "turnstile" ? [apiAddress(challenge.verifyUrl)] : [];
}

/** The `--allow-net` entries of the mail server, when `SMTP_URL` is set. */
function mailAddresses(config: PermissionInputs): string[] {
  return config.mail === undefined ? [] : mailNetAddresses(config.mail);
}

/**
 * The `--allow-net` entry sending mail to `server` needs, nothing wider: its `host:port` as
 * `SMTP_URL` names it (`mail.example.org:587`, `192.0.2.25:587`, `[2001:db8::25]:465`).
 * lib/mail/smtp_transport.ts opens the connection itself by that name or address (`node:net`,
 * which Deno checks as `host:port`, the name's lookup included) and hands it to nodemailer, which
 * then resolves nothing itself.
 */
export function mailNetAddresses(
  server: { readonly host: string; readonly port: number },
): string[] {
  return [netAddress(server.host, server.port)];
}

/** The API's `host:port`, the port defaulted from the scheme. */
function apiAddress(apiUrl: string): string {
  const api = new URL(apiUrl);
  const port = api.port === "" ? (api.protocol === "https:" ? 443 : 80) : Number(api.port);
  // URL keeps IPv6 hosts in brackets; netAddress adds its own.
  return netAddress(api.hostname.replace(/^\[(.*)\]$/, "$1"), port);
}

/**
 * The flags of `deno run`/`deno compile`: listen on one address, call one API host (and the
 * Turnstile verify host with `CHALLENGE=turnstile`, the mail server with `SMTP_URL`), read and
 * write the files kept beside `MESSAGES_FILE` (lib/common/state_files.ts) and read their
 * directory, read only the named settings, one env file when given, and the example page
 * with `SERVE_EXAMPLE=1`. Nothing else (no run, ffi, sys, import).
 */
export function serviceFlags(config: PermissionInputs, options: FlagOptions = {}): string[] {
  const envFile = options.envFile;
  // An empty path would grant nothing; a "," or NUL is refused by list() like any other item.
  if (envFile === "") throw new RangeError("env file path must be non-empty");
  return [
    "--no-prompt",
    `--allow-net=${
      list([
        ...new Set([
          netAddress(config.host, config.port),
          apiAddress(config.apiUrl),
          ...verifyAddresses(config),
          ...mailAddresses(config),
        ]),
      ])
    }`,
    // Read: fstat of the open file (mode check) and noticing a rotated file; the outbox (it is
    // read back to deliver) and its compaction's temporary file; their directory, read only so
    // it can be opened and synced after a compaction's rename (durable; Deno grants a directory
    // with what is in it, so MESSAGES_FILE belongs in a directory of its own); the env file of
    // `--env-file`; the example page (read once at start-up) only when it is served.
    `--allow-read=${
      list([
        ...stateFiles(config.messagesFile),
        directoryOf(config.messagesFile),
        ...(envFile === undefined ? [] : [envFile]),
        ...(config.serveExample ? [examplePagePath()] : []),
      ])
    }`,
    `--allow-write=${list(stateFiles(config.messagesFile))}`,
    `--allow-env=${ENV_NAMES}`,
  ];
}

/**
 * The variables contactd may read: every setting, and the forms' own `FORM_<ID>_*` as one prefix
 * (Deno takes a trailing `*` in `--allow-env` as any name with that prefix).
 */
export const ENV_NAMES = `${SETTING_NAMES.join(",")},FORM_*`;

/**
 * The flags of `contactd export` run from a checkout: read the backup file and the settings,
 * nothing else (no write, no network, not even the outbox beside it). With `--files DIR`
 * (`filesDir`), also read the files' directory and write into `DIR`.
 */
export function exportFlags(
  config: Pick<PermissionInputs, "messagesFile">,
  filesDir?: string,
): string[] {
  const files = filesDir === undefined ? [] : [filesDirectory(config.messagesFile), filesDir];
  return [
    "--no-prompt",
    `--allow-read=${list([config.messagesFile, ...files])}`,
    ...(filesDir === undefined ? [] : [`--allow-write=${list([filesDir])}`]),
    `--allow-env=${ENV_NAMES}`,
  ];
}

/**
 * The flags of `contactd forget` run from a checkout: read and write contactd's own files beside
 * `MESSAGES_FILE` (and read their directory, synced after a rename), read the settings; no
 * network, nothing else.
 */
export function forgetFlags(config: Pick<PermissionInputs, "messagesFile">): string[] {
  return [
    "--no-prompt",
    `--allow-read=${list([...stateFiles(config.messagesFile), directoryOf(config.messagesFile)])}`,
    `--allow-write=${list(stateFiles(config.messagesFile))}`,
    `--allow-env=${ENV_NAMES}`,
  ];
}

/**
 * The flags of `contactd pending` run from a checkout: the database and nothing else of
 * contactd's files (SQLite opens it for writing even to read it, and keeps its `-wal` and `-shm`
 * beside it outside Deno's checks), the settings; no network. It opens no worker.
 */
export function pendingFlags(config: Pick<PermissionInputs, "messagesFile">): string[] {
  const database = databasePath(config.messagesFile);
  return [
    "--no-prompt",
    // Its -wal and -shm are read to refuse a link there (lib/storage/sqlite/database.ts); SQLite
    // itself opens them outside Deno's checks.
    `--allow-read=${list([database, `${database}-wal`, `${database}-shm`])}`,
    `--allow-write=${list([database])}`,
    `--allow-env=${ENV_NAMES}`,
  ];
}

/**
 * The flags of `contactd blocked` and `contactd unblock` run from a checkout: as `pending`'s,
 * the database alone (its `blocks`; no block list file any more) and the settings; no network.
 */
export const blockedFlags: (config: Pick<PermissionInputs, "messagesFile">) => string[] =
  pendingFlags;

/**
 * A permission list. Deno splits it at each ",": an item holding one (a checkout path, say;
 * settings are refused earlier by lib/config/config.ts) would grant something else, so it throws.
 */
function list(items: readonly string[]): string {
  const bad = items.find((item) => /[,\0]/.test(item));
  if (bad !== undefined) {
    throw new RangeError(`a permission may not hold "," or NUL: ${JSON.stringify(bad)}`);
  }
  return items.join(",");
}

/** One permission a configuration needs, as `Deno.permissions.querySync` takes it. */
export type NeededPermission =
  | { readonly name: "net"; readonly host: string }
  | { readonly name: "read" | "write"; readonly path: string };

/** A setting whose value this process may not act on, and why. */
export interface PermissionGap {
  readonly setting: SettingName;
  readonly message: string;
}

/**
 * Which settings ask for more than the granted permissions allow. A compiled binary carries its
 * flags from build time, so a `PORT` or `MESSENGER_API_URL` set later must match the build;
 * this turns the later `NotCapable` into a start-up error naming the setting.
 */
export function permissionGaps(
  config: PermissionInputs,
  granted: (permission: NeededPermission) => boolean,
): PermissionGap[] {
  const listen = netAddress(config.host, config.port);
  const api = apiAddress(config.apiUrl);
  const rebuild = "build with this setting (deno task compile) or change it back";
  const needs: Array<[SettingName, NeededPermission, string]> = [
    [
      "PORT",
      { name: "net", host: listen },
      `"HOST"/"PORT": this build may not listen on ${listen} (--allow-net=${listen}); ${rebuild}`,
    ],
    [
      "MESSENGER_API_URL",
      { name: "net", host: api },
      `"MESSENGER_API_URL": this build may not connect to ${api} (--allow-net=${api}); ${rebuild}`,
    ],
    [
      "MESSAGES_FILE",
      { name: "write", path: config.messagesFile },
      `"MESSAGES_FILE": this build may not write ${config.messagesFile} ` +
      `(--allow-write=${config.messagesFile}); ${rebuild}`,
    ],
  ];
  for (const verify of verifyAddresses(config)) {
    needs.push([
      "TURNSTILE_VERIFY_URL",
      { name: "net", host: verify },
      `"TURNSTILE_VERIFY_URL": this build may not connect to ${verify} (--allow-net=${verify}); ` +
      `build with CHALLENGE=turnstile (deno task compile) or change it back`,
    ]);
  }
  const mail = mailAddresses(config)[0];
  if (mail !== undefined) {
    needs.push([
      "SMTP_URL",
      { name: "net", host: mail },
      `"SMTP_URL": this build may not connect to ${mail} (--allow-net=${
        mailAddresses(config).join(",")
      }); ${rebuild}`,
    ]);
  }
  if (config.serveExample) {
    // A binary is never built with the page's read permission (compile ignores SERVE_EXAMPLE):
    // rebuilding cannot help, so the hint names what can.
    needs.push([
      "SERVE_EXAMPLE",
      { name: "read", path: examplePagePath() },
      `"SERVE_EXAMPLE": a binary does not serve the example page; ` +
      "unset it, or try the form with deno task start",
    ]);
  }
  return needs.filter(([, permission]) => !granted(permission))
    .map(([setting, , message]) => ({ setting, message }));
}

/**
 * One line for an error that a missing permission caused, naming what to grant; `undefined`
 * for any other error. `NotCapable` is Deno refusing (a flag is missing); `PermissionDenied` is
 * the operating system refusing (a file's owner or mode).
 */
export function permissionLine(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const first = error.message.split("\n")[0]!.slice(0, 300);
  if (error instanceof Deno.errors.NotCapable) {
    const match = /Requires (\w+) access to "([^"]*)"/.exec(first);
    const refused = _refusal(error);
    const kind = match?.[1];
    const grant = kind === "env"
      ? `--allow-env=${ENV_NAMES}`
      : kind === undefined
      ? "the permission it names"
      : `--allow-${kind}${match?.[2] ? `=${match[2]}` : ""}`;
    return `contactd: not permitted: ${refused}; grant ${grant} ` +
      "(from a checkout: deno task contactd <command> grants what the settings need)";
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return `contactd: the system refused access: ${first}; check the owner and mode of the file`;
  }
  return undefined;
}

/**
 * Deno's own advice after a refusal ("run again with the --allow-write flag", "specify the
 * required permissions during compilation", "--allow-all"): contactd gives its own instead.
 */
const DENO_ADVICE =
  /(?:,?\s*(?:run again with|specify the required permissions)|,[^,]*--allow-all).*$/i;

/** The first line of a refusal's message without Deno's advice, at most 200 characters. */
function _refusal(error: Error): string {
  return error.message.split("\n")[0]!.replace(DENO_ADVICE, "").slice(0, 200);
}

/**
 * The `error` and `hint` of a log line about a file of `MESSAGES_FILE` (the backup file, the
 * outbox beside it) that could not be opened: the error as `describeError` gives it, without
 * Deno's advice (to grant more, or everything), and contactd's own advice for a refusal.
 */
export function fileOpenFailure(error: unknown, file: string): Record<string, string> {
  const described = describeError(error).replace(DENO_ADVICE, "");
  if (error instanceof Deno.errors.NotCapable) {
    return {
      error: described,
      hint: `${file} is outside what this contactd may use: from a checkout, deno task start ` +
        "grants what MESSAGES_FILE names (run it that way, not deno run); a binary keeps the " +
        "MESSAGES_FILE it was built with (build again with deno task compile, or set it back)",
    };
  }
  if (/symbolic link/i.test(described)) {
    // contactd's own refusal (lib/storage/file_system.ts), not the system's: no mode helps.
    return {
      error: described,
      hint: `${file} is a symbolic link (or was replaced by one): contactd refuses links for ` +
        "its files; put the real file there, or point MESSAGES_FILE at the real location",
    };
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return {
      error: described,
      hint: `the system refused access: make the directory of ${file} writable by the user ` +
        "running contactd, and the file owned by that user with mode 0600",
    };
  }
  return { error: described };
}

/**
 * The fields of `listen_failed`: the address it could not listen on, the error, and what to do
 * when the port is taken or the address is not this host's.
 */
export function listenFailure(error: unknown, host: string, port: number): Record<string, string> {
  const address = netAddress(host, port);
  const described = describeError(error).replace(DENO_ADVICE, "");
  const hint = error instanceof Deno.errors.AddrInUse
    ? `another process listens on ${address} (another contactd?): stop it, or set PORT to a free port`
    : error instanceof Deno.errors.AddrNotAvailable
    ? `${host} is not an address of this host: set HOST to one of its addresses (127.0.0.1)`
    : error instanceof Deno.errors.NotCapable
    ? `this contactd may not listen on ${address}: ${"from a checkout use deno task start; a binary listens where it was built to"}`
    : error instanceof Deno.errors.PermissionDenied
    ? `the system refused port ${port} (below 1024 needs privileges): use a port above 1023`
    : undefined;
  return { address, error: described, ...(hint === undefined ? {} : { hint }) };
}
