import assert from "node:assert/strict";
import { smtpServer } from "../support/smtp_server.ts";
import { smtpTransport, smtpTransportOptions } from "../../lib/mail/smtp_transport.ts";
import { MailSendError } from "../../lib/mail/send_error.ts";

const options = (url: string) =>
  smtpTransportOptions({ server: smtpServer(url), name: "example.org" });

Deno.test("smtp:// requires STARTTLS unless the relay is on loopback; smtps:// is TLS at once", () => {
  assert.deepEqual(
    [options("smtp://mail.example.org").secure, options("smtp://mail.example.org").requireTLS],
    [false, true],
  );
  assert.equal(options("smtp://10.0.0.25:25").requireTLS, true);
  assert.equal(options("smtp://127.0.0.1:25").requireTLS, false);
  assert.deepEqual(
    [options("smtps://mail.example.org").secure, options("smtps://mail.example.org").requireTLS],
    [true, false],
  );
});

Deno.test("the EHLO name is given, so nodemailer never asks the system for its host name", () => {
  assert.equal(options("smtp://mail.example.org").name, "example.org");
});

Deno.test("nodemailer logs nothing, reads no file or URL; the login is passed only when set", () => {
  const plain = options("smtps://mail.example.org");
  assert.deepEqual([plain.logger, plain.debug, plain.auth], [false, false, undefined]);
  assert.deepEqual([plain.disableFileAccess, plain.disableUrlAccess], [true, true]);
  assert.deepEqual(options("smtps://u:p@mail.example.org").auth, { user: "u", pass: "p" });
});

Deno.test("a relay that cannot be reached rejects with 'mail server unreachable'", async () => {
  // A loopback port nobody listens on: connection refused at once.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const transport = smtpTransport({
    server: smtpServer(`smtp://u:hunter2-secret@127.0.0.1:${port}`),
    name: "example.org",
  });
  try {
    const error = await transport.send({ from: "a@example.org", to: "b@example.org", text: "x" })
      .then(() => undefined, (e) => e);
    assert.ok(error instanceof MailSendError);
    assert.deepEqual([error.kind, error.message], ["unreachable", "mail server unreachable"]);
    assert.equal(String(error.stack).includes("hunter2"), false);
  } finally {
    transport.close();
  }
});
