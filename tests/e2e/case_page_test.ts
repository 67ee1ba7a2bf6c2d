/**
 * End to end, the case pages (issue 33): the real service against the fake Bot API. A sender
 * without an address submits, gets `case_url`, the owner replies in the chat, the page shows it,
 * the sender writes back, and the follow-up reaches the chat as a reply to the notification; a
 * wrong token and an expired case are `404`; the headers; markup escaped in every field; the
 * page closed by Handled; page reads limited; `contactd forget` erases the case.
 */
import assert from "node:assert/strict";
import { CASE_ANSWERS } from "../../lib/inbox/case_reply.ts";
import { followUpLine } from "../../lib/bot/notification.ts";
import { casePath, newToken } from "../../lib/cases/token.ts";
import { openDatabase } from "../../lib/storage/sqlite/database.ts";
import { databasePath } from "../../lib/storage/store.ts";
import type { FakeBotApi } from "../support/fake_bot_api.ts";
import {
  CHAT_ID,
  runContactdTask,
  type Service,
  waitFor,
  withRestarts,
  withService,
} from "../support/service.ts";

const MARKUP = `<script>alert(1)</script><img src=x onerror=alert(2)>"'&`;
const ESCAPED =
  "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;";

/** Submits `message` without a contact; returns its id and its case's path. */
async function submit(service: Service, message: string, ip = "198.51.100.7") {
  const response = await service.post({ name: MARKUP, message }, ip);
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.match(body.case_url, /^\/api\/case\/[A-Za-z0-9_-]{32}$/);
  const id = String((await service.records()).at(-1)!.id);
  return { id, caseUrl: body.case_url as string };
}

/** The first message the bot sent for submission `id`. */
function notificationOf(fake: FakeBotApi, id: string): number {
  for (const [key, message] of fake.messages) {
    if (message.from === undefined && message.text.startsWith(`New contact message #${id}`)) {
      return Number(key.split(":")[1]);
    }
  }
  throw new Error(`no notification of ${id}`);
}

/** The owner replies `text` to message `replyTo`; resolves with the bot's answer. */
async function ownerReplies(fake: FakeBotApi, replyTo: number, text: string): Promise<string> {
  const update = fake.replyUpdate({ chatId: CHAT_ID, replyTo, text });
  fake.pushUpdate(update);
  const mine = (update.message as { message_id: number }).message_id;
  const answer = () =>
    [...fake.messages.values()].find((m) => m.from === undefined && m.replyTo === mine);
  await waitFor(() => answer() !== undefined, 15_000, "the answer to the owner's reply");
  return answer()!.text;
}

const page = (service: Service, path: string, ip = "198.51.100.7") =>
  fetch(`${service.url}${path}`, { headers: { "x-forwarded-for": ip }, redirect: "manual" });

const writeBack = (service: Service, path: string, message: string, ip = "198.51.100.7") =>
  fetch(`${service.url}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-forwarded-for": ip,
    },
    body: new URLSearchParams({ message }).toString(),
    redirect: "manual",
  });

/** No log line nor the backup file holds a token. */
async function assertNoCaseToken(service: Service, ...paths: string[]) {
  const backup = await Deno.readTextFile(service.file);
  for (const path of paths) {
    const token = path.slice("/api/case/".length);
    for (const line of [...service.stdout, ...service.stderr, backup]) {
      assert.ok(!line.includes(token), "a token leaked");
    }
  }
}

Deno.test("e2e: the case round trip: submit without contact, case_url, the owner's reply on the page, the sender writes back, the follow-up answers the notification", async () => {
  await withService({ TRUSTED_PROXIES: "127.0.0.1/32" }, async (service, fake) => {
    const { id, caseUrl } = await submit(service, `question ${MARKUP}`);
    const notification = notificationOf(fake, id);

    assert.equal(await ownerReplies(fake, notification, `answer ${MARKUP}`), CASE_ANSWERS.posted);
    const response = await page(service, caseUrl);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("cache-control"), "no-store");
    assert.equal(response.headers.get("referrer-policy"), "no-referrer");
    assert.match(response.headers.get("x-robots-tag") ?? "", /noindex/);
    assert.match(
      response.headers.get("content-security-policy") ?? "",
      /^default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'$/,
    );
    const html = await response.text();
    assert.ok(html.includes(`question ${ESCAPED}`), "the sender's message, escaped");
    assert.ok(html.includes(`answer ${ESCAPED}`), "the owner's reply, escaped");
    assert.ok(html.indexOf("question") < html.indexOf("answer"));
    assert.ok(!html.includes("<script>") && !html.includes("<img"));
    assert.equal(html.split(ESCAPED).length - 1, 2, "the name is not shown");
    assert.ok(!html.includes("198.51.100.7"), "nor the address");

    const back = await writeBack(service, caseUrl, `more ${MARKUP}`);
    assert.equal(back.status, 303);
    assert.equal(back.headers.get("location"), `${caseUrl}?sent=1`);
    const followUp = () =>
      [...fake.messages.values()].find((m) =>
        m.from === undefined && m.text.includes(followUpLine(id))
      );
    await waitFor(() => followUp() !== undefined, 15_000, "the follow-up in the chat");
    assert.equal(followUp()!.replyTo, notification, "a reply to the notification");
    assert.ok(followUp()!.text.includes(`more ${MARKUP}`));
    assert.notEqual(followUp()!.replyMarkup, undefined, "with the buttons");
    const after = await (await page(service, `${caseUrl}?sent=1`)).text();
    assert.ok(after.includes(`more ${ESCAPED}`));
    assert.ok(after.includes("Your message was sent"));
    const records = await service.records();
    assert.equal(records.length, 2, "the follow-up has its backup record");
    await assertNoCaseToken(service, caseUrl);
  });
});

Deno.test("e2e: a wrong token gets the plain 404 of any unknown path; Handled closes the case for writing, reading stays", async () => {
  await withService({ TRUSTED_PROXIES: "127.0.0.1/32" }, async (service, fake) => {
    const { id, caseUrl } = await submit(service, "question");
    const unknown = await page(service, "/api/nothing");
    const unknownText = await unknown.text();
    // The real token with its last character changed (to one it is not: else it is the token).
    const changed = `${caseUrl.slice(0, -1)}${caseUrl.endsWith("_") ? "A" : "_"}`;
    for (const path of [casePath(newToken()), changed, `${caseUrl}x`]) {
      const response = await page(service, path);
      assert.equal(response.status, 404, path);
      assert.equal(await response.text(), unknownText);
    }
    const notification = notificationOf(fake, id);
    fake.pushUpdate(
      fake.pressUpdate({ chatId: CHAT_ID, messageId: notification, data: `h:${id}` }),
    );
    await waitFor(() => fake.toasts.length > 0, 15_000, "the toast of Handled");
    const refused = await writeBack(service, caseUrl, "more");
    assert.equal(refused.headers.get("location"), `${caseUrl}?error=case_closed`);
    const html = await (await page(service, refused.headers.get("location")!)).text();
    assert.ok(!html.includes("<form"));
    assert.ok(html.includes("closed"));
  });
});

Deno.test("e2e: page reads are rate-limited per address", async () => {
  await withService({ TRUSTED_PROXIES: "127.0.0.1/32" }, async (service) => {
    const { caseUrl } = await submit(service, "question");
    const statuses: number[] = [];
    for (let i = 0; i < 61; i++) {
      const response = await page(service, caseUrl, "203.0.113.5");
      await response.body?.cancel();
      statuses.push(response.status);
    }
    assert.deepEqual(statuses.slice(0, 60), Array(60).fill(200));
    assert.equal(statuses[60], 429);
    assert.equal((await page(service, caseUrl, "203.0.113.6")).status, 200);
  });
});

Deno.test("e2e: contactd forget --id erases the case: its page is a 404 and its text leaves the database", async () => {
  await withService({ TRUSTED_PROXIES: "127.0.0.1/32" }, async (service) => {
    const { id, caseUrl } = await submit(service, "erase this question");
    const forget = await runContactdTask(["forget", "--id", `#${id}`], service.dir, {
      MESSAGES_FILE: service.file,
    });
    assert.equal(forget.code, 0, forget.stderr);
    assert.equal((await page(service, caseUrl)).status, 404);
    const { db } = openDatabase(databasePath(service.file), { create: false });
    try {
      assert.equal(db.prepare("SELECT count(*) AS n FROM case_posts").get()?.n, 0);
      assert.equal(db.prepare("SELECT count(*) AS n FROM cases").get()?.n, 0);
    } finally {
      db.close();
    }
  });
});

Deno.test("e2e: a case past RETENTION is gone at the next start: its page is a 404", async () => {
  await withRestarts(CHAT_ID, async (start) => {
    const first = await start({ TRUSTED_PROXIES: "127.0.0.1/32" });
    const { caseUrl } = await submit(first, "old question");
    assert.equal((await page(first, caseUrl)).status, 200);
    assert.equal(await first.stop(), 0);
    const { db } = openDatabase(databasePath(first.file), { create: false });
    db.exec("UPDATE cases SET ts = '2020-01-01T00:00:00Z'");
    db.close();
    const second = await start({
      TRUSTED_PROXIES: "127.0.0.1/32",
      MESSAGES_FILE: first.file,
      RETENTION: "30d",
    });
    assert.equal((await page(second, caseUrl)).status, 404);
  });
});
