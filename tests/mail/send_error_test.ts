import assert from "node:assert/strict";
import { classifySendError, MailSendError } from "../../lib/mail/send_error.ts";

const smtp = (fields: Record<string, unknown>) => Object.assign(new Error("smtp"), fields);

Deno.test("a 5xx to the recipient or to the message is permanent; its reason keeps codes only", () => {
  const rcpt = classifySendError(smtp({
    code: "EENVELOPE",
    responseCode: 550,
    command: "RCPT TO",
    response: "550 5.1.1 <carla@example.org>: Recipient address rejected",
  }));
  assert.deepEqual([rcpt.kind, rcpt.reason], [
    "permanent",
    "mail server refused the recipient (550 5.1.1)",
  ]);
  const data = classifySendError(smtp({ code: "EMESSAGE", responseCode: 554, command: "DATA" }));
  assert.deepEqual([data.kind, data.reason], [
    "permanent",
    "mail server refused the message (554)",
  ]);
});

Deno.test("4xx, a refused MAIL FROM, a refused login and TLS failures are retried", () => {
  for (
    const fields of [
      { code: "EENVELOPE", responseCode: 451, command: "RCPT TO" },
      { code: "EENVELOPE", responseCode: 550, command: "MAIL FROM" },
      { code: "EAUTH", responseCode: 535, command: "AUTH PLAIN" },
      { code: "ETLS" },
      { code: "ESOCKET", message: "unable to verify the first certificate" },
      { code: "EPROTOCOL", responseCode: 421 },
    ]
  ) {
    assert.equal(classifySendError(smtp(fields)).kind, "temporary", JSON.stringify(fields));
  }
});

Deno.test("connection failures (refused, DNS, timeout, socket) are 'mail server unreachable'", () => {
  for (const code of ["ECONNECTION", "ETIMEDOUT", "EDNS", "ESOCKET", "ECONNREFUSED"]) {
    const error = classifySendError(smtp({ code }));
    assert.deepEqual([error.kind, error.reason], ["unreachable", "mail server unreachable"]);
  }
  assert.equal(classifySendError(new TypeError("connection refused")).kind, "unreachable");
  assert.equal(classifySendError("odd").kind, "unreachable");
});

Deno.test("a reason never carries the server's text (it may quote the address or a password)", () => {
  const error = classifySendError(smtp({
    code: "EAUTH",
    responseCode: 535,
    response: "535 5.7.8 authentication failed for user with password hunter2",
    message: "Invalid login: hunter2",
  }));
  assert.equal(error.reason, "mail server refused the login (535 5.7.8)");
  assert.equal(error.message.includes("hunter2"), false);
  const kept = new MailSendError("temporary", "x");
  assert.equal(classifySendError(kept), kept);
});

Deno.test("a certificate that cannot be verified is a TLS failure, not an unreachable server", () => {
  const error = classifySendError(smtp({ code: "ESOCKET", message: "self-signed certificate" }));
  assert.deepEqual([error.kind, error.reason], ["temporary", "TLS with the mail server failed"]);
});
