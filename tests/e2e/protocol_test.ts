/**
 * End to end over raw TCP: what Deno 2.9.6's HTTP layer answers before contactd sees a request
 * (SECURITY.md, "What the runtime answers before contactd sees a request"), and `Host` headers
 * that URL parsing refuses.
 */
import assert from "node:assert/strict";
import { type Service, withService } from "../support/service.ts";

const encoder = new TextEncoder();
const BODY = '{"message":"m"}';

/** How an exchange ended: the server closed, reset, or we gave up waiting. */
interface Exchange {
  readonly text: string;
  readonly end: "closed" | "reset" | "timeout";
}

/** Sends `request` on a new connection and reads until the server closes it (or `waitMs` pass). */
async function exchange(service: Service, request: string, waitMs = 5000): Promise<Exchange> {
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(service.url).port),
  });
  let end: Exchange["end"] = "timeout";
  const timer = setTimeout(() => conn.close(), waitMs);
  let text = "";
  try {
    await conn.write(encoder.encode(request));
    const buffer = new Uint8Array(65536);
    for (let n; (n = await conn.read(buffer)) !== null;) {
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
    end = "closed";
  } catch (error) {
    if (error instanceof Deno.errors.ConnectionReset) end = "reset";
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
  }
  return { text, end };
}

const post = (headers: string, body = BODY) =>
  `POST /api/contact HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}` +
  `Connection: close\r\n\r\n${body}`;

const chunked = (body: string) => `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;

const fields = (count: number) => {
  let text = "";
  for (let i = 0; i < count; i++) text += `X-Field-${i}: v\r\n`;
  return text;
};

/** Deno's own refusal: a 400 with an empty body, and the connection closed. */
function assertRuntime400({ text, end }: Exchange, what: string) {
  assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/, what);
  assert.match(text, /\r\ncontent-length: 0\r\n/i, what);
  assert.ok(text.endsWith("\r\n\r\n"), `${what}: an empty body`);
  assert.ok(!/content-type/i.test(text), what);
  assert.notEqual(end, "timeout", what);
}

/** contactd's own answer: `status` with a JSON body. */
function assertContactd({ text }: Exchange, status: number, what: string) {
  assert.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), `${what}: ${text.slice(0, 200)}`);
  assert.match(text, /\r\ncontent-type: application\/json\r\n/i, what);
  assert.match(text, /\r\n\r\n\{"ok":/, what);
}

const contactLines = (service: Service) =>
  service.logs().filter((log) => String(log.event).startsWith("contact")).length;

Deno.test("e2e: an invalid Host header is answered 400 invalid_host on every route (RFC 9112 §3.2), one tallied summary, no line per request", async () => {
  await withService({}, async (service) => {
    // What Deno's HTTP parser lets through to contactd (a space or "/" it refuses itself).
    const hosts = ["[bad", "%zz", "[::1", "[1::2::3]", "a?b", "x:99999", "[1.2.3.4]"];
    for (const [i, host] of hosts.entries()) {
      const health = await exchange(
        service,
        `GET /api/health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      );
      assertContactd(health, 400, `GET with Host: ${host}`);
      const contact = await exchange(
        service,
        `POST /api/contact HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
          `X-Forwarded-For: 198.51.100.${i}\r\nContent-Length: ${BODY.length}\r\n` +
          `Connection: close\r\n\r\n${BODY}`,
      );
      assertContactd(contact, 400, `POST with Host: ${host}`);
      assert.match(contact.text, /"error":"invalid_host"/);
    }
    // A valid Host (and none, HTTP/1.0) is served.
    const valid = await exchange(
      service,
      "GET /api/health HTTP/1.1\r\nHost: [::1]:8787\r\nConnection: close\r\n\r\n",
    );
    assertContactd(valid, 200, "Host: [::1]:8787");
    const none = await exchange(service, "GET /api/health HTTP/1.0\r\n\r\n");
    assert.match(none.text, /^HTTP\/1\.[01] 200 /, none.text.slice(0, 100));
    assert.deepEqual(await service.records(), []);
    assert.equal(contactLines(service), 0, "no line per request");
    assert.equal(await service.stop(), 0);
    const summaries = service.logs().filter((log) => log.event === "contact_summary");
    assert.equal(summaries.length, 1);
    assert.equal(summaries[0]!.invalid_host, hosts.length * 2);
    assert.deepEqual(service.logs().filter((log) => log.level === "error"), []);
    assert.ok(!service.stderr.join("\n").includes("[bad"));
  });
});

Deno.test("e2e: malformed framing gets the runtime's empty 400 and never reaches contactd", async () => {
  await withService({}, async (service) => {
    const cases: Array<[string, string]> = [
      [
        "Transfer-Encoding and Content-Length",
        post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", chunked(BODY)),
      ],
      [
        "two different Content-Lengths",
        post(`Content-Length: ${BODY.length}\r\nContent-Length: ${BODY.length + 1}\r\n`),
      ],
      ["a negative Content-Length", post("Content-Length: -1\r\n")],
      ["a Transfer-Encoding other than chunked last", post("Transfer-Encoding: gzip\r\n")],
      ["129 header fields", `GET /api/health HTTP/1.1\r\n${fields(128)}Connection: close\r\n\r\n`],
      [
        "2,000 header fields",
        `GET /api/health HTTP/1.1\r\n${fields(1999)}Connection: close\r\n\r\n`,
      ],
      [
        "a head over 64 KiB",
        `GET /api/health HTTP/1.1\r\nX-Long: ${"a".repeat(70_000)}\r\nConnection: close\r\n\r\n`,
      ],
      ["two Host headers", "GET /api/health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
      ["a space in a header name", "GET /api/health HTTP/1.1\r\nX-Bad Name: v\r\n\r\n"],
      ["a folded header line", "GET /api/health HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"],
      ["an unknown HTTP version", "GET /api/health HTTP/9.9\r\nHost: a\r\n\r\n"],
      ["a request line that is no request line", "GARBAGE\r\n\r\n"],
    ];
    for (const [what, request] of cases) assertRuntime400(await exchange(service, request), what);
    assert.equal(contactLines(service), 0);
    assert.equal((await service.records()).length, 0);
    assert.deepEqual(service.logs().filter((log) => log.level !== "info"), []);
  });
});

Deno.test("e2e: 128 header fields, two equal Content-Lengths and 'gzip, chunked' are passed to contactd", async () => {
  await withService({}, async (service) => {
    const many = await exchange(
      service,
      `GET /api/health HTTP/1.1\r\n${fields(127)}Connection: close\r\n\r\n`,
    );
    assertContactd(many, 200, "128 header fields");
    const twice = post(`Content-Length: ${BODY.length}\r\nContent-Length: ${BODY.length}\r\n`);
    assertContactd(await exchange(service, twice), 200, "two equal Content-Lengths");
    // The chunked framing is undone; the gzip coding is not (contactd reads the bytes as sent).
    const coded = post("Transfer-Encoding: gzip, chunked\r\n", chunked(BODY));
    assertContactd(await exchange(service, coded), 200, "gzip, chunked");
    assert.deepEqual((await service.records()).map((record) => record.message), ["m", "m"]);
  });
});

Deno.test("e2e: a bad chunk size closes the connection without any answer, and nothing is logged", async () => {
  await withService({}, async (service) => {
    const before = service.logs().length;
    const { text, end } = await exchange(
      service,
      post("Transfer-Encoding: chunked\r\n", `zz\r\n${BODY}\r\n0\r\n\r\n`),
    );
    assert.equal(text, "");
    assert.equal(end, "closed");
    assert.equal((await service.records()).length, 0);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(service.logs().length, before);
  });
});

Deno.test("e2e: Expect: 100-continue with a 1 MB Content-Length gets '100 Continue', then contactd's 413 JSON", async () => {
  await withService({}, async (service) => {
    const { text, end } = await exchange(
      service,
      post("Expect: 100-continue\r\nContent-Length: 1048576\r\n", ""),
      2000,
    );
    // Despite `connection: close`, the runtime keeps the connection for the announced body.
    assert.equal(end, "timeout");
    assert.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 413 Payload Too Large\r\n/);
    assert.match(text, /\r\n\r\n\{"ok":false,"error":"payload_too_large",/);
    assert.equal((await service.records()).length, 0);
  });
});
