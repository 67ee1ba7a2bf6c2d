/**
 * The classifier's tokens: what a sender controls, folded and segmented (text without spaces
 * too), shapes for numbers, links and addresses, a prefix per field, and bounds for hostile input.
 */
import assert from "node:assert/strict";
import { fold, hostOf, TOKEN_LIMITS, tokens } from "../../lib/learn/tokens.ts";
import { mulberry32 } from "../support/random.ts";

Deno.test("tokens fold case and compatibility forms: FREE, Free and full-width ＦＲＥＥ are one word", () => {
  assert.deepEqual(tokens({ message: "FREE Free ＦＲＥＥ" }), ["free", "free", "free"]);
  assert.equal(fold("Straße ＡＢＣ"), "straße abc");
});

Deno.test("text written without spaces is split into words: Chinese, Japanese, Thai", () => {
  const chinese = tokens({ message: "我喜欢吃苹果" });
  assert.ok(chinese.includes("苹果") && chinese.length >= 3, chinese.join(" "));
  const japanese = tokens({ message: "東京に行きました" });
  assert.ok(japanese.includes("東京") && japanese.length >= 3, japanese.join(" "));
  const thai = tokens({ message: "ภาษาไทยง่ายนิดเดียว" });
  assert.ok(thai.includes("ภาษา") && thai.includes("ไทย"), thai.join(" "));
  // Scripts with spaces keep their words whole, whatever the alphabet.
  assert.deepEqual(tokens({ message: "Привет, мир" }), ["привет", "p:,", "мир"]);
});

Deno.test("numbers, links and email addresses become shapes: digits counted, hosts and paths kept", () => {
  const found = tokens({
    message:
      "Only $1,000,000! See https://WWW.Shop.Example.com:8443/Cheap-Offer?id=77 or write to Bob@Spam.Example.",
  });
  assert.deepEqual(found, [
    "url:shop.example.com",
    "url:example.com",
    "tld:com",
    "path:cheap",
    "path:offer",
    "path:id",
    "path:#2",
    "email:spam.example",
    "only",
    "p:$",
    "#7",
    "p:!",
    "see",
    "or",
    "write",
    "to",
  ]);
  assert.equal(hostOf("WWW.Example.COM:80."), "example.com");
});

Deno.test("a link's path gives at most its first words", () => {
  const path = Array.from({ length: 50 }, (_, i) => `w${"x".repeat(i % 5)}`).join("/");
  const found = tokens({ message: `http://example.org/${path}` });
  assert.equal(found.filter((token) => token.startsWith("path:")).length, TOKEN_LIMITS.pathWords);
});

Deno.test("each field's tokens carry its prefix, and the contact gives only its domain", () => {
  const found = tokens({
    message: "hello",
    name: "Ann Example",
    contact: "ann.private@Mail.Example.org",
    fields: { Company: "Acme SEO", "Phone number": "+1 555 0100" },
  });
  assert.deepEqual(found, [
    "hello",
    "name:ann",
    "name:example",
    "contact:mail.example.org",
    "contact:.org",
    "company:acme",
    "company:seo",
    "phonenumber:p:+",
    "phonenumber:#1",
    "phonenumber:#3",
    "phonenumber:#4",
  ]);
  assert.deepEqual(tokens({ message: "", contact: "+44 20 7946 0000" }), ["contact:phone"]);
  assert.deepEqual(tokens({ message: "", contact: "" }), ["contact:none"]);
  assert.deepEqual(tokens({ message: "", contact: "@ann on the forum" }), ["contact:other"]);
});

Deno.test("a word longer than the limit becomes its shape, not a token of its own", () => {
  const long = "x".repeat(TOKEN_LIMITS.wordChars + 1);
  assert.deepEqual(tokens({ message: `${long} ok` }), ["long:2", "ok"]);
});

Deno.test("a 16 KiB message of one repeated word gives at most the token cap", () => {
  const message = "spam ".repeat(16 * 1024 / 5);
  const found = tokens({ message, name: "spam ".repeat(100), fields: { a: "spam spam" } });
  assert.equal(found.length, TOKEN_LIMITS.tokens);
  assert.ok(found.every((token) => token === "spam"));
});

Deno.test("16 KiB of random Unicode gives at most the token cap, each token short", () => {
  const random = mulberry32(31);
  for (let round = 0; round < 5; round++) {
    const points = Array.from({ length: 8 * 1024 }, () => {
      const point = Math.floor(random() * 0x30000);
      return point >= 0xd800 && point <= 0xdfff ? 0x20 : point;
    });
    const message = String.fromCodePoint(...points);
    const found = tokens({ message, name: message, contact: message, fields: { f: message } });
    assert.ok(found.length <= TOKEN_LIMITS.tokens, `${found.length} tokens`);
    for (const token of found) {
      assert.ok(token.length <= 2 * TOKEN_LIMITS.wordChars + 80, `${token.length} long`);
    }
  }
});

Deno.test("only the first fields are read, however many a submission has", () => {
  const fields = Object.fromEntries(
    Array.from({ length: TOKEN_LIMITS.fields + 5 }, (_, i) => [`f${i}`, "word"]),
  );
  const found = tokens({ message: "", fields });
  assert.equal(found.length, TOKEN_LIMITS.fields);
  assert.ok(!found.includes(`f${TOKEN_LIMITS.fields}:word`));
});
