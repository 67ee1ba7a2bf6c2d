import assert from "node:assert/strict";
import { extraFields, FIELD_LIMITS, JOINER } from "../../lib/form/fields.ts";
import { parseSubmission } from "../../lib/form/submission.ts";
import { parseFormPost } from "../../lib/form/form_post.ts";

const NONE: ReadonlySet<string> = new Set();

function kept(entries: [string, unknown][], taken = NONE): Readonly<Record<string, string>> {
  const result = extraFields(entries, taken);
  assert.equal(result.kind, "fields", JSON.stringify(result));
  return result.kind === "fields" ? result.fields : assert.fail();
}

function refused(entries: [string, unknown][]) {
  const result = extraFields(entries, NONE);
  assert.equal(result.kind, "problem", JSON.stringify(result));
  return result.kind === "problem" ? result.problem : assert.fail();
}

function valid(value: unknown) {
  const result = parseSubmission(value);
  assert.equal(result.kind, "valid", JSON.stringify(result));
  return result.kind === "valid" ? result.submission : assert.fail();
}

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("a Formspree-style body keeps every field: contact from email, the rest in order", () => {
  const submission = valid({
    name: "Carl",
    email: "carl@example.org",
    subject: "Quote",
    phone: "+1 555",
    message: "Please call me",
  });
  assert.deepEqual(submission, {
    name: "Carl",
    contact: "carl@example.org",
    message: "Please call me",
    contactFrom: "email",
    fields: { subject: "Quote", phone: "+1 555" },
  });
  assert.deepEqual(Object.keys(submission.fields!), ["subject", "phone"]);
});

Deno.test("the contact comes from contact, else email, else _replyto: the first non-empty one", () => {
  assert.deepEqual(
    valid({ contact: "@ann", email: "a@x.org", _replyto: "r@x.org", message: "m" }),
    { name: "", contact: "@ann", message: "m", fields: { email: "a@x.org" } },
  );
  const fromEmail = valid({ contact: " ", email: "a@x.org", _replyto: "r@x.org", message: "m" });
  assert.deepEqual([fromEmail.contact, fromEmail.contactFrom], ["a@x.org", "email"]);
  const fromReplyTo = valid({ contact: null, email: "", _replyto: "r@x.org", message: "m" });
  assert.deepEqual([fromReplyTo.contact, fromReplyTo.contactFrom], ["r@x.org", "_replyto"]);
  assert.equal(fromReplyTo.fields, undefined);
});

Deno.test("email and _replyto are held to the contact's rules: a string, at most 200", () => {
  const long = parseSubmission({ email: "e".repeat(201), message: "m" });
  assert.deepEqual(long.kind === "invalid" && [long.code, long.field], ["field_too_long", "email"]);
  const typed = parseSubmission({ _replyto: 5, message: "m" });
  assert.deepEqual(typed.kind === "invalid" && [typed.code, typed.field], [
    "field_type",
    "_replyto",
  ]);
});

Deno.test("_gotcha is a honeypot like website, checked before validation", () => {
  assert.deepEqual(parseSubmission({ _gotcha: "http://spam", message: "" }), { kind: "honeypot" });
  assert.deepEqual(parseSubmission({ _gotcha: 1, phone: { bad: 1 } }), { kind: "honeypot" });
  const post = parseFormPost(bytes(`_gotcha=x&message=${"a".repeat(5000)}`), []);
  assert.deepEqual(post.result, { kind: "honeypot", message: "a".repeat(4000) });
  assert.equal(valid({ _gotcha: " ", message: "m" }).fields, undefined);
});

Deno.test("control fields are not kept: underscore names, honeypots, the challenge's proof", () => {
  const submission = valid({
    message: "m",
    website: "",
    _gotcha: "",
    _next: "/thanks",
    _subject: "New lead",
    altcha: "proof",
    "cf-turnstile-response": "token",
    plan: "pro",
  });
  assert.deepEqual(submission.fields, { plan: "pro" });
});

Deno.test("field values: numbers and booleans as text, lists joined, null and empty left out", () => {
  assert.deepEqual(
    kept([["n", 3], ["b", false], ["topics", ["a", "b", 2]], ["x", null], ["e", " "], ["l", []], [
      "ln",
      [null, "y"],
    ]]),
    { n: "3", b: "false", topics: `a${JOINER}b${JOINER}2`, ln: "y" },
  );
  assert.equal(refused([["o", { a: 1 }]]).code, "field_type");
  assert.equal(refused([["o", [["nested"]]]]).field, "o");
});

Deno.test("a form's repeated names (a checkbox group) are joined in order", () => {
  const post = parseFormPost(bytes("topics=a&message=m&topics=b&topics=&topics=c&message=n"), []);
  assert.deepEqual(post.result, {
    kind: "valid",
    submission: { name: "", contact: "", message: "m", fields: { topics: "a, b, c" } },
  });
});

Deno.test("field names: at most 40 characters from the safe set, else 400 field_name naming it", () => {
  const name = "A".repeat(FIELD_LIMITS.name);
  assert.deepEqual(Object.keys(kept([[name, "v"], ["topics[]", "x"], ["first-name.2 b_c", "y"]])), [
    name,
    "topics[]",
    "first-name.2 b_c",
  ]);
  const long = refused([[name + "B", "v"]]);
  assert.deepEqual([long.code, long.field], ["field_name", `${name}…`]);
  for (const bad of ["1st", "a:b", "a\u00e9", "a<b>", "a=b", 'a"b', " "]) {
    assert.equal(refused([[bad, "v"]]).code, "field_name", bad);
  }
});

Deno.test("field values are cleaned as name is: no line breaks, control or bidi; a name cleaning would change is refused", () => {
  assert.deepEqual(kept([["note", "a\nFrom: x\u2028b\u0000c\u2066"]]), {
    note: "a From: x b c",
  });
  for (const bad of ["note\u202E", "tag\u200F", "tag ", " tag", "tag\t", "tag\u0000"]) {
    assert.equal(refused([[bad, "v"]]).code, "field_name", JSON.stringify(bad));
  }
});

Deno.test("a name that cleans to a spec field's or a honeypot's is 400 field_name naming it, never a field named like the spec's", () => {
  for (
    const [raw, shown] of [["name ", "name"], ["message\u0000", "message"], [
      "website\t",
      "website",
    ], ["email ", "email"]]
  ) {
    const result = parseSubmission({ message: "hi", [raw!]: "x" });
    assert.equal(result.kind, "invalid", JSON.stringify(raw));
    if (result.kind !== "invalid") continue;
    assert.deepEqual([result.code, result.field], ["field_name", shown], JSON.stringify(raw));
  }
  // The reserved names are compared in any case: none becomes an extra field.
  assert.deepEqual(
    kept(
      [["NAME", "a"], ["Website", "b"], ["ALTCHA", "c"], ["x", "d"]],
      new Set(["name", "website", "altcha"]),
    ),
    { x: "d" },
  );
});

Deno.test("a value over 1000 characters, joined values included, is 400 field_too_long", () => {
  const max = "v".repeat(FIELD_LIMITS.value);
  assert.equal(kept([["long", max]]).long, max);
  const emoji = "\u{1F600}".repeat(FIELD_LIMITS.value); // 1000 code points, 2000 UTF-16 units
  assert.equal(kept([["e", emoji]]).e, emoji);
  const over = refused([["long", max + "v"]]);
  assert.deepEqual([over.code, over.field, over.message], [
    "field_too_long",
    "long",
    "long must be at most 1000 characters.",
  ]);
  assert.equal(refused([["group", ["v".repeat(600), "v".repeat(600)]]]).code, "field_too_long");
});

Deno.test("at most 20 extra fields: the 21st is 400 too_many_fields naming it", () => {
  const twenty = Array.from({ length: FIELD_LIMITS.count }, (_, i): [string, unknown] => [
    `f${i}`,
    "v",
  ]);
  assert.equal(Object.keys(kept(twenty)).length, FIELD_LIMITS.count);
  // Empty ones do not count.
  assert.equal(Object.keys(kept([...twenty, ["blank", ""]])).length, FIELD_LIMITS.count);
  const over = refused([...twenty, ["f20", "v"]]);
  assert.deepEqual([over.code, over.field], ["too_many_fields", "f20"]);
  const result = parseSubmission(Object.fromEntries([...twenty, ["f20", "v"], ["message", "m"]]));
  assert.deepEqual(result.kind === "invalid" && [result.code, result.field], [
    "too_many_fields",
    "f20",
  ]);
});

Deno.test("the spec's fields, the contact's sources and the honeypots are matched in any case, the first one sent winning", () => {
  assert.deepEqual(valid({ Name: "Ann", Email: "ann@example.org", Message: "Hi" }), {
    name: "Ann",
    contact: "ann@example.org",
    message: "Hi",
    contactFrom: "email",
  });
  assert.deepEqual(
    valid({ CONTACT: "@ann", EMAIL: "a@example.org", MESSAGE: "Hi", Subject: "Q" }),
    {
      name: "",
      contact: "@ann",
      message: "Hi",
      fields: { EMAIL: "a@example.org", Subject: "Q" },
    },
  );
  assert.deepEqual(valid({ Message: "first", message: "second", _ReplyTo: "r@example.org" }), {
    name: "",
    contact: "r@example.org",
    message: "first",
    contactFrom: "_replyto",
  });
  assert.deepEqual(parseSubmission({ message: "Hi", Website: "bot" }), {
    kind: "honeypot",
    message: "Hi",
  });
  assert.deepEqual(parseSubmission({ message: "Hi", _GOTCHA: "bot" }), {
    kind: "honeypot",
    message: "Hi",
  });
});
