/**
 * Sends one reply through lib/mail/smtp_transport.ts and prints the outcome as one JSON line:
 * run by tests/e2e/mail_server_test.ts under `deno run` with only the permission flags
 * `mailNetAddresses` names, to show they are enough. Arguments: SMTP_URL, then the reply's
 * settings and draft as JSON (`{settings, draft}`).
 *
 * @module
 */
import { composeReply } from "../../lib/mail/message.ts";
import { MailSendError } from "../../lib/mail/send_error.ts";
import { smtpServer } from "../support/smtp_server.ts";
import { smtpTransport } from "../../lib/mail/smtp_transport.ts";

const [url = "", json = "{}"] = Deno.args;
const { settings, draft } = JSON.parse(json);
const transport = smtpTransport({ server: smtpServer(url), name: "contactd.test" });
try {
  await transport.send(composeReply(settings, draft));
  console.log(JSON.stringify({ ok: true }));
} catch (error) {
  console.log(JSON.stringify(
    error instanceof MailSendError
      ? { ok: false, kind: error.kind, reason: error.reason, message: error.message }
      : { ok: false, kind: "other", message: String(error) },
  ));
} finally {
  transport.close();
}
