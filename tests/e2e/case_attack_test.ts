/**
 * End to end, attacks on the case pages (issue 33): the real service against the fake Bot API.
 * A follow-up survives a kill -9 before its delivery; the token goes nowhere (no log line, record
 * or call to the Bot API) whatever is thrown at the page; `forget` of a case reaches its
 * follow-ups. Each test is named as the rule that must hold.
 *
 * @module
 */
import assert from "node:assert/strict";
import { followUpLine } from "../../lib/bot/notification.ts";
import { casePath, newToken } from "../../lib/cases/token.ts";
import type { FakeBotApi } from "../support/fake_bot_api.ts";
import {
  CHAT_ID,
  runContactdTask,
  type Service,
  waitFor,
  withRestarts,
  withService,
} from "../support/service.ts";

const PROXY = { TRUSTED_PROXIES: "127.0.0.1/32" };

/** Submits `message` without a contact; its id and its case's path. */
async function submit(service: Service, message: string, ip = "198.51.100.7") {
  const response = await service.post({ message }, ip);
  assert.equal(response.status, 200);
  const { case_url } = await response.json();
  const id = String((await service.records()).at(-1)!.id);
  return { id, caseUrl: case_url as string };
}

/** The bot's first message (the notification) whose text starts with submission `id`'s header. */
function notificationOf(fake: FakeBotApi, id: string): number | undefined {
  for (const [key, message] of fake.messages) {
    if (message.from === undefined && message.text.startsWith(`New contact message #${id}`)) {
      return Number(key.split(":")[1]);
    }
  }
  return undefined;
}

/** The bot's messages that are follow-ups of case `id`. */
function followUpsOf(fake: FakeBotApi, id: string) {
  return [...fake.messages.values()].filter((m) =>
    m.from === undefined && m.text.includes(followUpLine(id))
  );
}

const send = (service: Service, path: string, init: RequestInit = {}, ip = "198.51.100.7") =>
  fetch(`${service.url}${path}`, {
    ...init,
    headers: { "x-forwarded-for": ip, ...init.headers },
    redirect: "manual",
  });

const writeBack = (service: Service, path: string, message: string, ip = "198.51.100.7") =>
  send(service, path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ message }).toString(),
  }, ip);

Deno.test("e2e: a follow-up accepted while the Bot API is down survives a kill -9: after the restart it answers its case's notification, and the page shows it", async () => {
  await withRestarts(CHAT_ID, async (start, fake) => {
    const first = await start({ ...PROXY, MESSENGER_TIMEOUT_MS: "1000" });
    const { id, caseUrl } = await submit(first, "question");
    await waitFor(() => notificationOf(fake, id) !== undefined, 15_000, "the notification");
    const notification = notificationOf(fake, id)!;

    await fake.outage("html");
    const back = await writeBack(first, caseUrl, "written before the crash");
    await back.body?.cancel();
    assert.equal(back.status, 303);
    first.process.kill("SIGKILL");
    await first.process.status;
    await fake.outage(false);
    assert.equal(followUpsOf(fake, id).length, 0, "not delivered before the crash");

    const second = await start({ ...PROXY, MESSAGES_FILE: first.file });
    await waitFor(() => followUpsOf(fake, id).length > 0, 30_000, "the follow-up after restart");
    const [followUp] = followUpsOf(fake, id);
    assert.equal(followUp!.replyTo, notification, "a reply to the case's notification");
    assert.ok(followUp!.text.includes("written before the crash"));
    const html = await (await send(second, caseUrl)).text();
    assert.ok(html.includes("written before the crash"));
    assert.equal(await second.stop(), 0);
  });
});

Deno.test("e2e: the token goes nowhere: not in a log line, the backup file or any call to the Bot API, whatever is thrown at its page", async () => {
  await withService(PROXY, async (service, fake) => {
    const { id, caseUrl } = await submit(service, "question");
    await waitFor(() => notificationOf(fake, id) !== undefined, 15_000, "the notification");
    const answers: Response[] = [
      await send(service, caseUrl, { method: "PUT" }),
      await send(service, caseUrl, { method: "DELETE" }),
      await send(service, `${caseUrl}?error=<script>`),
      await send(service, caseUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{not json",
      }),
      await send(service, caseUrl, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `message=${"x".repeat(20_000)}`,
      }),
      await send(service, caseUrl, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "message=hi",
      }),
      await writeBack(service, caseUrl, "a follow-up"),
      await writeBack(service, caseUrl, "a bot", "203.0.113.50"),
    ];
    for (const answer of answers) await answer.body?.cancel();
    await waitFor(() => followUpsOf(fake, id).length >= 2, 15_000, "the follow-ups");
    const token = caseUrl.slice("/api/case/".length);
    const backup = await Deno.readTextFile(service.file);
    const calls = JSON.stringify(fake.calls);
    const chat = JSON.stringify([...fake.messages.values()]);
    for (const [where, text] of [["backup", backup], ["bot api", calls], ["chat", chat]]) {
      assert.ok(!text!.includes(token), `the token is in the ${where}`);
    }
    for (const line of [...service.stdout, ...service.stderr]) {
      assert.ok(!line.includes(token), `the token is in a log line: ${line}`);
    }
    for (const answer of answers) {
      const location = answer.headers.get("location");
      if (location !== null) assert.ok(location.startsWith(caseUrl), location);
    }
    // Nor is a guess's.
    const guess = casePath(newToken());
    await (await send(service, guess)).body?.cancel();
    assert.ok(![...service.stdout, ...service.stderr].some((line) => line.includes(guess)));
  });
});

Deno.test(
  "e2e: contactd forget --id of a case erases its follow-ups too: their records leave the backup file and their messages the chat",
  {
    // Found by attack: a follow-up is a submission of its own (own id, backup record, outbox row,
    // chat ledger entry and message), and its record carried no mark of its case, so `forget --id
    // <the case's id>` left every follow-up's text in the backup file and its notification in the
    // chat. Its record and outbox row now carry `follow_up` (lib/storage/erasure.ts).
  },
  async () => {
    await withService(PROXY, async (service, fake) => {
      const { id, caseUrl } = await submit(service, "erase this question");
      await waitFor(() => notificationOf(fake, id) !== undefined, 15_000, "the notification");
      const back = await writeBack(service, caseUrl, "erase this follow-up too");
      await back.body?.cancel();
      await waitFor(() => followUpsOf(fake, id).length > 0, 15_000, "the follow-up");
      const forget = await runContactdTask(["forget", "--id", `#${id}`], service.dir, {
        MESSAGES_FILE: service.file,
      });
      assert.equal(forget.code, 0, forget.stderr);
      await waitFor(
        () => notificationOf(fake, id) === undefined,
        15_000,
        "the notification deleted",
      );
      const backup = await Deno.readTextFile(service.file);
      assert.ok(!backup.includes("erase this question"));
      assert.ok(!backup.includes("erase this follow-up too"), "the follow-up's record is erased");
      await waitFor(
        () => followUpsOf(fake, id).length === 0,
        15_000,
        "the follow-up's message deleted from the chat",
      );
    });
  },
);

Deno.test("e2e: a no-JavaScript post puts the token only in the fragment of the site's thanks page, or lands on the case page itself", async () => {
  await withService(
    { ...PROXY, ALLOWED_ORIGINS: "https://site.example" },
    async (service) => {
      const form = (fields: Record<string, string>) =>
        send(service, "/api/contact", {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            origin: "https://site.example",
          },
          body: new URLSearchParams(fields).toString(),
        });
      const thanks = await form({ message: "hi", _redirect: "https://site.example/thanks?a=1" });
      await thanks.body?.cancel();
      assert.equal(thanks.status, 303);
      const location = new URL(thanks.headers.get("location")!);
      assert.equal(
        `${location.origin}${location.pathname}${location.search}`,
        "https://site.example/thanks?a=1",
      );
      const caseUrl = /^#case=(\/api\/case\/[A-Za-z0-9_-]{32})$/.exec(location.hash)?.[1];
      assert.ok(caseUrl !== undefined, location.hash);
      const page = await send(service, caseUrl);
      assert.equal(page.status, 200);
      assert.ok((await page.text()).includes("hi"));

      const own = await form({ message: "no thanks page" });
      await own.body?.cancel();
      assert.equal(own.status, 303);
      const ownLocation = own.headers.get("location")!;
      assert.match(ownLocation, /^\/api\/case\/[A-Za-z0-9_-]{32}\?sent=1$/);
      const landed = await send(service, ownLocation);
      assert.equal(landed.status, 200);
      assert.equal(landed.headers.get("referrer-policy"), "no-referrer");
      assert.ok((await landed.text()).includes("no thanks page"));
    },
  );
});
