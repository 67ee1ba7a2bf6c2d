import assert from "node:assert/strict";
import {
  emailRecipient,
  maskAddress,
  MAX_ADDRESS,
  MAX_LOCAL_PART,
} from "../../lib/mail/recipient.ts";

Deno.test("a plain address is the recipient, trimmed, as written", () => {
  assert.equal(emailRecipient("carla@example.org"), "carla@example.org");
  assert.equal(
    emailRecipient("  Carla.Rossi+site@mail.example.co.uk "),
    "Carla.Rossi+site@mail.example.co.uk",
  );
  assert.equal(emailRecipient("o'brien@example.ie"), "o'brien@example.ie");
  assert.equal(emailRecipient("a-b_c@xn--bcher-kva.example"), "a-b_c@xn--bcher-kva.example");
});

Deno.test("a contact that is not one plain address is never a recipient", () => {
  for (
    const contact of [
      "",
      "+39 333 1234567",
      "@carla",
      "carla",
      "Carla <carla@example.org>",
      "<carla@example.org>",
      '"carla"@example.org',
      '"a@b"',
      "carla@example.org, boss@example.org",
      "carla@example.org;boss@example.org",
      "carla@example.org boss@example.org",
      "carla@example.org\r\nBcc: boss@example.org",
      "carla@example.org\nBcc: boss@example.org",
      "carla@example.org\r",
      "carla@example.org\u0000",
      "carla@localhost",
      "carla@[127.0.0.1]",
      "carla@127.0.0.1",
      "carla@@example.org",
      "a@b@example.org",
      ".carla@example.org",
      "carla.@example.org",
      "car..la@example.org",
      "carla@example..org",
      "carla@-example.org",
      "carla@example-.org",
      "carla@example.org.",
      "carla(comment)@example.org",
      "carla@example.org (Carla)",
      "user%other@relay.example.org",
      "host!user@relay.example.org",
      "group: carla@example.org;",
      "càrla@example.org",
      "carla@exämple.org",
      "carla@ex ample.org",
      "=?utf-8?q?x?=@example.org\r\n",
    ]
  ) {
    assert.equal(emailRecipient(contact), undefined, JSON.stringify(contact));
  }
});

Deno.test("RFC 5321's lengths bound the local part, each label and the address", () => {
  const local = "a".repeat(MAX_LOCAL_PART);
  assert.equal(emailRecipient(`${local}@example.org`), `${local}@example.org`);
  assert.equal(emailRecipient(`${local}a@example.org`), undefined);
  assert.equal(emailRecipient(`a@${"b".repeat(63)}.org`), `a@${"b".repeat(63)}.org`);
  assert.equal(emailRecipient(`a@${"b".repeat(64)}.org`), undefined);
  const long = `${local}@${"d".repeat(60)}.${"e".repeat(60)}.${"f".repeat(60)}.org`;
  assert.ok(long.length <= MAX_ADDRESS);
  assert.equal(emailRecipient(long), long);
  const tooLong = `${local}@${"d".repeat(60)}.${"e".repeat(60)}.${"f".repeat(60)}.${
    "g".repeat(10)
  }.org`;
  assert.ok(tooLong.length > MAX_ADDRESS);
  assert.equal(emailRecipient(tooLong), undefined);
});

Deno.test("the chat shows an address masked: its first character and its domain", () => {
  assert.equal(maskAddress("carla@example.org"), "c•••@example.org");
  assert.equal(maskAddress("x@example.org"), "x•••@example.org");
  assert.equal(maskAddress("not an address"), "•••");
});
