import assert from "node:assert/strict";
import { FIELD_BULLET } from "../../lib/bot/notification.ts";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";

const FORMSPREE = {
  name: "Carl",
  email: "carl@example.org",
  subject: "Quote",
  phone: "+1 555",
  message: "Please call me",
};

Deno.test("POST /api/contact delivers a Formspree-style body with every field shown and stored", async () => {
  const { state, handler } = setup();
  const response = await handler(post(FORMSPREE), PEER);
  assert.equal(response.status, 200);
  const text = state.texts[0]!;
  assert.match(text, /\nSubject: Quote\nFrom: Carl\nContact \(email\): carl@example\.org\n/);
  assert.ok(text.includes(`\n${FIELD_BULLET}phone: +1 555\n\nPlease call me`), text);
  assert.equal(text.split("\n\n").length, 2, text);
  const record = JSON.parse(state.lines[0]!);
  assert.equal(record.contact, "carl@example.org");
  assert.deepEqual(record.fields, { subject: "Quote", phone: "+1 555" });
  assert.deepEqual(Object.keys(record).slice(-1), ["fields"]);
});

Deno.test("POST /api/contact stores no fields key when the form sends only the spec's fields", async () => {
  const { state, handler } = setup();
  await handler(
    post({ name: "Ann", contact: "@ann", message: "Hi", website: "", altcha: "" }),
    PEER,
  );
  assert.equal(Object.hasOwn(JSON.parse(state.lines[0]!), "fields"), false);
});

Deno.test("POST /api/contact answers a _gotcha hit 200 like success, storing and sending nothing", async () => {
  const { state, handler } = setup();
  const bot = await handler(post({ ...FORMSPREE, _gotcha: "spam.example" }), PEER);
  assert.equal(bot.status, 200);
  assert.equal(await bot.text(), '{"ok":true}');
  const form = await handler(postForm({ _gotcha: "x", message: "m" }), PEER);
  assert.equal(form.status, 200);
  assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
});

Deno.test("POST /api/contact form posts keep checkbox groups joined and follow Formspree's _next", async () => {
  const { state, handler } = setup();
  const body = "email=a%40x.org&topics=web&topics=print&message=Hi&_next=%2Fthanks&_subject=Lead";
  const response = await handler(postForm(body), PEER);
  assert.equal(response.status, 303);
  assert.equal(response.headers.get("location"), "/thanks");
  assert.deepEqual(JSON.parse(state.lines[0]!).fields, { topics: "web, print" });
});

Deno.test("POST /api/contact answers 400 naming the field over a bound, storing nothing", async () => {
  const { state, handler } = setup();
  const cases: [Record<string, unknown>, string, string][] = [
    [{ message: "m", phone: "1".repeat(1001) }, "field_too_long", "phone"],
    [{ message: "m", "a:b": "x" }, "field_name", "a:b"],
    [
      { message: "m", ...Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`f${i}`, "v"])) },
      "too_many_fields",
      "f20",
    ],
  ];
  for (const [body, error, field] of cases) {
    const response = await handler(post(body), PEER);
    assert.equal(response.status, 400);
    const answer = await response.json();
    assert.deepEqual([answer.error, answer.field], [error, field]);
  }
  assert.equal(state.lines.length, 0);
});

Deno.test("logs carry no extra field's name or value", async () => {
  const { state, handler } = setup({ deliver: () => Promise.resolve({ ok: false, error: "x" }) });
  await handler(post({ message: "m", SecretName: "SecretValue" }), PEER);
  const logs = JSON.stringify(state.logs);
  for (const secret of ["SecretName", "SecretValue"]) assert.ok(!logs.includes(secret));
});

/** A multipart POST as a browser sends it for `enctype="multipart/form-data"`. */
function postMultipart(entries: [string, string | File][]): Request {
  const form = new FormData();
  for (const [name, value] of entries) form.append(name, value);
  return new Request("http://localhost/api/contact", {
    method: "POST",
    headers: { "x-forwarded-for": "198.51.100.1" },
    body: form,
  });
}

Deno.test("POST /api/contact accepts multipart/form-data like a urlencoded form, every field kept", async () => {
  const { state, handler } = setup();
  const response = await handler(
    postMultipart([
      ["email", "carl@example.org"],
      ["phone", "+1 555"],
      ["message", "Please call me"],
      ["cv", new File([], "")],
      ["_next", "/thanks"],
    ]),
    PEER,
  );
  assert.equal(response.status, 303);
  assert.equal(response.headers.get("location"), "/thanks");
  const record = JSON.parse(state.lines[0]!);
  assert.deepEqual([record.contact, record.fields], ["carl@example.org", { phone: "+1 555" }]);
  assert.match(state.texts[0]!, /phone: \+1 555\n\nPlease call me$/);
});

Deno.test("POST /api/contact answers a multipart file 415 file_not_accepted, storing and sending nothing", async () => {
  const { state, handler } = setup();
  const file = new File(["hello"], "notes.txt", { type: "text/plain" });
  const response = await handler(postMultipart([["message", "m"], ["notes", file]]), PEER);
  assert.equal(response.status, 415);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
  assert.match(await response.text(), /Files are not accepted/);
  assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
  const broken = await handler(
    post("--x\r\n", { "content-type": "multipart/form-data; boundary=y" }),
    PEER,
  );
  assert.equal(broken.status, 400);
});

Deno.test("a refused multipart post (a file, a part without a name) goes to the form's _redirect_error", async () => {
  const { state, handler } = setup();
  const file = new File(["hello"], "notes.txt", { type: "text/plain" });
  const refused = await handler(
    postMultipart([["message", "m"], ["notes", file], ["_redirect_error", "/sorry"]]),
    PEER,
  );
  assert.equal(refused.status, 303);
  assert.equal(refused.headers.get("location"), "/sorry?error=file_not_accepted");
  const body = '--XX\r\nContent-Disposition: form-data; name="_redirect_error"\r\n\r\n/sorry\r\n' +
    "--XX\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XX--\r\n";
  const unnamed = await handler(
    post(body, { "content-type": "multipart/form-data; boundary=XX" }),
    PEER,
  );
  assert.equal(unnamed.status, 303);
  assert.equal(unnamed.headers.get("location"), "/sorry?error=invalid_multipart");
  assert.deepEqual([state.lines.length, state.texts.length], [0, 0]);
});

Deno.test("POST /api/contact answers a multipart _gotcha hit 200, storing nothing", async () => {
  const { state, handler } = setup();
  const response = await handler(postMultipart([["_gotcha", "x"], ["message", "m"]]), PEER);
  assert.equal(response.status, 200);
  assert.equal(state.lines.length, 0);
});

Deno.test("the README's Formspree form, moved in its three changed lines, is delivered with every field", async () => {
  const readme = await Deno.readTextFile(new URL("../../README.md", import.meta.url));
  const section = readme.slice(readme.indexOf("### A Formspree form moved to contactd"));
  const [form, settings] = [...section.matchAll(/```diff\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const changed = [...form!.split("\n"), ...settings!.split("\n")].filter((line) =>
    /^[+-]/.test(line)
  );
  assert.equal(changed.length, 3, changed.join("\n"));
  const html = form!.split("\n").filter((line) => !line.startsWith("-")).map((line) =>
    line.slice(1)
  )
    .join("\n");
  assert.match(html, /action="https:\/\/contact\.example\.org\/api\/contact"/);
  const origin = /^\+ALLOWED_ORIGINS=(.+)$/m.exec(settings!)![1]!;
  // What a browser posts from this form: every named input, in order, with the visitor's text.
  const typed: Record<string, string> = {
    email: "carl@example.org",
    subject: "Quote",
    message: "Please call me",
    _gotcha: "",
  };
  const body = new URLSearchParams();
  for (
    const [, name, value] of html.matchAll(
      /<(?:input|textarea)[^>]*name="([^"]+)"(?:[^>]*value="([^"]*)")?/g,
    )
  ) {
    body.append(name!, value ?? typed[name!] ?? "");
  }
  const { state, handler } = setup({ allowedOrigins: [origin] });
  const response = await handler(postForm(body.toString(), { origin }), PEER);
  assert.equal(response.status, 303);
  assert.equal(response.headers.get("location"), "https://example.org/thanks.html");
  const record = JSON.parse(state.lines[0]!);
  assert.deepEqual([record.contact, record.fields], ["carl@example.org", { subject: "Quote" }]);
  assert.match(state.texts[0]!, /\nSubject: Quote\n[\s\S]*Contact \(email\): carl@example\.org\n/);
});
