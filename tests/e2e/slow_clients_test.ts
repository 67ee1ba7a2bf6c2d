/**
 * End to end over raw TCP: slow and idle clients against the real service. A body that
 * trickles in is cut off at the read deadline (`BODY_TIMEOUT_MS`, 10 s) with 408, and hundreds
 * of idle or stalled connections do not stop anyone else from being served.
 */
import assert from "node:assert/strict";
import { BODY_TIMEOUT_MS } from "../../lib/http/body.ts";
import { type Service, withService } from "../support/service.ts";

const encoder = new TextEncoder();

function connect(service: Service): Promise<Deno.TcpConn> {
  return Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(service.url).port) });
}

/**
 * Reads one HTTP response: until its headers and `Content-Length` bytes of body arrived, or the
 * peer closed. Never throws. (After answering 408 the server's HTTP layer may keep the socket
 * open to drain the rest of a body the client still sends, so "until closed" would not do.)
 */
async function readResponse(conn: Deno.Conn): Promise<string> {
  const buffer = new Uint8Array(4096);
  let text = "";
  try {
    while (true) {
      const end = text.indexOf("\r\n\r\n");
      const length = text.match(/\r\ncontent-length: (\d+)\r\n/i)?.[1];
      if (end >= 0 && length !== undefined && text.length >= end + 4 + Number(length)) break;
      const n = await conn.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n)); // the answers are ASCII
    }
  } catch {
    // Reset by the server: what arrived is the answer.
  }
  return text;
}

function head(ip: string, length: number, extra = ""): string {
  return `POST /api/contact HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
    `X-Forwarded-For: ${ip}\r\nContent-Length: ${length}\r\n${extra}\r\n`;
}

Deno.test("e2e: a trickling body gets 408 at the read deadline while idle connections do not block others", async () => {
  await withService({}, async (service, fake) => {
    const started = Date.now();
    // The slow-loris: headers promise 200 bytes, then one byte every 300 ms.
    const slow = await connect(service);
    await slow.write(encoder.encode(head("198.51.100.77", 200) + "{"));
    const answer = readResponse(slow);
    let trickling = true;
    const trickle = (async () => {
      while (trickling) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        await slow.write(encoder.encode(" ")).catch(() => (trickling = false));
      }
    })();

    // 300 idle connections: 100 silent, 100 with half a request line, 100 with a stalled body.
    const idle: Deno.TcpConn[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const conn = await connect(service);
        if (i % 3 === 1) await conn.write(encoder.encode("POST /api/contact HTTP/1.1\r\nHost"));
        if (i % 3 === 2) {
          await conn.write(encoder.encode(head(`10.9.${i & 255}.${1 + (i >> 8)}`, 100) + '{"mess'));
        }
        idle.push(conn);
      }
      // Everyone else is still served, promptly. (Three POSTs: the chat's pacer lets a burst of
      // three through at once, then one a second.)
      for (let i = 0; i < 3; i++) {
        const response = await service.post({ message: `served ${i}` }, `10.8.${i}.1`);
        assert.equal(response.status, 200);
        await response.body?.cancel();
      }
      for (let i = 0; i < 20; i++) {
        const health = await fetch(`${service.url}/api/health`);
        assert.equal((await health.json()).ok, true);
      }
      assert.equal(fake.delivered.length, 3);
      assert.ok(Date.now() - started < BODY_TIMEOUT_MS, "served before the slow body timed out");

      const text = await answer;
      trickling = false;
      await trickle;
      const elapsed = Date.now() - started;
      assert.match(text, /^HTTP\/1\.1 408 /);
      assert.match(text, /content-type: application\/json/i);
      assert.match(text, /\{"ok":false,"error":"request_timeout","message":"[^"]+"\}$/);
      assert.ok(elapsed >= BODY_TIMEOUT_MS - 500, `cut off after ${elapsed} ms`);
      assert.ok(elapsed < BODY_TIMEOUT_MS + 5000, `cut off after ${elapsed} ms`);

      // The stalled bodies were cut off at the deadline too; nothing of theirs was recorded.
      const stalled = await Promise.all(
        idle.filter((_, i) => i % 3 === 2).map((conn) => readResponse(conn)),
      );
      for (const reply of stalled) assert.match(reply, /^HTTP\/1\.1 408 /);
    } finally {
      // Open connections would hold up the service's graceful stop.
      trickling = false;
      for (const conn of [slow, ...idle]) {
        try {
          conn.close();
        } catch {
          // Closed already.
        }
      }
    }
    const records = await service.records();
    assert.equal(records.length, 3);
    assert.ok(records.every((record) => String(record.message).startsWith("served ")));
    const timeouts = service.logs().filter((log) => log.result === "request_timeout");
    assert.equal(timeouts.length, 101);
  });
});

Deno.test("e2e: raw requests with odd header bytes and casing get JSON answers", async () => {
  await withService({}, async (service) => {
    const send = async (request: Uint8Array) => {
      const conn = await connect(service);
      await conn.write(request);
      const reply = await readResponse(conn);
      conn.close();
      return reply;
    };
    const body = '{"message":"m"}';
    // A Latin-1 byte and a control-free but non-ASCII value in X-Forwarded-For: the peer is used.
    const odd = new Uint8Array([
      ...encoder.encode(
        "POST /api/contact HTTP/1.1\r\nhOsT: x\r\ncOnTeNt-TyPe: Application/Json\r\n",
      ),
      ...encoder.encode("X-Forwarded-For: 10.0.0."),
      0xff,
      ...encoder.encode(`\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
    ]);
    assert.match(
      await send(odd),
      /^HTTP\/1\.1 200 [\s\S]*\r\n\r\n\{"ok":true,"case_url":"\/api\/case\/[A-Za-z0-9_-]+"\}$/,
    );
    const empty = encoder.encode(head("10.0.0.5", 0, "Connection: close\r\n"));
    assert.match(await send(empty), /^HTTP\/1\.1 400 [\s\S]*"error":"invalid_json"/);
    const [record] = await service.records();
    assert.equal(record!.ip, "127.0.0.1");
  });
});
