/**
 * End to end, the decoy case pages (lib/cases/decoy.ts) of the real service against the fake Bot
 * API: a honeypot hit's `case_url` reads like a real page, takes a write-back, and nothing of it
 * reaches the chat, the backup file or the log.
 *
 * @module
 */
import assert from "node:assert/strict";
import { waitFor, withService } from "../support/service.ts";

const HEADERS = { "x-forwarded-for": "198.51.100.8" };

Deno.test("e2e: a honeypot hit's case page reads like a real one and takes a write-back, and nothing of it reaches the chat", async () => {
  await withService({ TRUSTED_PROXIES: "127.0.0.1/32" }, async (service, fake) => {
    const hit = await service.post({ message: "bot text", website: "http://spam.example" });
    assert.equal(hit.status, 200);
    const { case_url } = await hit.json();
    const read = await fetch(`${service.url}${case_url}`, { headers: HEADERS });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("cache-control"), "no-store");
    assert.ok((await read.text()).includes("bot text"), "its own message, as a real page shows");

    const back = await fetch(`${service.url}${case_url}`, {
      method: "POST",
      headers: { ...HEADERS, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ message: "bot again" }).toString(),
      redirect: "manual",
    });
    assert.equal(back.status, 303);
    assert.equal(back.headers.get("location"), `${case_url}?sent=1`);
    const after = await fetch(`${service.url}${case_url}?sent=1`, { headers: HEADERS });
    const html = await after.text();
    assert.ok(html.includes("bot again") && html.includes("Your message was sent"));

    // A person's message afterwards reaches the chat: the chat was there all along.
    assert.equal((await service.post({ message: "a person" }, "198.51.100.9")).status, 200);
    const sent = () => [...fake.messages.values()].filter((m) => m.from === undefined);
    await waitFor(() => sent().length > 0, 15_000, "the person's message in the chat");
    assert.equal(sent().length, 1);
    assert.ok(sent()[0]!.text.includes("a person"));
    assert.ok(!JSON.stringify(fake.calls).includes("bot "), "no call to the Bot API carries it");
    assert.deepEqual((await service.records()).map((r) => r.message), ["a person"]);
    const token = case_url.slice("/api/case/".length);
    for (const line of [...service.stdout, ...service.stderr]) {
      assert.ok(!line.includes(token) && !line.includes("bot "), "the log holds none of it");
    }
  });
});
