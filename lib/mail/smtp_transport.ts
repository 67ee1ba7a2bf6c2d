/**
 * The mail relay, through nodemailer (pinned in deno.json): one connection per message (replies
 * are few), `smtps://` TLS from the first byte, `smtp://` STARTTLS required (`requireTLS`)
 * unless the relay is on loopback, where it is used when offered; certificates verified against
 * the relay's name as `SMTP_URL` gives it. The EHLO name is given (`name`), so nodemailer never
 * asks the system for its host name (no `--allow-sys`). A failure rejects with a `MailSendError`
 * (lib/mail/send_error.ts) whose text is contactd's own: never the server's words, never the
 * password.
 *
 * contactd opens the TCP connection itself, by the name or address `SMTP_URL` gives
 * (`node:net` `connect({ host, port })`, which Deno checks as that `host:port`), and hands it to
 * nodemailer (its `getSocket` option), which then does no DNS lookup of its own and, for
 * `smtps://`, starts TLS over that socket with the relay's name as the TLS server name. So the
 * only `--allow-net` entry sending needs is the relay's `host:port` (lib/config/permissions.ts
 * `mailNetAddresses`).
 *
 * @module
 */
import net from "node:net";
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
  /** Opens the TCP connection to the relay; `node:net` `connect` unless set (tests). */
  readonly connect?: SmtpConnect;
}

/** Opens a TCP connection to `host:port` (not yet connected when returned), as `node:net`. */
export type SmtpConnect = (host: string, port: number) => net.Socket;

/** `node:net`'s `connect` by name or address: Deno checks it as `host:port`, nothing else. */
const _netConnect: SmtpConnect = (host, port) => net.connect({ host, port });

/** A transport the reply sender uses; `close` ends any connection. */
export interface SmtpTransport {
  send(message: SendMailOptions): Promise<void>;
  /**
   * Connects and says hello as a send would (EHLO, STARTTLS or TLS, the login), sending nothing
   * (`contactd check`); rejects like `send`, with a `MailSendError`.
   */
  verify(): Promise<void>;
  close(): void;
}

/**
 * nodemailer's transport options for `options` (pure): `smtps://` is `secure`; `smtp://` has
 * `requireTLS` (no STARTTLS offered, or it fails: the message is not sent, so neither the
 * password nor the reply crosses the network in clear) unless the relay is on loopback; the EHLO
 * `name` given; no logger; no file or URL access; the connection opened by `getSocket`
 * ({@linkcode openSmtpSocket}), so nodemailer resolves no name itself.
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
    getSocket: (_, callback) =>
      openSmtpSocket(server, timeout, options.connect ?? _netConnect).then(
        (connection) => callback(null, { connection }),
        (error) => callback(error),
      ),
    logger: false,
    debug: false,
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/**
 * A connected socket to `server`, opened by `connect` with the host as `SMTP_URL` names it; it
 * rejects with the socket's error (`ECONNREFUSED`, `ENOTFOUND`, …) or, after `timeoutMs`, with
 * an `ETIMEDOUT` one, the socket destroyed. nodemailer's own connection timeout does not cover
 * a socket it is given while it is being opened, hence this one.
 */
export function openSmtpSocket(
  server: { readonly host: string; readonly port: number },
  timeoutMs: number,
  connect: SmtpConnect,
): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.host, server.port);
    const settle = (error?: Error) => {
      clearTimeout(timer);
      socket.off("connect", onConnect);
      socket.off("error", onError);
      if (error === undefined) return resolve(socket);
      socket.destroy();
      reject(error);
    };
    const onConnect = () => settle();
    const onError = (error: Error) => settle(error);
    const timer = setTimeout(
      () => settle(Object.assign(new Error("connection timeout"), { code: "ETIMEDOUT" })),
      timeoutMs,
    );
    socket.once("connect", onConnect);
    socket.once("error", onError);
  });
}

/** The SMTP transport for `options.server`; see the module documentation. */
export function smtpTransport(options: SmtpTransportOptions): SmtpTransport {
  const { server } = options;
  const mailer = nodemailer.createTransport(smtpTransportOptions(options));
  /** A failure as contactd's own text; scrubbed anyway, should a password ever be in it. */
  const failed = (error: unknown) => {
    const failure = classifySendError(error);
    const password = server.password;
    return password === undefined || password === "" || !failure.reason.includes(password)
      ? failure
      : new MailSendError(failure.kind, failure.reason.replaceAll(password, "[redacted]"));
  };
  return {
    async send(message) {
      try {
        await mailer.sendMail(message);
      } catch (error) {
        throw failed(error);
      }
    },
    async verify() {
      try {
        await mailer.verify();
      } catch (error) {
        throw failed(error);
      }
    },
    close: () => mailer.close(),
  };
}
