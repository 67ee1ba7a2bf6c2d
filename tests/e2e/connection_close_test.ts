/**
 * The raw bytes of 413 and 408 answers through Deno's HTTP server: the body is left unread, so
 * the connection must close, announced by exactly one `connection: close` header (Deno's HTTP
 * layer writes it; a second one from the handler doubled it).
 */
import assert from "node:assert/strict";
import { setup } from "../support/handler_setup.ts";

/** Sends `head` then `body` over a fresh connection; returns the response's text. */
async function exchange(
  port: number,
  head: string,
  body: string,
  afterSend: () => void = () => {},
): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const encoder = new TextEncoder();
  await conn.write(encoder.encode(head));
  if (body !== "") await conn.write(encoder.encode(body));
  afterSend();
  let text = "";
  const buffer = new Uint8Array(65536);
  const timer = setTimeout(() => conn.close(), 5000);
  try {
    // Until the whole answer (its content-length) has arrived, or the server closes.
    while (!complete(text)) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    // Closed by the timer, or reset after the answer: the text read so far decides.
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // already closed
    }
  }
  return text;
}

function complete(text: string): boolean {
  const end = text.indexOf("\r\n\r\n");
  const length = /^content-length: (\d+)$/im.exec(text.slice(0, end));
  return end >= 0 && length !== null && text.length - end - 4 >= Number(length[1]);
}

function head(extra: string): string {
  return "POST /api/contact HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n" +
    `x-forwarded-for: 198.51.100.1\r\n${extra}\r\n`;
}

function headers(text: string): string[] {
  return text.slice(0, text.indexOf("\r\n\r\n")).split("\r\n").slice(1);
}

async function withServer(
  deadline: AbortController,
  test: (port: number) => Promise<void>,
): Promise<void> {
  const { handler } = setup({ bodyDeadline: () => deadline.signal });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, handler);
  try {
    await test(server.addr.port);
  } finally {
    await server.shutdown();
  }
}

const oversized = "x".repeat(20_000);

for (
  const [name, request, body] of [
    ["declared too large", head("content-length: 20000\r\n"), "{"],
    ["sent too large", head("content-length: 20000\r\n"), oversized],
    [
      "chunked too large",
      head("transfer-encoding: chunked\r\n"),
      `${(20_000).toString(16)}\r\n${oversized}\r\n0\r\n\r\n`,
    ],
  ] as const
) {
  Deno.test(`POST /api/contact ${name} gets 413 with exactly one connection: close`, async () => {
    await withServer(new AbortController(), async (port) => {
      const text = await exchange(port, request, body);
      assert.match(text, /^HTTP\/1\.1 413 /);
      const close = headers(text).filter((line) => /^connection:/i.test(line));
      assert.deepEqual(close.map((line) => line.toLowerCase()), ["connection: close"], text);
    });
  });
}

for (
  const [name, request, body] of [
    ["a declared body", head("content-length: 100\r\n"), "{"],
    ["a chunked body", head("transfer-encoding: chunked\r\n"), "1\r\n{\r\n"],
  ] as const
) {
  Deno.test(`POST /api/contact with ${name} that stops arriving gets 408 with exactly one connection: close`, async () => {
    const deadline = new AbortController();
    await withServer(deadline, async (port) => {
      const text = await exchange(
        port,
        request,
        body,
        () => setTimeout(() => deadline.abort(), 100),
      );
      assert.match(text, /^HTTP\/1\.1 408 /);
      const close = headers(text).filter((line) => /^connection:/i.test(line));
      assert.deepEqual(close.map((line) => line.toLowerCase()), ["connection: close"], text);
    });
  });
}
