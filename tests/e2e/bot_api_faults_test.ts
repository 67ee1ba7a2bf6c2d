/**
 * End to end: every way the Bot API can fail. For each the sender gets a true error (success
 * only if every part was delivered), exactly one record is written with `messenger_ok:false`
 * and a useful `messenger_error`, and the token is in no answer, record or log line.
 */
import assert from "node:assert/strict";
import {
  accepted,
  apiError,
  chatMigrated,
  type FakeReply,
  htmlError,
  startCutOffServer,
  tooManyRequests,
} from "../support/fake_bot_api.ts";
import { assertNoTokenLeak, TOKEN, withService } from "../support/service.ts";

interface Fault {
  readonly name: string;
  readonly script: Array<FakeReply | "hang">;
  /** The record's `messenger_error`, exactly. */
  readonly error: string;
  readonly message?: string;
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
  { name: "401 bad token", script: [apiError(401, "Unauthorized")], error: "401 Unauthorized" },
  {
    name: "400 chat not found",
    script: [apiError(400, "Bad Request: chat not found")],
    error: "400 Bad Request: chat not found",
  },
  {
    name: "400 with migrate_to_chat_id",
    script: [chatMigrated(-1009876543210)],
    error: "400 Bad Request: group chat was upgraded to a supergroup chat",
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
  // Last: for the next 60 s no Bot API call is made at all (lib/backoff.ts).
  {
    name: "429 with retry_after 60 (not waited)",
    script: [tooManyRequests(60)],
    error: "429 Too Many Requests: retry after 60",
  },
];

Deno.test("e2e: every Bot API fault answers 502 delivery_failed with one record naming it and no token", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "500" }, async (service, fake) => {
    for (const [i, fault] of FAULTS.entries()) {
      const calls = fake.calls.length;
      fake.script.push(...fault.script);
      const response = await service.post({ message: fault.message ?? fault.name }, `10.7.${i}.1`);
      const answer = await response.text();
      assert.equal(response.status, 502, fault.name);
      assert.equal(JSON.parse(answer).error, "delivery_failed", fault.name);
      assert.ok(!answer.includes(TOKEN), fault.name);
      assert.equal(fake.script.length, 0, `${fault.name}: every scripted reply was used`);
      assert.equal(fake.calls.length - calls, fault.script.length, `${fault.name}: no retry`);
      const records = await service.records();
      assert.equal(records.length, i + 1, `${fault.name}: exactly one record`);
      const record = records[i]!;
      assert.equal(record.ip, `10.7.${i}.1`);
      assert.equal(record.messenger_ok, false, fault.name);
      assert.equal(record.messenger_error, fault.error, fault.name);
    }
    const warnings = service.logs().filter((log) => log.event === "chat_migrated");
    assert.deepEqual(warnings.map((log) => log.new_chat_id), [-1009876543210]);
    assert.equal(
      service.logs().filter((log) => log.event === "delivery_failed").length,
      FAULTS.length,
    );
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
      assert.equal(server.requests, 1);
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
