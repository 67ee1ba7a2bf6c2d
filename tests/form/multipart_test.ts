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
    message: "Files are not accepted: contactd relays text only.",
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
