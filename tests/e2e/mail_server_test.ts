/**
 * Replies through a real mail server (Debian's Exim on loopback, tests/support/mail_server.ts):
 * the transport under `deno run` with only the `--allow-net` entry `mailNetAddresses` names,
 * the headers and quoted message as delivered, a recipient refused for good, and the server down
 * for a while, then up: the reply delivered once.
 */
import assert from "node:assert/strict";
import { composeReply, type ReplyDraft, type ReplySettings } from "../../lib/mail/message.ts";
import { type ReplyOutcome, startReplySender } from "../../lib/mail/reply_sender.ts";
import { openReplyStore } from "../../lib/mail/reply_store.ts";
import { MailSendError } from "../../lib/mail/send_error.ts";
import { mailNetAddresses } from "../../lib/config/permissions.ts";
import { smtpTransport } from "../../lib/mail/smtp_transport.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import { databasePath, openLocalStore } from "../../lib/storage/store.ts";
import {
  MAIL_SERVER_PASSWORD,
  MAIL_SERVER_USER,
  skipWithoutMailServer,
  skipWithoutOpenssl,
  startMailServer,
} from "../support/mail_server.ts";
import { smtpServer } from "../support/smtp_server.ts";
import { runCli } from "../../lib/cli/cli.ts";
import type { Settings } from "../../lib/config/settings.ts";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { CHAT_ID, TOKEN } from "../support/service.ts";
import { fakeCliIo } from "../cli/_cli_io.ts";

const ignore = skipWithoutMailServer();
const ignoreTls = ignore || skipWithoutOpenssl();

const SETTINGS: ReplySettings = {
  from: "site@example.org",
  fromName: "Bakery Rossi",
  replyTo: "owner@example.org",
};
const DRAFT: ReplyDraft = {
  to: "carla@example.org",
  subject: "Re: Opening hours: ünïcode",
  text: "Hello Carla,\nwe open at nine.",
  quoted: { ts: "2026-11-22T14:03:09Z", message: "When do you open?\nThanks" },
};

/** The header `name` of a raw message, unfolded and RFC 2047-decoded when it is one word. */
function header(message: string, name: string): string | undefined {
  const head = message.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) =>
    l.toLowerCase().startsWith(`${name.toLowerCase()}:`)
  );
  const value = line?.slice(name.length + 1).trim();
  return value?.replace(
    /=\?utf-8\?Q\?([^?]*)\?=/gi,
    (_, text: string) =>
      new TextDecoder().decode(Uint8Array.from(
        text.replace(/_/g, " ").replace(
          /=([0-9A-F]{2})/gi,
          (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)),
        ),
        (c) => c.charCodeAt(0),
      )),
  ).replace(/\?= =\?/g, "");
}

function bodyOf(message: string): string {
  const body = message.split(/\r?\n\r?\n/).slice(1).join("\n\n");
  return body.replace(/=\r?\n/g, "").replace(/\r\n/g, "\n");
}

/** Runs tests/mail/_smtp_send.ts under `deno run --no-prompt` with exactly `allowNet`. */
async function sendInChild(
  url: string,
  allowNet: string[],
  draft = DRAFT,
  env: Record<string, string> = {},
) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      `--allow-net=${allowNet.join(",")}`,
      new URL("../mail/_smtp_send.ts", import.meta.url).pathname,
      url,
      JSON.stringify({ settings: SETTINGS, draft }),
    ],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

Deno.test({
  name: "a reply reaches the mailbox through the relay, with its headers and the quoted message",
  ignore,
  async fn() {
    const server = await startMailServer();
    try {
      const url = `smtp://${server.host}:${server.port}`;
      const flags = mailNetAddresses(smtpServer(url));
      assert.deepEqual(flags, [`127.0.0.1:${server.port}`]);
      assert.deepEqual(await sendInChild(url, flags), { ok: true });
      const [message] = await server.waitForMessages(1);
      assert.equal(header(message!, "From"), "Bakery Rossi <site@example.org>");
      assert.equal(header(message!, "Reply-To"), "owner@example.org");
      assert.equal(header(message!, "To"), "carla@example.org");
      assert.equal(header(message!, "Subject"), "Re: Opening hours: ünïcode");
      assert.equal(header(message!, "Envelope-to"), "carla@example.org");
      assert.equal(header(message!, "Return-path"), "<site@example.org>");
      assert.equal(header(message!, "Content-Type"), "text/plain; charset=utf-8");
      assert.equal(
        bodyOf(message!),
        "Hello Carla,\nwe open at nine.\n\nOn 2026-11-22 14:03 UTC, you wrote:\n" +
          "> When do you open?\n> Thanks\n",
      );
    } finally {
      await server.dispose();
    }
  },
});

Deno.test({
  name: "a relay named by host name needs that name and port only: no lookup, no address, no port",
  ignore,
  async fn() {
    const server = await startMailServer();
    try {
      const url = `smtp://localhost:${server.port}`;
      const flags = mailNetAddresses(smtpServer(url));
      assert.deepEqual(flags, [`localhost:${server.port}`]);
      assert.deepEqual(await sendInChild(url, flags), { ok: true });
      assert.equal((await server.waitForMessages(1)).length, 1);
      // Another port of the same name, or the address it resolves to, is not enough.
      for (const wrong of [[`localhost:${server.port + 1}`], [`127.0.0.1:${server.port}`]]) {
        const refused = await sendInChild(url, wrong);
        assert.deepEqual(refused, {
          ok: false,
          kind: "temporary",
          reason: "mail server failed",
          message: "mail server failed",
        }, wrong[0]);
      }
      assert.equal((await server.messages()).length, 1);
    } finally {
      await server.dispose();
    }
  },
});

Deno.test({
  name: "a recipient the relay refuses for good is a permanent failure, named by its codes only",
  ignore,
  async fn() {
    const server = await startMailServer();
    try {
      const url = `smtp://${server.host}:${server.port}`;
      const result = await sendInChild(url, mailNetAddresses(smtpServer(url)), {
        ...DRAFT,
        to: "refused@example.org",
      });
      assert.deepEqual(result.kind, "permanent");
      assert.match(result.reason, /^mail server refused the recipient \(550( 5\.1\.1)?\)$/);
      assert.deepEqual(await server.messages(), []);
    } finally {
      await server.dispose();
    }
  },
});

Deno.test({
  name: "a login with the relay's user and password works; a refused one never shows the password",
  ignore,
  async fn() {
    const server = await startMailServer();
    const wrong = "hunter2-smtp-secret";
    const url = (password: string) =>
      `smtp://${MAIL_SERVER_USER}:${password}@${server.host}:${server.port}`;
    const refused = smtpTransport({ server: smtpServer(url(wrong)), name: "contactd.test" });
    const right = smtpTransport({
      server: smtpServer(url(MAIL_SERVER_PASSWORD)),
      name: "contactd.test",
    });
    try {
      const error = await refused.send(composeReply(SETTINGS, DRAFT)).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(error instanceof MailSendError, String(error));
      assert.equal(`${error.name} ${error.message} ${error.stack}`.includes(wrong), false);
      assert.deepEqual([error.kind, error.reason], [
        "temporary",
        "mail server refused the login (535)",
      ]);
      assert.deepEqual(await server.messages(), []);
      await right.send(composeReply(SETTINGS, DRAFT));
      assert.equal((await server.waitForMessages(1)).length, 1);
    } finally {
      refused.close();
      right.close();
      await server.dispose();
    }
  },
});

Deno.test({
  name: "the mail server down for a while, then up: the reply waits, is retried, delivered once",
  ignore,
  async fn() {
    const server = await startMailServer();
    const dir = await Deno.makeTempDir({ prefix: "contactd-replies-" });
    const transport = smtpTransport({
      server: smtpServer(`smtp://${server.host}:${server.port}`),
      name: "contactd.test",
      timeoutMs: 5000,
    });
    const logs: LogFields[] = [];
    const log = (_: unknown, fields: LogFields) => logs.push(fields);
    const database = openLocalStore(databasePath(`${dir}/messages.jsonl`), { create: true });
    const store = await openReplyStore(database, { now: () => new Date() });
    const outcomes: ReplyOutcome[] = [];
    let sent = () => {};
    const delivered = new Promise<void>((resolve) => (sent = resolve));
    try {
      await server.stop();
      const down = await transport.send(composeReply(SETTINGS, DRAFT)).then(
        () => undefined,
        (e) => e,
      );
      assert.ok(down instanceof MailSendError);
      assert.deepEqual([down.kind, down.reason], ["unreachable", "mail server unreachable"]);

      await store.add({
        id: "r1",
        submission: "s1",
        ts: new Date().toISOString().slice(0, 19) + "Z",
        chat: 1,
        message: 2,
        draft: DRAFT,
      });
      const sender = startReplySender({
        store,
        transport,
        settings: SETTINGS,
        clock: {
          now: () => performance.now(),
          wallNow: () => Date.now(),
          setTimer: (fn, ms) => setTimeout(fn, ms),
          clearTimer: (handle) => clearTimeout(handle as number),
        },
        random: () => 0,
        maxAgeMs: 3_600_000,
        log,
        onOutcome: (_reply, outcome) => {
          outcomes.push(outcome);
          if (outcome.kind !== "waiting") sent();
        },
      });
      // Down for two tries (back-off 0.5 s, then 1 s), then up.
      while (logs.filter((l) => l.event === "reply_retry").length < 2) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await server.start();
      await delivered;
      await sender.close();
      assert.deepEqual(outcomes, [
        { kind: "waiting", reason: "mail server unreachable" },
        { kind: "sent", to: "c•••@example.org" },
      ]);
      const messages = await server.waitForMessages(1);
      // Nothing more arrives: give a second delivery its chance, then count again.
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal((await server.messages()).length, 1);
      assert.equal(header(messages[0]!, "To"), "carla@example.org");
      assert.deepEqual(store.pending(), []);
      assert.equal(store.audits()[0]!.result, "sent");
    } finally {
      transport.close();
      await store.close();
      await database.close();
      await server.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a reply accepted, then the process killed (-9) before sending: delivered once after restart",
  ignore,
  async fn() {
    const server = await startMailServer();
    const dir = await Deno.makeTempDir({ prefix: "contactd-replies-" });
    const path = databasePath(`${dir}/messages.jsonl`);
    const transport = smtpTransport({
      server: smtpServer(`smtp://${server.host}:${server.port}`),
      name: "contactd.test",
    });
    const reply = {
      id: "1:2",
      submission: "s1",
      ts: new Date().toISOString().slice(0, 19) + "Z",
      chat: 1,
      message: 2,
      draft: DRAFT,
    };
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-prompt",
        `--allow-read=${dir}`,
        `--allow-write=${dir}`,
        new URL("../mail/_accept_reply.ts", import.meta.url).pathname,
        path,
        JSON.stringify(reply),
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let said = "";
    while (!said.includes("accepted")) {
      const { value, done } = await reader.read();
      if (done) break;
      said += value;
    }
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel();
    const database = openLocalStore(path, { create: false });
    const store = await openReplyStore(database, { now: () => new Date() });
    const outcomes: ReplyOutcome[] = [];
    try {
      assert.equal(said.trim(), "accepted");
      assert.deepEqual(store.pending().map((r) => r.id), ["1:2"]);
      assert.deepEqual(await server.messages(), []);
      let sent = () => {};
      const done = new Promise<void>((resolve) => (sent = resolve));
      const sender = startReplySender({
        store,
        transport,
        settings: SETTINGS,
        clock: {
          now: () => performance.now(),
          wallNow: () => Date.now(),
          setTimer: (fn, ms) => setTimeout(fn, ms),
          clearTimer: (handle) => clearTimeout(handle as number),
        },
        random: () => 0,
        maxAgeMs: 3_600_000,
        log: () => {},
        onOutcome: (_reply, outcome) => (outcomes.push(outcome), sent()),
      });
      await done;
      await sender.close();
      assert.deepEqual(outcomes, [{ kind: "sent", to: "c•••@example.org" }]);
      assert.equal((await server.waitForMessages(1)).length, 1);
      // The same chat message again (a redelivered update) is not accepted twice.
      assert.equal(await store.add(reply), false);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal((await server.messages()).length, 1);
    } finally {
      transport.close();
      await store.close();
      await database.close();
      await server.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "smtps:// and smtp:// with STARTTLS deliver over a verified certificate; an unknown one sends nothing",
  ignore: ignoreTls,
  async fn() {
    const server = await startMailServer({ tls: true });
    try {
      const trusted = { DENO_CERT: server.caFile! };
      for (
        const url of [`smtps://localhost:${server.tlsPort}`, `smtp://localhost:${server.port}`]
      ) {
        const flags = mailNetAddresses(smtpServer(url));
        assert.deepEqual(await sendInChild(url, flags, DRAFT, trusted), { ok: true }, url);
      }
      const messages = await server.waitForMessages(2);
      // Exim records the TLS session in its Received line: "with esmtps".
      for (const message of messages) assert.match(header(message, "Received")!, /with esmtps/);
      const url = `smtps://localhost:${server.tlsPort}`;
      const untrusted = await sendInChild(url, mailNetAddresses(smtpServer(url)));
      assert.deepEqual(untrusted, {
        ok: false,
        kind: "temporary",
        reason: "TLS with the mail server failed",
        message: "TLS with the mail server failed",
      });
      assert.equal((await server.messages()).length, 2);
      // The relay saw the handshake fail: the client refused its certificate.
      await server.waitForLog(/TLS error on connection from \[127\.0\.0\.1\]/);
    } finally {
      await server.dispose();
    }
  },
});

Deno.test({
  name:
    "the certificate is checked against the relay's name in SMTP_URL, not the address connected to",
  ignore: ignoreTls,
  async fn() {
    const server = await startMailServer({ tls: true });
    const module = (path: string) => JSON.stringify(import.meta.resolve(path));
    // Both relays reached at 127.0.0.1 (which the certificate names too), by an injected connect.
    const code = `
      import net from "node:net";
      import { composeReply } from ${module("../../lib/mail/message.ts")};
      import { smtpTransport } from ${module("../../lib/mail/smtp_transport.ts")};
      import { smtpServer } from ${module("../support/smtp_server.ts")};
      const results = [];
      for (const url of Deno.args) {
        const transport = smtpTransport({
          server: smtpServer(url),
          name: "contactd.test",
          connect: () => net.connect({ host: "127.0.0.1", port: ${server.tlsPort} }),
        });
        await transport.send(composeReply(${JSON.stringify(SETTINGS)}, ${JSON.stringify(DRAFT)}))
          .then(() => results.push("sent"), (error) => results.push(error.reason));
        transport.close();
      }
      console.log(JSON.stringify(results));`;
    try {
      const output = await new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          `--config=${new URL("../../deno.json", import.meta.url).pathname}`,
          code,
          `smtps://mail.example.org:${server.tlsPort}`,
          `smtps://localhost:${server.tlsPort}`,
        ],
        env: { NO_COLOR: "1", DENO_CERT: server.caFile! },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
      assert.deepEqual(JSON.parse(new TextDecoder().decode(output.stdout)), [
        "TLS with the mail server failed",
        "sent",
      ]);
      assert.equal((await server.waitForMessages(1)).length, 1);
    } finally {
      await server.dispose();
    }
  },
});

Deno.test({
  name:
    "contactd check tries the mail server of SMTP_URL (connect, EHLO, login) and names a refused login, never the password",
  ignore,
  async fn() {
    const server = await startMailServer();
    const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
    const wrong = "hunter2-smtp-secret";
    const check = async (password: string) => {
      const out: string[] = [];
      const err: string[] = [];
      const settings: Settings = {
        MESSENGER_BOT_TOKEN: TOKEN,
        MESSENGER_CHAT_ID: String(CHAT_ID),
        MESSENGER_API_URL: fake.url,
        MESSAGES_FILE: "/nonexistent-contactd-check/messages.jsonl",
        SMTP_URL: `smtp://${MAIL_SERVER_USER}:${password}@${server.host}:${server.port}`,
        REPLY_FROM: "site@example.org",
      };
      const code = await runCli(["check"], {
        ...fakeCliIo({ env: (name) => settings[name], fetch, smtpTransport }).io,
        out: (line) => out.push(line),
        err: (line) => err.push(line),
      });
      return { code, out, err };
    };
    try {
      const right = await check(MAIL_SERVER_PASSWORD);
      assert.equal(right.code, 0, right.err.join("\n"));
      assert.ok(
        right.out.includes(
          `mail: 127.0.0.1:${server.port} answers (STARTTLS where offered, loopback, login accepted)`,
        ),
        right.out.join("\n"),
      );
      assert.equal(right.out.at(-1), "ok: ready to deliver");
      const refused = await check(wrong);
      assert.equal(refused.code, 1);
      assert.match(
        refused.err.at(-1)!,
        /^contactd check: mail server 127\.0\.0\.1:\d+: mail server refused the login \(535\)/,
      );
      assert.ok(!refused.out.includes("ok: ready to deliver"));
      assert.ok(![...refused.out, ...refused.err].join("\n").includes(wrong));
      // Nothing was sent by either.
      assert.deepEqual(await server.messages(), []);
      // Down: said so, with the address.
      await server.stop();
      const down = await check(MAIL_SERVER_PASSWORD);
      assert.equal(down.code, 1);
      assert.match(down.err.at(-1)!, /^contactd check: mail server 127\.0\.0\.1:\d+: /);
    } finally {
      await fake.close();
      await server.dispose();
    }
  },
});
