/**
 * A corpus of hostile requests against the pure handler. Each one gets a documented status with
 * a JSON body, nothing throws, and only valid submissions notify and record.
 */
import assert from "node:assert/strict";
import { ERRORS } from "../../lib/http/errors.ts";
import { fakeHandler, PROXY } from "../support/fake_handler.ts";

const enc = (text: string) => new TextEncoder().encode(text);
const bytes = (...values: number[]) => new Uint8Array(values);

interface Case {
  readonly name: string;
  readonly body?: string | Uint8Array<ArrayBuffer>;
  /** Headers as pairs, so duplicates and odd casing survive; default a JSON content type. */
  readonly headers?: Array<[string, string]>;
  readonly status: number;
  /** The error code of a refusal. */
  readonly error?: string;
  /** Fields the single record must have (its presence means: notified and recorded). */
  readonly record?: Record<string, string>;
}

const JSON_TYPE: [string, string] = ["content-type", "application/json"];
const deep = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

const CORPUS: readonly Case[] = [
  // Malformed JSON
  { name: "unterminated object", body: '{"message":"m"', status: 400, error: "invalid_json" },
  { name: "trailing comma", body: '{"message":"m",}', status: 400, error: "invalid_json" },
  { name: "single quotes", body: "{'message':'m'}", status: 400, error: "invalid_json" },
  { name: "trailing garbage", body: '{"message":"m"} x', status: 400, error: "invalid_json" },
  { name: "NaN", body: "NaN", status: 400, error: "invalid_json" },
  { name: "a bare NUL", body: "\0", status: 400, error: "invalid_json" },
  { name: "missing body", status: 400, error: "invalid_json" },
  { name: "blank body", body: "  \n", status: 400, error: "invalid_json" },
  // Wrong types
  { name: "an array", body: '[{"message":"m"}]', status: 400, error: "invalid_body" },
  { name: "a string", body: '"message"', status: 400, error: "invalid_body" },
  { name: "null", body: "null", status: 400, error: "invalid_body" },
  { name: "message a number", body: '{"message":1}', status: 400, error: "field_type" },
  { name: "message an array", body: '{"message":["m"]}', status: 400, error: "field_type" },
  { name: "message an object", body: '{"message":{"m":1}}', status: 400, error: "field_type" },
  { name: "name false", body: '{"name":false,"message":"m"}', status: 400, error: "field_type" },
  { name: "message blank", body: '{"message":" \\t\\n "}', status: 400, error: "field_required" },
  // Prototype keys: own properties only, nothing reaches Object.prototype
  {
    name: "__proto__ carrying the message",
    body: '{"__proto__":{"message":"m"}}',
    status: 400,
    error: "field_required",
  },
  {
    name: "__proto__ carrying the honeypot",
    body: '{"__proto__":{"website":"x"},"message":"real"}',
    status: 200,
    record: { message: "real" },
  },
  {
    name: "constructor.prototype",
    body: '{"constructor":{"prototype":{"polluted":1}},"message":"m"}',
    status: 400,
    error: "field_type",
  },
  // Control characters, lone surrogates, bidi overrides
  {
    name: "NUL and escapes",
    body: '{"name":"a\\u0000b","contact":"c\\r\\nFrom: x","message":"x\\u0000y\\u001b[31m"}',
    status: 200,
    record: { name: "a b", contact: "c  From: x", message: "xy[31m" },
  },
  {
    name: "lone surrogates",
    body: '{"name":"\\udc00n","message":"\\ud800x"}',
    status: 200,
    record: { name: "\ufffdn", message: "\ufffdx" },
  },
  {
    name: "RTL override in the name",
    body: '{"name":"\\u202Eevil\\u2066","message":"m"}',
    status: 200,
    record: { name: "evil" },
  },
  // Nesting and numbers
  { name: "10 000-deep array (over 16 KiB)", body: deep(10_000), status: 413 },
  {
    name: "10 000-deep unclosed array",
    body: "[".repeat(10_000),
    status: 400,
    error: "invalid_json",
  },
  {
    name: "8000-deep array in an extra field",
    body: `{"message":"m","x":${deep(8000)}}`,
    status: 400,
    error: "field_type",
  },
  { name: "message 1e400", body: '{"message":1e400}', status: 400, error: "field_type" },
  {
    name: "huge integer",
    body: `{"message":${"9".repeat(400)}}`,
    status: 400,
    error: "field_type",
  },
  { name: "honeypot 1e400", body: '{"website":1e400,"message":"m"}', status: 200 },
  // Duplicate keys: the last one wins, as in every JSON parser a form would meet
  {
    name: "duplicate message",
    body: '{"message":"a","message":"b"}',
    status: 200,
    record: { message: "b" },
  },
  // Encoding
  { name: "invalid UTF-8", body: bytes(0x7b, 0xff, 0x7d), status: 400, error: "invalid_encoding" },
  {
    name: "overlong UTF-8 slash",
    body: new Uint8Array([...enc('{"message":"'), 0xc0, 0xaf, ...enc('"}')]),
    status: 400,
    error: "invalid_encoding",
  },
  {
    name: "UTF-8-encoded surrogate (CESU-8)",
    body: new Uint8Array([...enc('{"message":"'), 0xed, 0xa0, 0x80, ...enc('"}')]),
    status: 400,
    error: "invalid_encoding",
  },
  {
    name: "truncated multi-byte sequence",
    body: new Uint8Array([...enc('{"message":"'), 0xe2, 0x82]),
    status: 400,
    error: "invalid_encoding",
  },
  { name: "UTF-8 BOM", body: '\ufeff{"message":"m"}', status: 200, record: { message: "m" } },
  // Content types and header casing
  { name: "no content type", body: '{"message":"m"}', headers: [], status: 415 },
  {
    name: "empty content type",
    body: '{"message":"m"}',
    headers: [["content-type", ""]],
    status: 415,
  },
  {
    name: "text/plain",
    body: '{"message":"m"}',
    headers: [["content-type", "text/plain"]],
    status: 415,
  },
  {
    name: "json-patch",
    body: '{"message":"m"}',
    headers: [["content-type", "application/json-patch+json"]],
    status: 415,
  },
  {
    name: "two content types",
    body: '{"message":"m"}',
    headers: [["content-type", "application/json"], ["Content-Type", "text/html"]],
    status: 415,
  },
  {
    name: "shouting header names and values",
    body: '{"message":"m"}',
    headers: [
      ["CONTENT-TYPE", "APPLICATION/JSON; CHARSET=UTF-8"],
      ["X-FORWARDED-FOR", "203.0.113.9"],
    ],
    status: 200,
    record: { ip: "203.0.113.9" },
  },
  // Garbage in the trusted proxy's X-Forwarded-For: the peer is used, never an empty or
  // arbitrary key, never an entry left of the garbage
  ...[
    "not-an-ip",
    "",
    " ",
    "999.1.1.1",
    "1.2.3.4:80",
    "1.2.3.4, 5.6.7.8:80",
    "x".repeat(8000),
    "\t",
  ]
    .map((value): Case => ({
      name: `X-Forwarded-For ${JSON.stringify(value.slice(0, 20))}`,
      body: '{"message":"m"}',
      headers: [JSON_TYPE, ["x-forwarded-for", value]],
      status: 200,
      record: { ip: "127.0.0.1" },
    })),
  {
    name: "client-written X-Forwarded-For entries left of the proxy's",
    body: '{"message":"m"}',
    headers: [JSON_TYPE, ["x-forwarded-for", "6.6.6.6, 203.0.113.1"], ["X-Real-Ip", "6.6.6.7"]],
    status: 200,
    record: { ip: "203.0.113.1" },
  },
  {
    name: "a forged X-Real-IP (not read by default)",
    body: '{"message":"m"}',
    headers: [JSON_TYPE, ["x-real-ip", "203.0.113.1"]],
    status: 200,
    record: { ip: "127.0.0.1" },
  },
  {
    name: "empty X-Forwarded-For entries",
    body: '{"message":"m"}',
    headers: [JSON_TYPE, ["x-forwarded-for", " , ,, "]],
    status: 200,
    record: { ip: "127.0.0.1" },
  },
];

for (const c of CORPUS) {
  Deno.test(`hostile input: ${c.name} answers ${c.status}${c.error ? ` ${c.error}` : ""}`, async () => {
    const { handler, state } = fakeHandler();
    const headers = new Headers();
    for (const [name, value] of c.headers ?? [JSON_TYPE]) headers.append(name, value);
    const request = new Request("http://localhost/api/contact", {
      method: "POST",
      headers,
      ...(c.body === undefined ? {} : { body: c.body }),
    });
    const response = await handler(request, PROXY);
    assert.equal(response.status, c.status);
    assert.equal(response.headers.get("content-type"), "application/json");
    const answer = await response.json();
    if (c.status === 200) {
      assert.deepEqual(answer, { ok: true });
    } else {
      assert.equal(answer.ok, false);
      assert.equal(ERRORS[answer.error as keyof typeof ERRORS]?.status, c.status);
      if (c.error) assert.equal(answer.error, c.error);
    }
    assert.equal(state.lines.length, c.record ? 1 : 0, "records");
    assert.equal(state.texts.length, c.record ? 1 : 0, "notifications");
    if (c.record) {
      const record = JSON.parse(state.lines[0]!);
      for (const [field, value] of Object.entries(c.record)) assert.equal(record[field], value);
      assert.notEqual(record.ip.trim(), "", "empty address");
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(({} as Record<string, unknown>).website, undefined);
    assert.equal(({} as Record<string, unknown>).message, undefined);
  });
}
