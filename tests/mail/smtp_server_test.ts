import assert from "node:assert/strict";
import { isLoopbackHost } from "../../lib/mail/smtp_server.ts";

Deno.test("only a relay on this machine may skip STARTTLS", () => {
  assert.equal(isLoopbackHost("127.0.0.1"), true);
  assert.equal(isLoopbackHost("::1"), true);
  assert.equal(isLoopbackHost("localhost"), true);
  assert.equal(isLoopbackHost("10.0.0.25"), false);
  assert.equal(isLoopbackHost("mail.example.org"), false);
});
