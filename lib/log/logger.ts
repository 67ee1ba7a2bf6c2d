/**
 * Structured logs: one JSON object per line, secrets redacted from the whole line.
 *
 * @module
 */
import { redactor } from "./redact.ts";

/** Severity; `error` and `warn` go to stderr. */
export type LogLevel = "info" | "warn" | "error";

/** What a log line may carry. Never message text, name, contact or token. */
export interface LogFields {
  /** Short machine name of what happened, e.g. `contact`. */
  readonly event: string;
  readonly [key: string]: string | number | boolean | null | undefined;
}

/** Writes one structured log line. */
export type Logger = (level: LogLevel, fields: LogFields) => void;

/**
 * Builds a logger. `write` receives whole lines (with `\n`); `secrets` are redacted from them,
 * so even an error text that quotes a request URL cannot leak the token.
 */
export function createLogger(
  write: (line: string, level: LogLevel) => void,
  now: () => Date,
  secrets: readonly string[] = [],
): Logger {
  const scrubs = secrets.map(redactor);
  return (level, fields) => {
    let line = JSON.stringify({ time: now().toISOString(), level, ...fields });
    for (const scrub of scrubs) line = scrub(line);
    write(line + "\n", level);
  };
}

/** The settings whose values no log line may carry (besides every form of the token). */
export const SECRET_SETTINGS = [
  "MESSENGER_BOT_TOKEN",
  "CHALLENGE_SECRET",
  "SMTP_PASSWORD",
] as const;

/**
 * The logger of a contactd process (the service and its launcher): timestamps from `now`, and
 * the values of {@linkcode SECRET_SETTINGS} in `settings` (trimmed, as parsing reads them)
 * redacted from every line, valid or not.
 */
export function settingsLogger(
  settings: Readonly<Record<string, string | undefined>>,
  write: (line: string, level: LogLevel) => void,
  now: () => Date = () => new Date(),
): Logger {
  const secrets = [
    ...SECRET_SETTINGS.map((name) => settings[name]?.trim() ?? ""),
    ...urlPassword(settings.SMTP_URL?.trim()),
  ].filter((value) => value !== "");
  return createLogger(write, now, secrets);
}

/**
 * The password in a URL such as `SMTP_URL`, as written and decoded, read as lib/config reads it
 * (the WHATWG URL parser); none when it has none or is no URL.
 */
function urlPassword(text: string | undefined): string[] {
  if (text === undefined || !URL.canParse(text)) return [];
  const raw = new URL(text).password;
  if (raw === "") return [];
  try {
    return [raw, decodeURIComponent(raw)];
  } catch {
    return [raw];
  }
}

/** Describes an unknown thrown value for a log line (name and message only, redacted later). */
export function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.slice(0, 500);
  return String(error).slice(0, 500);
}
