/**
 * A minimal HTTP/1.1 client for tests that must choose the client's source address (fetch
 * cannot): one request per connection, `Connection: close`, optionally a chunked body.
 *
 * @module
 */
import net from "node:net";
import { Buffer } from "node:buffer";

/** A parsed response. */
export interface RawResponse {
  readonly status: number;
  readonly headers: Map<string, string>;
  readonly body: string;
}

/** One HTTP/1.1 exchange with 127.0.0.1:`port` from the local address `from`. */
export function request(
  port: number,
  from: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  chunked = false,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: from });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("end", () => {
      try {
        resolve(parseResponse(Buffer.concat(chunks).toString("utf8")));
      } catch (error) {
        reject(error);
      }
    });
    const lines = [`${method} ${path} HTTP/1.1`, "Host: example.org", "Connection: close"];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    if (body !== undefined && !chunked) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
    if (chunked) lines.push("Transfer-Encoding: chunked");
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    if (body !== undefined) {
      socket.write(
        chunked ? `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n` : body,
      );
    }
  });
}

function parseResponse(text: string): RawResponse {
  const split = text.indexOf("\r\n\r\n");
  const [statusLine = "", ...headerLines] = text.slice(0, split).split("\r\n");
  const headers = new Map(headerLines.map((line) => {
    const colon = line.indexOf(":");
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()] as const;
  }));
  let body = text.slice(split + 4);
  if (headers.get("transfer-encoding") === "chunked") {
    let decoded = "";
    for (let rest = body;;) {
      const eol = rest.indexOf("\r\n");
      const size = parseInt(rest.slice(0, eol), 16);
      if (!(size > 0)) break;
      decoded += rest.slice(eol + 2, eol + 2 + size);
      rest = rest.slice(eol + 2 + size + 2);
    }
    body = decoded;
  }
  return { status: Number(statusLine.split(" ")[1]), headers, body };
}
