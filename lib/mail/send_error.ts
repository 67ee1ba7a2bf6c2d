/**
 * Why a mail was not sent, in the few kinds the reply sender acts on: the recipient or message
 * refused for good (a 5xx answer to `RCPT TO` or to the message: given up at once), the mail
 * server unreachable (connection, DNS, timeout: retried), or any other failure (4xx, TLS, login:
 * retried). The reason is a short text contactd writes itself: an SMTP code and its enhanced
 * status at most, never the server's text (it may quote the address), never a password.
 *
 * @module
 */

/** How a failed send is treated: `permanent` is given up at once, the others are retried. */
export type SendFailureKind = "permanent" | "unreachable" | "temporary";

/** A failed send, as a transport reports it (`send` rejects with it). */
export class MailSendError extends Error {
  override readonly name = "MailSendError";

  constructor(
    /** What the sender does with it. */
    readonly kind: SendFailureKind,
    /** A short reason for the chat and the log, e.g. `mail server unreachable`. */
    readonly reason: string,
  ) {
    super(reason);
  }
}

/** The parts of a nodemailer error (`NodemailerError`) that decide its kind. */
export interface SmtpErrorParts {
  /** nodemailer's code: `ECONNECTION`, `ETIMEDOUT`, `EDNS`, `ESOCKET`, `ETLS`, `EAUTH`, `EENVELOPE`, `EMESSAGE`, … */
  readonly code?: unknown;
  /** The SMTP reply code, when the server answered. */
  readonly responseCode?: unknown;
  /** The server's reply line (only its enhanced status code is kept). */
  readonly response?: unknown;
  /** The SMTP command it answered (`RCPT TO`, `DATA`, `MAIL FROM`, `AUTH PLAIN`, …). */
  readonly command?: unknown;
}

const _UNREACHABLE = new Set([
  "ECONNECTION",
  "ETIMEDOUT",
  "EDNS",
  "ESOCKET",
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EPIPE",
]);

/**
 * The {@linkcode MailSendError} for a nodemailer error (any thrown value): a 5xx reply to the
 * recipient (`EENVELOPE`, `RCPT TO`) or to the message (`EMESSAGE`, `DATA`) is `permanent`; a
 * connection failure is `unreachable`; anything else (4xx, TLS, a refused login, a 5xx to
 * `MAIL FROM`, which is the relay's setting, not the recipient) is `temporary`; a certificate
 * that cannot be verified is a TLS failure, not an unreachable server.
 */
export function classifySendError(error: unknown): MailSendError {
  if (error instanceof MailSendError) return error;
  const parts: SmtpErrorParts = typeof error === "object" && error !== null ? error : {};
  const code = typeof parts.code === "string" ? parts.code : "";
  const reply = typeof parts.responseCode === "number" && Number.isInteger(parts.responseCode)
    ? parts.responseCode
    : undefined;
  const command = typeof parts.command === "string" ? parts.command.toUpperCase() : "";
  const status = _enhancedStatus(parts.response);
  const said = reply === undefined ? "" : ` (${reply}${status === undefined ? "" : ` ${status}`})`;
  if (reply !== undefined && reply >= 500 && reply < 600) {
    if ((code === "EENVELOPE" && !command.startsWith("MAIL")) || command.startsWith("RCPT")) {
      return new MailSendError("permanent", `mail server refused the recipient${said}`);
    }
    if (code === "EMESSAGE" || command === "DATA" || command.startsWith("BDAT")) {
      return new MailSendError("permanent", `mail server refused the message${said}`);
    }
  }
  if (code === "EAUTH") {
    return new MailSendError("temporary", `mail server refused the login${said}`);
  }
  const message = error instanceof Error ? error.message : "";
  if (code === "ETLS" || (code === "ESOCKET" && /certificate|tls|ssl/i.test(message))) {
    return new MailSendError("temporary", "TLS with the mail server failed");
  }
  if (_UNREACHABLE.has(code) || (reply === undefined && code === "")) {
    return new MailSendError("unreachable", "mail server unreachable");
  }
  return new MailSendError("temporary", `mail server failed${said}`);
}

/** `5.1.1` from `550 5.1.1 <carla@example.org>: no such user`, or `undefined`. */
function _enhancedStatus(response: unknown): string | undefined {
  if (typeof response !== "string") return undefined;
  return /^\d{3}[ -]([245]\.\d{1,3}\.\d{1,3})\b/.exec(response)?.[1];
}
