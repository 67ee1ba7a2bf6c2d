/**
 * End to end, replies by email (issue 24): the real service process against the fake Bot API
 * and a real mail server (Debian's Exim on loopback, tests/support/mail_server.ts). A reply to a
 * notification arrives in the sender's mailbox once, with its headers and the quoted message; the
 * mail server down for a while, then up: waiting, then sent, one copy; kill -9 between acceptance
 * and sending: delivered once after the restart, listed by `contactd pending` meanwhile; and every
 * reply that cannot be emailed gets its one short answer while nothing is sent.
 */
import assert from "node:assert/strict";
import { NO_REPLIES, NOT_A_NOTIFICATION } from "../../lib/inbox/inbox.ts";
import { DESK_ANSWERS } from "../../lib/inbox/reply_desk.ts";
import { CASE_ANSWERS } from "../../lib/inbox/case_reply.ts";
import type { FakeBotApi } from "../support/fake_bot_api.ts";
import {
  MAIL_SERVER_PASSWORD,
  MAIL_SERVER_USER,
  type MailServer,
  skipWithoutMailServer,
  startMailServer,
} from "../support/mail_server.ts";
import {
  assertNoTokenLeak,
  CHAT_ID,
  runPending,
  type Service,
  waitFor,
  withRestarts,
  withService,
} from "../support/service.ts";

const ignore = skipWithoutMailServer();

/** A chat contactd does not notify. */
const OTHER_CHAT = -1009999;
/** The sender's address, and how the chat shows it. */
const CONTACT = "carla.rossi@example.org";
const MASKED = "c•••@example.org";
/** The sender's message (two lines, non-ASCII) and the form's `subject` field. */
const MESSAGE = "Vorrei una torta per sabato.\nÈ possibile?";
const SUBJECT = "Torta di compleanno ünïcode";
/** The owner's reply: non-ASCII, two lines. */
const REPLY = "Certo, Carla! Sabato alle 9 è perfetto ☕\nA presto";
const REPLY_FROM = "site@bakery.example";
const REPLY_TO = "orders@bakery.example";

/** The settings that turn replies by email on, through `server` (with a login when asked). */
function mailSettings(server: MailServer, login = false): Record<string, string> {
  return {
    SMTP_URL: `smtp://${server.host}:${server.port}`,
    REPLY_FROM,
    REPLY_TO,
    ...(login ? { SMTP_USER: MAIL_SERVER_USER, SMTP_PASSWORD: MAIL_SERVER_PASSWORD } : {}),
  };
}

/** Runs `run` with a fresh mail server, disposed of afterwards. */
async function withMailServer(run: (server: MailServer) => Promise<void>): Promise<void> {
  const server = await startMailServer();
  try {
    await run(server);
  } finally {
    await server.dispose();
  }
}

/** POSTs a submission (answered 200) and returns its id, from the backup file. */
async function submit(service: Service, body: Record<string, string> = {}): Promise<string> {
  const response = await service.post({ contact: CONTACT, message: MESSAGE, ...body });
  assert.equal(response.status, 200, await response.text());
  const id = (await service.records()).at(-1)?.id;
  assert.equal(typeof id, "string");
  return id as string;
}

/** The message ids of every part the bot sent for submission `id`, in order. */
function partsOf(fake: FakeBotApi, id: string): number[] {
  const ids: number[] = [];
  for (const [key, message] of fake.messages) {
    const [chatId, messageId] = key.split(":").map(Number);
    if (chatId !== CHAT_ID || message.from !== undefined) continue;
    if (
      message.text.startsWith(`New contact message #${id}`) ||
      /^\(\d+\/\d+\) #(\w+)\n/.exec(message.text)?.[1] === id
    ) {
      ids.push(messageId!);
    }
  }
  assert.ok(ids.length > 0, `no notification of ${id}`);
  return ids;
}

/** Pushes the owner's reply `text` to `replyTo` in `chatId`; returns the reply's message id. */
function reply(fake: FakeBotApi, replyTo: number, text = REPLY, chatId = CHAT_ID): number {
  const update = fake.replyUpdate({ chatId, replyTo, text });
  fake.pushUpdate(update);
  return (update.message as { message_id: number }).message_id;
}

/** The bot's messages in `chat` that reply to `messageId`, in order. */
function answersTo(fake: FakeBotApi, messageId: number, chat = CHAT_ID): string[] {
  const texts: string[] = [];
  for (const [key, message] of fake.messages) {
    if (key.startsWith(`${chat}:`) && message.from === undefined && message.replyTo === messageId) {
      texts.push(message.text);
    }
  }
  return texts;
}

/** Waits for the first answer to the owner's message `messageId` and returns it. */
async function answerTo(fake: FakeBotApi, messageId: number, chat = CHAT_ID): Promise<string> {
  await waitFor(() => answersTo(fake, messageId, chat).length > 0, 15_000, "the answer");
  return answersTo(fake, messageId, chat)[0]!;
}

/** Waits for the bot's answer to the user's message `asked`; returns the answer's message id. */
async function waitForBotAnswer(
  fake: FakeBotApi,
  asked: { message_id: number },
): Promise<number> {
  const find = () =>
    [...fake.messages].find(([key, message]) =>
      key.startsWith(`${CHAT_ID}:`) && message.from === undefined &&
      message.replyTo === asked.message_id
    );
  await waitFor(() => find() !== undefined, 15_000, "the bot's answer");
  return Number(find()![0].split(":")[1]);
}

/** Log lines of `event` across `services`. */
function lines(services: readonly Service[], event: string) {
  return services.flatMap((service) => service.logs()).filter((line) => line.event === event);
}

/** No log line holds the token, the sender's address, either text, or the mail password. */
function assertPrivate(service: Service) {
  assertNoTokenLeak(service);
  const secrets = [CONTACT, "carla.rossi", MESSAGE.split("\n")[0]!, REPLY.split("\n")[0]!];
  for (const line of [...service.stdout, ...service.stderr]) {
    for (const secret of [...secrets, SUBJECT, MAIL_SERVER_PASSWORD]) {
      assert.ok(!line.includes(secret), `${secret} leaked in: ${line}`);
    }
  }
}

/** Sleeps (only to give a second, wrong delivery its chance before counting again). */
function settle(ms = 500): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A raw message's header block (unfolded) and body (CRLF made LF). */
function splitMessage(raw: string): { head: string[]; body: string } {
  const text = raw.replace(/\r\n/g, "\n");
  const end = text.indexOf("\n\n");
  const head = text.slice(0, end).replace(/\n[ \t]+/g, " ").split("\n");
  return { head, body: text.slice(end + 2) };
}

/** Every value of header `name`, RFC 2047 encoded words decoded. */
function headers(raw: string, name: string): string[] {
  const prefix = `${name.toLowerCase()}:`;
  return splitMessage(raw).head.filter((line) => line.toLowerCase().startsWith(prefix))
    .map((line) => decodeWords(line.slice(prefix.length).trim()));
}

/** The one value of header `name`. */
function header(raw: string, name: string): string | undefined {
  const values = headers(raw, name);
  assert.ok(values.length <= 1, `${name} given ${values.length} times`);
  return values[0];
}

/** RFC 2047: runs of `=?utf-8?Q|B?…?=` words (the space between them dropped) as text. */
function decodeWords(value: string): string {
  return value.replace(
    /=\?utf-8\?[QB]\?[^?]*\?=(?:\s+=\?utf-8\?[QB]\?[^?]*\?=)*/gi,
    (run) => {
      const bytes: number[] = [];
      for (const [, encoding, text] of run.matchAll(/=\?utf-8\?([QB])\?([^?]*)\?=/gi)) {
        if (encoding!.toUpperCase() === "B") {
          bytes.push(...Uint8Array.from(atob(text!), (c) => c.charCodeAt(0)));
        } else {
          bytes.push(...quotedPrintableBytes(text!.replace(/_/g, " ")));
        }
      }
      return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
    },
  );
}

/** Quoted-printable `text` (soft line breaks removed already) as bytes. */
function quotedPrintableBytes(text: string): number[] {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === "=" && /^[0-9A-F]{2}$/i.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(text.charCodeAt(i));
    }
  }
  return bytes;
}

/** The body as text, its transfer encoding undone (quoted-printable or base64), UTF-8. */
function bodyText(raw: string): string {
  const { body } = splitMessage(raw);
  const encoding = (header(raw, "Content-Transfer-Encoding") ?? "7bit").toLowerCase();
  const bytes = encoding === "quoted-printable"
    ? quotedPrintableBytes(body.replace(/=\n/g, ""))
    : encoding === "base64"
    ? [...Uint8Array.from(atob(body.replace(/\s+/g, "")), (c) => c.charCodeAt(0))]
    : [...new TextEncoder().encode(body)];
  return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
}

/** `2026-11-25T18:40:09Z` as the quote's line says it: `2026-11-25 18:40 UTC`. */
function quotedDate(ts: string): string {
  return `${ts.slice(0, 10)} ${ts.slice(11, 16)} UTC`;
}

Deno.test({
  name:
    "e2e: a reply to a notification reaches the sender's mailbox once, with its headers, the quote and 'Sent' in the chat",
  ignore,
  async fn() {
    await withMailServer(async (server) => {
      await withService(mailSettings(server, true), async (service, fake) => {
        const id = await submit(service, { subject: SUBJECT });
        const [first, second] = partsOf(fake, id);
        assert.equal(second, undefined, "a short notification is one message");
        const owner = reply(fake, first!);
        assert.equal(await answerTo(fake, owner), `✉️ Sent to ${MASKED}`);

        const [mail] = await server.waitForMessages(1);
        assert.equal(header(mail!, "From"), REPLY_FROM);
        assert.equal(header(mail!, "Reply-To"), REPLY_TO);
        assert.equal(header(mail!, "To"), CONTACT);
        assert.equal(header(mail!, "Envelope-to"), CONTACT, "the envelope names only the sender");
        assert.equal(header(mail!, "Return-path"), `<${REPLY_FROM}>`);
        assert.equal(header(mail!, "Subject"), `Re: ${SUBJECT}`);
        assert.equal(header(mail!, "MIME-Version"), "1.0");
        assert.equal(header(mail!, "Content-Type"), "text/plain; charset=utf-8");
        assert.match(
          header(mail!, "Content-Transfer-Encoding") ?? "",
          /^(quoted-printable|base64)$/,
        );
        // Plain text, not multipart; every header line ASCII (non-ASCII is encoded).
        assert.ok(splitMessage(mail!).head.every((line) => /^[\x20-\x7e\t]*$/.test(line)));
        const record = (await service.records()).find((entry) => entry.id === id)!;
        assert.equal(
          bodyText(mail!),
          `${REPLY}\n\nOn ${quotedDate(String(record.ts))}, you wrote:\n` +
            "> Vorrei una torta per sabato.\n> È possibile?\n",
        );
        // The relay was logged in to with SMTP_USER and SMTP_PASSWORD.
        await server.waitForLog(new RegExp(`A=plain:${MAIL_SERVER_USER}`));

        // Nothing more arrives.
        await settle();
        assert.equal((await server.messages()).length, 1);
        assert.deepEqual(answersTo(fake, owner), [`✉️ Sent to ${MASKED}`], "one answer");

        // The log: ids only.
        const replyId = `${CHAT_ID}:${owner}`;
        const accepted = lines([service], "reply_accepted");
        const sent = lines([service], "reply_sent");
        assert.equal(accepted.length, 1);
        assert.equal(sent.length, 1);
        assert.deepEqual(Object.keys(accepted[0]!).sort(), [
          "event",
          "level",
          "reply",
          "submission",
          "time",
        ]);
        assert.deepEqual(Object.keys(sent[0]!).sort(), [
          "attempts",
          "event",
          "level",
          "reply",
          "submission",
          "time",
        ]);
        assert.deepEqual([accepted[0]!.reply, accepted[0]!.submission], [replyId, id]);
        assert.deepEqual([sent[0]!.reply, sent[0]!.submission, sent[0]!.attempts], [
          replyId,
          id,
          1,
        ]);
        assertPrivate(service);
      });
    });
  },
});

Deno.test({
  name:
    "e2e: the mail server down for a while, then up: 'Waiting' first, then 'Sent', one copy in the mailbox",
  ignore,
  async fn() {
    await withMailServer(async (server) => {
      await withService(mailSettings(server), async (service, fake) => {
        const id = await submit(service);
        const [first] = partsOf(fake, id);
        await server.stop();
        const owner = reply(fake, first!);
        assert.equal(
          await answerTo(fake, owner),
          "⏳ Waiting: mail server unreachable; contactd keeps trying",
        );
        // Back up: the first retry comes 0.5 to 1 s after the first try (retryDelayMs(1)).
        await server.start();
        await waitFor(() => answersTo(fake, owner).length === 2, 15_000, "the 'Sent' answer");
        assert.equal(answersTo(fake, owner)[1], `✉️ Sent to ${MASKED}`);
        const [mail] = await server.waitForMessages(1);
        assert.equal(header(mail!, "To"), CONTACT);
        // Subject without a subject field: the site, from REPLY_FROM's domain.
        assert.equal(header(mail!, "Subject"), "Re: your message to bakery.example");
        await settle();
        assert.equal((await server.messages()).length, 1, "delivered once");
        assert.equal(answersTo(fake, owner).length, 2, "no third answer");
        const retries = lines([service], "reply_retry");
        assert.ok(retries.length >= 1);
        assert.ok(retries.every((line) => line.reply === `${CHAT_ID}:${owner}`));
        assert.equal(lines([service], "reply_sent").length, 1);
        assertPrivate(service);
      });
    });
  },
});

Deno.test({
  name:
    "e2e: kill -9 between acceptance and sending: `pending` lists the reply, delivered once after the restart",
  ignore,
  async fn() {
    await withMailServer(async (server) => {
      await withRestarts(CHAT_ID, async (start, fake) => {
        const first = await start(mailSettings(server));
        const id = await submit(first);
        const [notification] = partsOf(fake, id);
        await server.stop();
        const update = fake.replyUpdate({ chatId: CHAT_ID, replyTo: notification!, text: REPLY });
        const updateId = fake.pushUpdate(update);
        const owner = (update.message as { message_id: number }).message_id;
        assert.match(await answerTo(fake, owner), /^⏳ Waiting: mail server unreachable/);
        assert.equal(lines([first], "reply_accepted").length, 1);
        first.process.kill("SIGKILL");
        await first.process.status;
        // As if the kill came before the update's offset was confirmed: Telegram sends the reply
        // again, and the restarted service must not take it twice.
        await Deno.remove(`${first.file}.updates`).catch(() => {});
        fake.updates = fake.updates.filter((pending) =>
          (pending as { update_id: number }).update_id !== updateId
        );
        fake.updates.unshift({ update_id: updateId, ...update });
        const polled = fake.polls.length;

        // Waiting, as `contactd pending` lists it: ids and age, never the address or the text.
        const pending = await runPending(first.file);
        assert.equal(pending.code, 0, pending.stderr);
        const replyId = `${CHAT_ID}:${owner}`;
        const row = pending.stdout.split("\n").find((line) => line.startsWith(`${replyId}\t`));
        assert.ok(row !== undefined, pending.stdout);
        assert.match(
          row,
          new RegExp(
            `^${replyId}\\t${id}\\t\\d{4}-\\d\\d-\\d\\dT[^\\t]+\\t\\d+s\\t[1-9]\\d*\\t` +
              "mail server unreachable$",
          ),
        );
        assert.match(pending.stdout, /1 reply waiting to be emailed/);
        for (const secret of [CONTACT, "carla.rossi", REPLY.split("\n")[0]!, MESSAGE]) {
          assert.ok(!pending.stdout.includes(secret), `pending shows ${secret}`);
        }

        await server.start();
        const second = await start({ ...mailSettings(server), MESSAGES_FILE: first.file });
        const runs = [first, second];
        await waitFor(
          () => answersTo(fake, owner).includes(`✉️ Sent to ${MASKED}`),
          15_000,
          "the 'Sent' answer after the restart",
        );
        await waitFor(
          () => fake.polls.slice(polled).some((offset) => (offset ?? 0) > updateId),
          15_000,
          "the repeated reply handled and confirmed",
        );
        assert.equal((await server.waitForMessages(1)).length, 1);
        assert.equal(lines(runs, "reply_sent").length, 1);
        assert.equal(lines([second], "reply_sent")[0]!.reply, replyId);
        await settle();
        assert.equal((await server.messages()).length, 1, "delivered once");
        assert.equal(await second.stop(), 0);
        assert.equal(lines(runs, "reply_accepted").length, 1, "accepted once across both runs");
        const after = await runPending(first.file);
        assert.ok(!after.stdout.includes(replyId), after.stdout);
        for (const run of runs) assertPrivate(run);
      });
    });
  },
});

Deno.test({
  name:
    "e2e: replies that cannot be emailed get one short answer each and nothing is sent; REPLY_LIMIT refuses the next",
  ignore,
  async fn() {
    await withMailServer(async (server) => {
      await withService({ ...mailSettings(server), REPLY_LIMIT: "1/1h" }, async (service, fake) => {
        fake.chats.add(OTHER_CHAT);
        const phone = await submit(service, { contact: "+39 333 123 4567" });
        const handle = await submit(service, { contact: "@carla_r" });
        const email = await submit(service);
        const [phoneMessage] = partsOf(fake, phone);
        const [handleMessage] = partsOf(fake, handle);
        const [emailMessage] = partsOf(fake, email);

        // A phone number, an @handle: no email is sent; the reply goes to the sender's case
        // page instead (issue 33).
        assert.equal(await answerTo(fake, reply(fake, phoneMessage!)), CASE_ANSWERS.posted);
        assert.equal(await answerTo(fake, reply(fake, handleMessage!)), CASE_ANSWERS.posted);
        // A photo without text.
        assert.equal(await answerTo(fake, reply(fake, emailMessage!, "")), DESK_ANSWERS.noText);

        // A reply to a message of the bot that is no notification: the /status answer.
        const ask = fake.commandUpdate({ chatId: CHAT_ID, text: "/status" });
        fake.pushUpdate(ask);
        const status = await waitForBotAnswer(fake, ask.message as { message_id: number });
        assert.equal(await answerTo(fake, reply(fake, status)), NOT_A_NOTIFICATION);

        // From another chat, answering a message of the bot there that bears the notification's
        // message id: refused, nothing sent, and the stranger's chat hears nothing.
        const foreign = fake.replyUpdate({
          chatId: OTHER_CHAT,
          replyTo: emailMessage!,
          text: REPLY,
        });
        const botFrom =
          (fake.pressUpdate({ chatId: CHAT_ID, messageId: emailMessage!, data: "h:x" })
            .callback_query as { message: { from: unknown } }).message.from;
        const replied = (foreign.message as { reply_to_message: Record<string, unknown> })
          .reply_to_message;
        Object.assign(replied, { from: botFrom, date: 1, text: `New contact message #${email}` });
        fake.pushUpdate(foreign);
        const foreignId = (foreign.message as { message_id: number }).message_id;
        // A reply there to someone else's message: not answered at all.
        const chatter = reply(fake, foreignId, REPLY, OTHER_CHAT);

        // None of the above was stored or sent; the one reply the limit allows is.
        const allowed = reply(fake, emailMessage!);
        assert.equal(await answerTo(fake, allowed), `✉️ Sent to ${MASKED}`);
        assert.equal(answersTo(fake, chatter, OTHER_CHAT).length, 0, "no answer to chatter");
        assert.equal(
          answersTo(fake, foreignId, OTHER_CHAT).length,
          0,
          "no answer in a stranger's chat",
        );
        // The next is over REPLY_LIMIT=1/1h.
        const over = reply(fake, emailMessage!, "Un'altra cosa…");
        assert.match(
          await answerTo(fake, over),
          // Not emailed, but on the case page all the same (issue 33).
          /^📄 Posted to the sender's page\nNot sent: at most 1 replies by email per 1 h \(REPLY_LIMIT\); try again in (60 min|1 h)\.$/,
        );
        await settle();
        const mails = await server.messages();
        assert.equal(mails.length, 1, "only the allowed reply was sent");
        assert.ok(!bodyText(mails[0]!).includes("Un'altra cosa"));
        assert.deepEqual(
          lines([service], "reply_refused").map((line) => line.reason),
          ["no_text", "limit"],
        );
        assert.deepEqual(
          lines([service], "reply_refused").map((line) => line.submission),
          [email, email],
        );
        // The phone number and the @handle got theirs on their case pages instead.
        assert.deepEqual(
          lines([service], "case_reply_posted").map((line) => line.submission),
          [phone, handle, email, email],
        );
        assert.equal(lines([service], "reply_accepted").length, 1);
        // The bot said nothing at all in the stranger's chat.
        assert.equal(fake.deliveredChats.filter((chat) => chat === OTHER_CHAT).length, 0);
        assertPrivate(service);
      });
    });
  },
});

Deno.test("e2e: SMTP_URL unset: a reply to a notification is posted to the sender's case page only, and told replies by email are off", async () => {
  await withService({}, async (service, fake) => {
    const id = await submit(service);
    const [first] = partsOf(fake, id);
    const owner = reply(fake, first!);
    assert.equal(await answerTo(fake, owner), `${CASE_ANSWERS.posted}\n${NO_REPLIES}`);
    assert.match(NO_REPLIES, /Replies by email are off/);
    assert.equal(lines([service], "reply_accepted").length, 0);
    assert.ok(!(await Deno.stat(`${service.file}.replies`).then(() => true, () => false)));
    assertPrivate(service);
  });
});
