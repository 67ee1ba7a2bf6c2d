import assert from "node:assert/strict";
import {
  cleanMultiLine,
  cleanSingleLine,
  codePointLength,
  isHoneypotHit,
  LIMITS,
  parseSubmission,
} from "../../lib/form/submission.ts";
import { mulberry32 } from "../support/random.ts";

const EMOJI = "\u{1F600}"; // one code point, two UTF-16 units

function valid(value: unknown) {
  const result = parseSubmission(value);
  assert.equal(result.kind, "valid", JSON.stringify(result));
  return result.kind === "valid" ? result.submission : assert.fail();
}

function invalid(value: unknown) {
  const result = parseSubmission(value);
  assert.equal(result.kind, "invalid", JSON.stringify(result));
  return result.kind === "invalid" ? result : assert.fail();
}

Deno.test("parseSubmission accepts a message alone: name and contact are optional", () => {
  assert.deepEqual(valid({ message: "hi" }), { name: "", contact: "", message: "hi" });
  assert.deepEqual(valid({ name: null, contact: null, message: "hi" }).name, "");
});

Deno.test("parseSubmission trims every field", () => {
  assert.deepEqual(valid({ name: "  Ann ", contact: "\t@ann\n", message: "\n hello \n" }), {
    name: "Ann",
    contact: "@ann",
    message: "hello",
  });
});

Deno.test("parseSubmission requires a non-blank message", () => {
  for (const body of [{}, { message: "" }, { message: "   \n\t" }, { message: null }]) {
    const result = invalid(body);
    assert.equal(result.code, "field_required");
    assert.equal(result.field, "message");
  }
});

Deno.test("parseSubmission refuses non-string fields, naming the field", () => {
  for (const bad of [1, true, [], {}, ["a"]]) {
    for (const field of ["name", "contact", "message"]) {
      const result = invalid({ message: "ok", [field]: bad });
      assert.equal(result.code, "field_type");
      assert.equal(result.field, field);
    }
  }
});

Deno.test("parseSubmission refuses bodies that are not JSON objects", () => {
  for (const body of [null, [], [{ message: "x" }], "message", 42, true]) {
    assert.equal(invalid(body).code, "invalid_body");
  }
});

Deno.test("parseSubmission counts limits in code points: 200/201 and 4000/4001, astral too", () => {
  for (const [field, limit] of Object.entries(LIMITS)) {
    for (const unit of ["a", EMOJI]) {
      const base = { message: "m" };
      assert.equal(
        valid({ ...base, [field]: unit.repeat(limit) })[field as "name"].length,
        unit.length * limit,
      );
      const result = invalid({ ...base, [field]: unit.repeat(limit + 1) });
      assert.equal(result.code, "field_too_long");
      assert.equal(result.field, field);
    }
  }
});

Deno.test("parseSubmission judges the length after trimming", () => {
  assert.equal(valid({ message: "m", name: ` ${"a".repeat(200)}  ` }).name.length, 200);
});

Deno.test("parseSubmission keeps other fields as plain keys without polluting anything", () => {
  const body = JSON.parse('{"message":"hi","__proto__":{"polluted":true},"constructor":"c","x":1}');
  const submission = valid(body);
  assert.deepEqual(submission, {
    name: "",
    contact: "",
    message: "hi",
    fields: { constructor: "c", x: "1" },
  });
  assert.equal(Object.getPrototypeOf(submission.fields), Object.prototype);
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  const nested = invalid(JSON.parse('{"message":"hi","constructor":{"prototype":{"x":1}}}'));
  assert.deepEqual([nested.code, nested.field], ["field_type", "constructor"]);
});

Deno.test("parseSubmission does not read fields inherited from a prototype", () => {
  const body = Object.create({ message: "inherited" });
  assert.equal(invalid(body).code, "field_required");
});

Deno.test("parseSubmission makes name and contact single-line: no forged header lines", () => {
  const result = valid({ name: "Ann\nIP: 1.2.3.4", contact: "a\u2028b\u202Ec\0d", message: "m" });
  assert.equal(result.name, "Ann IP: 1.2.3.4");
  assert.equal(result.contact, "a b c d");
});

Deno.test("parseSubmission keeps line breaks and tabs in the message but drops NUL and escapes", () => {
  assert.equal(valid({ message: "a\r\nb\rc\td\0e\x1b[31m" }).message, "a\nb\nc\tde[31m");
});

Deno.test("parseSubmission replaces lone surrogates instead of storing broken text", () => {
  assert.equal(valid({ message: "a\uD800b" }).message, "a\uFFFDb");
});

Deno.test("isHoneypotHit: any non-null website except a blank string is a bot", () => {
  for (const website of ["http://spam", " x ", 0, false, [], {}, 1]) {
    assert.equal(isHoneypotHit({ website }), true, JSON.stringify(website));
  }
  for (const website of ["", "   ", null]) {
    assert.equal(isHoneypotHit({ website }), false, JSON.stringify(website));
  }
  assert.equal(isHoneypotHit({}), false);
  assert.equal(isHoneypotHit([]), false);
});

Deno.test("parseSubmission answers a honeypot hit before validating fields", () => {
  assert.deepEqual(parseSubmission({ website: "x", name: "a".repeat(5000), message: 1 }), {
    kind: "honeypot",
  });
});

Deno.test("codePointLength counts astral characters once and lone surrogates once", () => {
  assert.equal(codePointLength(EMOJI.repeat(3)), 3);
  assert.equal(codePointLength("a\uD800"), 2);
  assert.equal(codePointLength(""), 0);
});

Deno.test("the printable-ASCII shortcut cleans exactly as the full cleaning does", () => {
  const random = mulberry32(0x5eed);
  // Both sides of every boundary the shortcut and the cleaners draw.
  const alphabet = [
    ..."aZ09 ~!",
    "\t",
    "\n",
    "\r",
    "\0",
    "\x1f",
    "\x7f",
    "\x80",
    "\x9f",
    "\xa0",
    "\u00e9",
    "\u061c",
    "\u200e",
    "\u2028",
    "\u2029",
    "\u202e",
    "\u2066",
    "\ud83d",
    "\ude00",
  ];
  let shortcuts = 0;
  for (let i = 0; i < 50_000; i++) {
    let text = "";
    // Mostly printable ASCII, so the shortcut is taken often; sometimes one odd character.
    const odd = random() < 0.5;
    for (let n = Math.floor(random() * 12); n > 0; n--) {
      const pool = odd ? alphabet.length : 7;
      text += alphabet[Math.floor(random() * pool)];
    }
    if (cleanSingleLine(text, true) === text.trim() && cleanMultiLine(text, true) === text.trim()) {
      shortcuts++;
    }
    assert.equal(cleanSingleLine(text), cleanSingleLine(text, true), JSON.stringify(text));
    assert.equal(cleanMultiLine(text), cleanMultiLine(text, true), JSON.stringify(text));
  }
  assert.ok(shortcuts > 10_000, `only ${shortcuts} inputs the cleaners leave alone`);
});

Deno.test("Netlify's bot-field is a honeypot, in any case; an empty one is not", () => {
  for (const value of [{ "bot-field": "http://spam.example" }, { "BOT-FIELD": "x" }]) {
    assert.deepEqual(parseSubmission({ ...value, message: "buy" }), {
      kind: "honeypot",
      message: "buy",
    });
  }
  const human = valid({ "bot-field": "", message: "hi", subject: "s" });
  assert.deepEqual(human.fields, { subject: "s" });
});

Deno.test("Netlify's form-name is a control field: never shown or stored, in any case", () => {
  const submission = valid({ "form-name": "contact", "Form-Name": "x", message: "hi", phone: "1" });
  assert.deepEqual(submission.fields, { phone: "1" });
});
