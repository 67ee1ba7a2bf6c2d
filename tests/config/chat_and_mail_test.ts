import assert from "node:assert/strict";
import { ConfigError, parseConfig, parseSmtpServer } from "../../lib/config/config.ts";
import { mailNetAddresses, permissionGaps, serviceFlags } from "../../lib/config/permissions.ts";
import { settingsLogger } from "../../lib/log/logger.ts";

function refused(env: Record<string, string>, setting: string): ConfigError {
  try {
    parseConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.setting, setting);
    return error;
  }
  throw new Error("accepted");
}

Deno.test("chat actions are on by default for members, spam blocks last 30 days, replies by email are off", () => {
  const config = parseConfig({});
  assert.deepEqual(config.chatActions, { enabled: true, by: "members" });
  assert.equal(config.spamBlockMs, 30 * 86_400_000);
  assert.equal(config.mail, undefined);
  assert.deepEqual(config.replyLimit, { limit: 20, windowMs: 3_600_000 });
});

Deno.test("CHAT_ACTIONS takes 1 or 0, CHAT_ACTIONS_BY members or admins, SPAM_BLOCK_FOR a duration", () => {
  const config = parseConfig({
    CHAT_ACTIONS: "0",
    CHAT_ACTIONS_BY: "Admins",
    SPAM_BLOCK_FOR: "12h",
  });
  assert.deepEqual(config.chatActions, { enabled: false, by: "admins" });
  assert.equal(config.spamBlockMs, 12 * 3_600_000);
  refused({ CHAT_ACTIONS: "on" }, "CHAT_ACTIONS");
  refused({ CHAT_ACTIONS_BY: "owner" }, "CHAT_ACTIONS_BY");
  refused({ SPAM_BLOCK_FOR: "forever" }, "SPAM_BLOCK_FOR");
  refused({ REPLY_LIMIT: "1000/1h" }, "REPLY_LIMIT");
});

Deno.test("SMTP_URL names the mail server: STARTTLS on 587 or TLS on 465 by default, credentials from the URL or their settings", () => {
  const mail = parseConfig({
    SMTP_URL: "smtp://relay%40site:p%40ss@mail.example.org",
    REPLY_FROM: "site@example.org",
  }).mail;
  assert.deepEqual(mail, {
    secure: false,
    host: "mail.example.org",
    port: 587,
    user: "relay@site",
    password: "p@ss",
    from: "site@example.org",
  });
  const tls = parseConfig({
    SMTP_URL: "smtps://[::1]",
    SMTP_USER: "u",
    SMTP_PASSWORD: "secret",
    REPLY_FROM: "site@example.org",
    REPLY_TO: "owner@example.org",
  }).mail;
  assert.equal(tls?.secure, true);
  assert.equal(tls?.host, "::1");
  assert.equal(tls?.port, 465);
  assert.equal(tls?.password, "secret");
  assert.equal(tls?.replyTo, "owner@example.org");
  assert.deepEqual(parseSmtpServer("smtp://127.0.0.1:2525").port, 2525);
});

Deno.test("a malformed mail setting is refused by name, never echoing a password", () => {
  const from = { REPLY_FROM: "site@example.org" };
  const bad = refused({ SMTP_URL: "http://user:hunter2@mail.example.org", ...from }, "SMTP_URL");
  assert.ok(!bad.message.includes("hunter2"));
  refused({ SMTP_URL: "smtp://mail.example.org/path", ...from }, "SMTP_URL");
  refused({ SMTP_URL: "smtp://mail.example.org" }, "REPLY_FROM");
  refused(
    { SMTP_URL: "smtp://mail.example.org", REPLY_FROM: "Site <site@example.org>" },
    "REPLY_FROM",
  );
  refused(
    { SMTP_URL: "smtp://mail.example.org", ...from, REPLY_TO: "a@b.org, c@d.org" },
    "REPLY_TO",
  );
  refused({ SMTP_URL: "smtp://mail.example.org", ...from, SMTP_PASSWORD: "x" }, "SMTP_PASSWORD");
  refused({ REPLY_FROM: "site@example.org" }, "REPLY_FROM");
});

Deno.test("the service may connect to the mail server's host and port, and nothing more for mail", () => {
  const config = parseConfig({ SMTP_URL: "smtp://127.0.0.1:2525", REPLY_FROM: "site@example.org" });
  const net = serviceFlags(config).find((flag) => flag.startsWith("--allow-net="))!;
  assert.ok(net.split("=")[1]!.split(",").includes("127.0.0.1:2525"), net);
  assert.ok(!serviceFlags(parseConfig({})).join(" ").includes("2525"));
  const gaps = permissionGaps(
    config,
    (permission) => !(permission.name === "net" && permission.host === "127.0.0.1:2525"),
  );
  assert.deepEqual(gaps.map((gap) => gap.setting), ["SMTP_URL"]);
});

Deno.test("the mail server's password never reaches a log line, from SMTP_PASSWORD or from SMTP_URL", () => {
  const lines: string[] = [];
  const log = settingsLogger(
    { SMTP_URL: "smtp://u:p%24ssword1@mail.example.org", SMTP_PASSWORD: "other-secret-9" },
    (line) => void lines.push(line),
  );
  log("error", {
    event: "x",
    error: "auth failed for p$ssword1 and p%24ssword1 and other-secret-9",
  });
  assert.ok(!/p\$ssword1|p%24ssword1|other-secret-9/.test(lines.join("")), lines.join(""));
});

Deno.test("the net permission names the relay's host and port as SMTP_URL gives them, nothing wider", () => {
  assert.deepEqual(mailNetAddresses({ host: "192.0.2.25", port: 587 }), ["192.0.2.25:587"]);
  assert.deepEqual(mailNetAddresses({ host: "2001:db8::25", port: 465 }), ["[2001:db8::25]:465"]);
  assert.deepEqual(mailNetAddresses({ host: "mail.example.org", port: 587 }), [
    "mail.example.org:587",
  ]);
});

Deno.test("a password with an @ in SMTP_URL is redacted whole, and nothing else is", () => {
  const lines: string[] = [];
  const log = settingsLogger(
    { SMTP_URL: "smtp://user:p@ss@mail.example.org" },
    (line) => void lines.push(line),
  );
  log("error", { event: "x", error: "auth failed with p@ss and p%40ss; a plain p stays" });
  const text = lines.join("");
  assert.ok(!text.includes("p@ss") && !text.includes("p%40ss"), text);
  assert.ok(text.includes("a plain p stays"), text);
});
