import assert from "node:assert/strict";
import { decodeMultipart } from "../../lib/form/multipart.ts";

/** A multipart body as a browser sends it, with its Content-Type. */
async function encode(form: FormData): Promise<[Uint8Array, string]> {
  const request = new Request("http://localhost/", { method: "POST", body: form });
  return [new Uint8Array(await request.arrayBuffer()), request.headers.get("content-type")!];
}

function form(entries: [string, string | File][]): FormData {
  const data = new FormData();
  for (const [name, value] of entries) data.append(name, value);
  return data;
}

Deno.test("decodeMultipart gives the text parts as pairs, in order, repeated names kept", async () => {
  const [bytes, type] = await encode(
    form([["name", "Ann"], ["topics", "a"], ["message", "Hi\r\nthere ✓"], ["topics", "b"]]),
  );
  assert.deepEqual(await decodeMultipart(bytes, type), {
    kind: "pairs",
    pairs: [["name", "Ann"], ["topics", "a"], ["message", "Hi\r\nthere ✓"], ["topics", "b"]],
  });
});

Deno.test("decodeMultipart refuses a file part with file_not_accepted naming its field", async () => {
  const file = new File(["%PDF-1.7"], "cv.pdf", { type: "application/pdf" });
  const [bytes, type] = await encode(form([["message", "m"], ["attachment", file]]));
  assert.deepEqual(await decodeMultipart(bytes, type), {
    kind: "invalid",
    code: "file_not_accepted",
    field: "attachment",
    pairs: [["message", "m"]],
  });
  // A chosen file that is empty is still a file.
  const [empty, emptyType] = await encode(form([["a", new File([], "empty.txt")]]));
  assert.equal((await decodeMultipart(empty, emptyType)).kind, "invalid");
});

Deno.test("decodeMultipart leaves out an empty file input (no file chosen)", async () => {
  const [bytes, type] = await encode(form([["message", "m"], ["attachment", new File([], "")]]));
  assert.deepEqual(await decodeMultipart(bytes, type), {
    kind: "pairs",
    pairs: [["message", "m"]],
  });
});

Deno.test("decodeMultipart refuses a body without a boundary or not in parts: invalid_multipart", async () => {
  const text = new TextEncoder().encode("message=m");
  for (const type of ["multipart/form-data", "multipart/form-data; boundary=x"]) {
    assert.deepEqual(await decodeMultipart(text, type), {
      kind: "invalid",
      code: "invalid_multipart",
    });
  }
});

Deno.test("decodeMultipart refuses invalid UTF-8 in a part instead of replacing it", async () => {
  const head = '--b\r\nContent-Disposition: form-data; name="message"\r\n\r\nhi ';
  const bytes = new Uint8Array([
    ...new TextEncoder().encode(head),
    0xff,
    ...new TextEncoder().encode("\r\n--b--\r\n"),
  ]);
  assert.deepEqual(await decodeMultipart(bytes, "multipart/form-data; boundary=b"), {
    kind: "invalid",
    code: "invalid_encoding",
  });
});

const enc = (text: string) => new TextEncoder().encode(text);
const TYPE = "multipart/form-data; boundary=XX";
const part = (headers: string, value: string) => `--XX\r\n${headers}\r\n\r\n${value}\r\n`;
const MESSAGE = part('Content-Disposition: form-data; name="message"', "hi");

Deno.test("decodeMultipart: a part with filename* or a Content-Type other than text/plain is a file, 415", async () => {
  for (
    const headers of [
      `Content-Disposition: form-data; name="f"; filename*=UTF-8''a.txt`,
      'Content-Disposition: form-data; name="f"\r\nContent-Type: application/pdf',
      'Content-Disposition: form-data; name="f"\r\nContent-Type: text/html; charset=utf-8',
    ]
  ) {
    const result = await decodeMultipart(enc(MESSAGE + part(headers, "data") + "--XX--\r\n"), TYPE);
    assert.equal(result.kind, "invalid", headers);
    if (result.kind !== "invalid") continue;
    assert.deepEqual([result.code, result.field], ["file_not_accepted", "f"], headers);
  }
  // text/plain, any case and with its charset, is text.
  const plain = part(
    'Content-Disposition: form-data; name="f"\r\nContent-Type: Text/Plain; charset=UTF-8',
    "t",
  );
  assert.deepEqual(await decodeMultipart(enc(MESSAGE + plain + "--XX--\r\n"), TYPE), {
    kind: "pairs",
    pairs: [["message", "hi"], ["f", "t"]],
  });
});

Deno.test("decodeMultipart: a part without a name or with a line break in its name is invalid_multipart, never dropped", async () => {
  for (
    const headers of [
      "Content-Disposition: form-data",
      'Content-Disposition: form-data; name=""',
      'Content-Disposition: form-data; name="a\nb"',
      'Content-Disposition: form-data; name="a\rb"',
    ]
  ) {
    const result = await decodeMultipart(enc(MESSAGE + part(headers, "x") + "--XX--\r\n"), TYPE);
    assert.equal(result.kind, "invalid", JSON.stringify(headers));
    if (result.kind !== "invalid") continue;
    assert.equal(result.code, "invalid_multipart", JSON.stringify(headers));
    assert.deepEqual(result.pairs, [["message", "hi"]]);
  }
  // Without its closing delimiter a body's parts are not all there.
  assert.equal((await decodeMultipart(enc(MESSAGE), TYPE)).kind, "invalid");
});
