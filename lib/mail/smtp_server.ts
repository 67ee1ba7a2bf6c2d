/**
 * The mail relay replies go through, as the transport takes it: `SMTP_URL` and its companions as
 * lib/config/config.ts reads them (`MailConfig`), and whether the relay is on this machine.
 *
 * @module
 */

/** The mail relay replies go through. */
export interface SmtpServer {
  /** `smtps://`: TLS from the first byte. */
  readonly secure: boolean;
  /** A name or an IP address (an IPv6 one without brackets). */
  readonly host: string;
  readonly port: number;
  readonly user?: string | undefined;
  readonly password?: string | undefined;
}

/** Whether the relay is on this machine (then `smtp://` may go without STARTTLS). */
export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** The EHLO name for mail from `address`: its domain (the host part of `REPLY_FROM`). */
export function ehloName(address: string): string {
  return address.slice(address.lastIndexOf("@") + 1);
}
