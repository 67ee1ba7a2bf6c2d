import assert from "node:assert/strict";
import { decodeJson, isRecord, parseJsonText } from "../../lib/common/json.ts";

Deno.test("decodeJson refuses invalid UTF-8, invalid JSON and survives absurd nesting", () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  assert.deepEqual(decodeJson(new Uint8Array([0x7b, 0xff, 0x7d])), {
    ok: false,
    code: "invalid_encoding",
  });
  for (const text of ["", "{", "{'a':1}", '{"a":1,}', "NaN", "\uFEFF{}x"]) {
    assert.deepEqual(decodeJson(encode(text)), { ok: false, code: "invalid_json" }, text);
  }
  const deep = decodeJson(encode("[".repeat(10_000) + "]".repeat(10_000)));
  assert.equal(deep.ok, true);
  const unclosed = decodeJson(encode("[".repeat(16_000)));
  assert.deepEqual(unclosed, { ok: false, code: "invalid_json" });
});

Deno.test("decodeJson keeps the last of duplicate keys, like JSON.parse", () => {
  const result = decodeJson(new TextEncoder().encode('{"message":"a","message":"b"}'));
  assert.deepEqual(result, { ok: true, value: { message: "b" } });
});

Deno.test("decodeJson keeps a real U+FFFD and refuses every invalid sequence that decodes to one", () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  assert.deepEqual(decodeJson(encode('{"message":"a\uFFFDb"}')), {
    ok: true,
    value: { message: "a\uFFFDb" },
  });
  const invalid = [
    [0xf0, 0x9f, 0x98], // a truncated 4-byte sequence: one U+FFFD for three bytes
    [0xed, 0xa0, 0x80], // an encoded surrogate
    [0xc0, 0xaf], // overlong
    [0xff],
  ];
  for (const bytes of invalid) {
    const body = new Uint8Array([...encode('{"message":"'), ...bytes, ...encode('"}')]);
    assert.deepEqual(decodeJson(body), { ok: false, code: "invalid_encoding" }, `${bytes}`);
  }
});

Deno.test("isRecord is true for JSON objects only", () => {
  assert.equal(isRecord({}), true);
  assert.equal(isRecord(Object.create(null)), true);
  for (const value of [null, [], "x", 1, true, undefined]) assert.equal(isRecord(value), false);
});

Deno.test("parseJsonText gives the value of JSON text, undefined for anything else, and never throws", () => {
  assert.deepEqual(parseJsonText('{"a":[1,null]}'), { a: [1, null] });
  assert.equal(parseJsonText("null"), null);
  for (const bad of ["", "{", "undefined", '{"a":1}x', "[".repeat(100_000)]) {
    assert.equal(parseJsonText(bad), undefined);
  }
});
