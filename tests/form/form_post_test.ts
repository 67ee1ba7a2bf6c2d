import assert from "node:assert/strict";
import { decodeForm, parseFormPost } from "../../lib/form/form_post.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("decodeForm decodes + and %XX as UTF-8 and keeps the first of repeated names", () => {
  const fields = decodeForm(bytes("name=Ann+B&message=Hi%21%0D%0A%F0%9F%98%80&name=Other&flag"));
  assert.ok(fields instanceof Map);
  assert.equal(fields.get("name"), "Ann B");
  assert.equal(fields.get("message"), "Hi!\r\n\u{1F600}");
  assert.equal(fields.get("flag"), "");
});

Deno.test("decodeForm refuses invalid UTF-8 and malformed escapes as invalid_encoding", () => {
  for (
    const body of ["message=%FF", "message=%E2%82", "message=%zz", "message=%", "m%ED%A0%80=1"]
  ) {
    assert.deepEqual(decodeForm(bytes(body)), { kind: "invalid", code: "invalid_encoding" }, body);
  }
  assert.deepEqual(decodeForm(new Uint8Array([0x6d, 0x3d, 0xff])), {
    kind: "invalid",
    code: "invalid_encoding",
  });
});

Deno.test("parseFormPost applies the JSON rules: required message, limits, cleaning", () => {
  const ok = parseFormPost(bytes("name=%E2%80%AEAnn&message=++Hello++&other=x"), []);
  assert.deepEqual(ok.result, {
    kind: "valid",
    submission: { name: "Ann", contact: "", message: "Hello", fields: { other: "x" } },
  });
  assert.deepEqual(parseFormPost(bytes("message=+"), []).result, {
    kind: "invalid",
    code: "field_required",
    field: "message",
    message: "message is required.",
  });
  const long = parseFormPost(bytes(`message=m&contact=${"c".repeat(201)}`), []).result;
  assert.equal(long.kind === "invalid" && long.field, "contact");
});

Deno.test("parseFormPost treats a filled honeypot as a honeypot hit, before validation", () => {
  const post = parseFormPost(bytes(`website=http%3A%2F%2Fspam&message=${"a".repeat(5000)}`), []);
  assert.deepEqual(post.result, { kind: "honeypot", message: "a".repeat(4000) });
  assert.equal(parseFormPost(bytes("website=&message=hi"), []).result.kind, "valid");
  assert.equal(parseFormPost(bytes("website=+&message=hi"), []).result.kind, "valid");
});

Deno.test("parseFormPost reads only safe redirect targets, the first value of each", () => {
  const post = parseFormPost(
    bytes(
      "message=hi&_redirect=%2Fthanks&_redirect=%2F%2Fevil.com&_redirect_error=https%3A%2F%2Fevil.com",
    ),
    ["https://site.example"],
  );
  assert.deepEqual(post.targets, { success: "/thanks" });
  const crossSite = parseFormPost(
    bytes("message=hi&_redirect_error=https%3A%2F%2Fsite.example%2Fsorry"),
    ["https://site.example"],
  );
  assert.deepEqual(crossSite.targets, { error: "https://site.example/sorry" });
});
