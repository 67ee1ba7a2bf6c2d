/**
 * A mail server URL read as the service reads it, for the mail tests (and their child scripts,
 * which hold only `--allow-net`: this module reads no environment and no file).
 *
 * @module
 */
import { type Config, parseConfig } from "../../lib/config/config.ts";

/** `url`'s mail server as lib/config/config.ts reads it (with a `REPLY_FROM` given). */
export function smtpServer(url: string): NonNullable<Config["mail"]> {
  return parseConfig({ SMTP_URL: url, REPLY_FROM: "site@example.org" }).mail!;
}
