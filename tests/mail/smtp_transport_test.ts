import assert from "node:assert/strict";
import net from "node:net";
import { smtpServer } from "../support/smtp_server.ts";
import {
  openSmtpSocket,
  smtpTransport,
  smtpTransportOptions,
} from "../../lib/mail/smtp_transport.ts";
import { classifySendError, MailSendError } from "../../lib/mail/send_error.ts";

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

Deno.test("the connection is opened by contactd, to the host and port as SMTP_URL names them", async () => {
  const opened: [string, number][] = [];
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const transport = smtpTransport({
    server: smtpServer("smtps://mail.example.org:465"),
    name: "example.org",
    // Refused at once: a loopback port nobody listens on.
    connect: (host, p) => (opened.push([host, p]), net.connect({ host: "127.0.0.1", port })),
  });
  try {
    const error = await transport.send({ from: "a@example.org", to: "b@example.org", text: "x" })
      .then(() => undefined, (e) => e);
    assert.deepEqual(opened, [["mail.example.org", 465]]);
    assert.ok(error instanceof MailSendError);
    assert.deepEqual([error.kind, error.message], ["unreachable", "mail server unreachable"]);
  } finally {
    transport.close();
  }
});

Deno.test("a connection not made within the time limit is given up and its socket destroyed", async () => {
  const socket = new net.Socket(); // never connects
  const error = await openSmtpSocket({ host: "mail.example.org", port: 587 }, 1, () => socket)
    .then(() => undefined, (e) => e);
  assert.equal(error?.code, "ETIMEDOUT");
  assert.equal(socket.destroyed, true);
  assert.equal(classifySendError(error).reason, "mail server unreachable");
});

Deno.test("a connected socket is handed over with no listener of contactd's left on it", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  try {
    const socket = await openSmtpSocket(
      { host: "127.0.0.1", port },
      5000,
      (host, p) => net.connect({ host, port: p }),
    );
    assert.deepEqual([socket.listenerCount("error"), socket.listenerCount("connect")], [0, 0]);
    assert.equal(socket.remotePort, port);
    socket.destroy();
    (await listener.accept()).close();
  } finally {
    listener.close();
  }
});
