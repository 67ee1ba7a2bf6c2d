/**
 * The mail relay, through nodemailer (pinned in deno.json): one connection per message (replies
 * are few), `smtps://` TLS from the first byte, `smtp://` STARTTLS required (`requireTLS`)
 * unless the relay is on loopback, where it is used when offered; certificates verified. The
 * EHLO name is given (`name`), so nodemailer never asks the system for its host name (no
 * `--allow-sys`). A failure rejects with a `MailSendError` (lib/mail/send_error.ts) whose text is
 * contactd's own: never the server's words, never the password.
 *
 * @module
 */
import nodemailer, { type SendMailOptions, type SMTPTransportOptions } from "nodemailer";
import { classifySendError, MailSendError } from "./send_error.ts";
import { isLoopbackHost, type SmtpServer } from "./smtp_server.ts";

/** Time limits of one send's phases (connect, greeting, each reply), in ms. */
export const SMTP_TIMEOUT_MS = 30_000;

/** What {@linkcode smtpTransport} needs. */
export interface SmtpTransportOptions {
  /** From `parseSmtpUrl` (lib/mai./smtp_server.ts). */
  readonly server: SmtpServer;
  /** The EHLO name: the host part of `REPLY_FROM` is a good one. */
  readonly name: string;
  /** {@linkcode SMTP_TIMEOUT_MS} unless set. */
  readonly timeoutMs?: number;
}

/** A transport the reply sender uses; `close` ends any connection. */
export interface SmtpTransport {
  send(message: SendMailOptions): Promise<void>;
  close(): void;
}

/**
 * nodemailer's transport options for `options` (pure): `smtps://` is `secure`; `smtp://` has
 * `requireTLS` (no STARTTLS offered, or it fails: the message is not sent, so neither the
 * password nor the reply crosses the network in clear) unless the relay is on loopback; the EHLO
 * `name` given; no logger; no file or URL access.
 */
export function smtpTransportOptions(options: SmtpTransportOptions): SMTPTransportOptions {
  const { server } = options;
  const timeout = options.timeoutMs ?? SMTP_TIMEOUT_MS;
  return {
    host: server.host,
    port: server.port,
    secure: server.secure,
    requireTLS: !server.secure && !isLoopbackHost(server.host),
    name: options.name,
    ...(server.user === undefined ? {} : {
      auth: { user: server.user, pass: server.password ?? "" },
    }),
    connectionTimeout: timeout,
    greetingTimeout: timeout,
    socketTimeout: timeout,
    dnsTimeout: timeout,
    logger: false,
    debug: false,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/** The SMTP transport for `options.server`; see the module documentation. */
export function smtpTransport(options: SmtpTransportOptions): SmtpTransport {
  const { server } = options;
  const mailer = nodemailer.createTransport(smtpTransportOptions(options));
  return {
    async send(message) {
      try {
        await mailer.sendMail(message);
      } catch (error) {
        const failure = classifySendError(error);
        // The reason is contactd's own text; scrubbed anyway, should a password ever be in it.
        const password = server.password;
        throw password === undefined || password === "" || !failure.reason.includes(password)
          ? failure
          : new MailSendError(failure.kind, failure.reason.replaceAll(password, "[redacted]"));
      }
    },
    close: () => mailer.close(),
  };
}
