/**
 * End to end: every way the Bot API can fail. For each the sender gets a true error (success
 * only if every part was delivered) that says the message was stored, exactly one record is
 * written with `messenger_ok:false` and a useful `messenger_error`, the token is in no answer,
 * record or log line, and the message is delivered later unless the settings are wrong.
 */
import assert from "node:assert/strict";
import {
  accepted,
  apiError,
  chatMigrated,
  type FakeReply,
  htmlError,
  startCutOffServer,
} from "../support/fake_bot_api.ts";
import { assertNoTokenLeak, TOKEN, withService } from "../support/service.ts";

interface Fault {
  readonly name: string;
  readonly script: Array<FakeReply | "hang">;
  /** The record's `messenger_error`, exactly. */
  readonly error: string;
  readonly message?: string;
  /** A fault only the operator can fix: redelivery pauses instead of retrying. */
  readonly settings?: true;
}

const FAULTS: readonly Fault[] = [
  {
    name: "500",
    script: [apiError(500, "Internal Server Error")],
    error: "500 Internal Server Error",
  },
  {
    name: "502 with an HTML body",
    script: [htmlError(502)],
    error: "502 bad gateway (non-JSON reply)",
  },
  {
    name: "401 bad token",
    script: [apiError(401, "Unauthorized")],
    error: "401 Unauthorized",
    settings: true,
  },
  {
    name: "400 chat not found",
    script: [apiError(400, "Bad Request: chat not found")],
    error: "400 Bad Request: chat not found",
    settings: true,
  },
  {
    name: "400 with migrate_to_chat_id",
    script: [chatMigrated(-1009876543210)],
    error: "400 Bad Request: group chat was upgraded to a supergroup chat",
    settings: true,
  },
  {
    // The message's own refusal: it goes again as a notice without its text.
    name: "400 message is too long",
    script: [apiError(400, "Bad Request: message is too long")],
    error: "400 Bad Request: message is too long",
  },
  { name: "a hang past the timeout", script: ["hang"], error: "timeout" },
  {
    name: "a non-JSON 200",
    script: [{ status: 200, body: "OK", contentType: "text/plain" }],
    error: "200 ok (non-JSON reply)",
  },
  {
    name: "an error description quoting the token",
    script: [apiError(400, `Bad Request: bot${TOKEN} is not a member`)],
    error: "400 Bad Request: bot<redacted> is not a member",
  },
  {
    name: "the second part of a split message failing",
    script: [accepted(), apiError(500, "Internal Server Error")],
    error: "500 Internal Server Error",
    message: "\u{1F600} ".repeat(1500), // 3000 code points, 4500 UTF-16 units: two parts
  },
];

for (const fault of FAULTS) {
  Deno.test(
    `e2e: Bot API fault "${fault.name}" answers 502 stored, one record naming it, no token, ${
      fault.settings ? "redelivery paused" : "delivered later"
    }`,
    async () => {
      await withService({ MESSENGER_TIMEOUT_MS: "500" }, async (service, fake) => {
        fake.script.push(...fault.script);
        const response = await service.post({ message: fault.message ?? fault.name }, "10.7.0.1");
        const answer = await response.text();
        assert.equal(response.status, 502);
        assert.equal(JSON.parse(answer).error, "delivery_failed");
        assert.equal(JSON.parse(answer).stored, true);
        assert.ok(!answer.includes(TOKEN));
        assert.equal(fake.script.length, 0, "every scripted reply was used");
        const sends = () => fake.calls.filter((call) => call.method === "sendMessage").length;
        assert.equal(sends(), fault.script.length, "no retry while the sender waits");
        const records = await service.records();
        assert.equal(records.length, 1, "exactly one record");
        assert.equal(records[0]!.ip, "10.7.0.1");
        assert.equal(records[0]!.messenger_ok, false);
        assert.equal(records[0]!.messenger_error, fault.error);
        const id = service.logs().find((log) => log.event === "contact")?.id;
        assert.match(String(id), /^[0-9a-z]{8}$/);

        const delivered = () =>
          service.logs().some((log) => log.event === "delivered" && log.id === id);
        if (fault.settings) {
          // Waiting is the point: the first retry would come within about a second (back-off
          // with jitter: 0.5–1 s), so none in 2.5 s means redelivery is paused.
          await new Promise((resolve) => setTimeout(resolve, 2500));
        } else {
          // The first retry comes after about a second; poll for it, up to a generous deadline.
          const deadline = Date.now() + 15_000;
          while (!delivered() && Date.now() < deadline) {
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
        const late = fake.delivered.filter((text) => text.includes(`#${id}`));
        if (fault.settings) {
          assert.equal(
            sends(),
            fault.script.length,
            "no retry while the settings are wrong",
          );
          const paused = service.logs().filter((log) => log.event === "delivery_paused");
          assert.equal(paused.length, 1);
          assert.equal(paused[0]!.level, "error");
          assert.equal(typeof paused[0]!.hint, "string");
        } else {
          // Delivered late; a split message goes on from the part that failed, once each.
          if (fault.message === undefined) {
            assert.equal(late.length, 1, "delivered after the fault");
            assert.match(late[0]!, /Delivered late: first attempt failed/);
          } else {
            // (The scripted `accepted()` stood in for the first part's delivery.)
            assert.equal(late.length, 1);
            assert.ok(late[0]!.startsWith(`(2/2) #${id}\n`));
          }
          assert.ok(delivered(), "delivered within 15 s of the fault");
        }
        assertNoTokenLeak(service, answer);
      });
    },
  );
}

Deno.test("e2e: a migrate_to_chat_id reply is logged once with the new chat id", async () => {
  await withService({}, async (service, fake) => {
    fake.script.push(chatMigrated(-1009876543210));
    const response = await service.post({ message: "m" });
    assert.equal(response.status, 502);
    await response.body?.cancel();
    const warnings = service.logs().filter((log) => log.event === "chat_migrated");
    assert.deepEqual(warnings.map((log) => log.new_chat_id), [-1009876543210]);
  });
});

Deno.test("e2e: a Bot API connection cut off mid-response answers 502 and records the cut", async () => {
  const server = startCutOffServer();
  try {
    // The cut-off server stands in for the fake Bot API withService starts (left unused).
    await withService({ MESSENGER_API_URL: server.url }, async (service) => {
      const response = await service.post({ message: "m" });
      const answer = await response.text();
      assert.equal(response.status, 502);
      assert.equal(JSON.parse(answer).error, "delivery_failed");
      assert.ok(server.requests >= 1);
      const records = await service.records();
      assert.equal(records.length, 1);
      assert.equal(records[0]!.messenger_ok, false);
      assert.equal(records[0]!.messenger_error, "network error: reply cut off");
      assertNoTokenLeak(service, answer);
    });
  } finally {
    server.close();
  }
});
