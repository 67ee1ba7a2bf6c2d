/**
 * Forms written for other services, through the handler: a form body that asks for JSON
 * (Formspree's, Basin's and Getform's fetch pattern), Formspree's own path `/api/f/<id>` and
 * shapes, and relative redirect targets on a page of another origin.
 */
import assert from "node:assert/strict";
import { PEER, post, postForm, setup } from "../support/handler_setup.ts";
import { ERRORS } from "../../lib/http/errors.ts";

const SITE = "https://site.example";
const JSON_ACCEPT = { accept: "application/json" };

/** A multipart POST to `path`, as a script posting `FormData` sends it. */
function postMultipart(
  fields: Record<string, string | Blob>,
  headers: Record<string, string> = {},
  ip = "198.51.100.1",
  path = "/api/contact",
) {
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  return new Request(`http://localhost${path}`, {
    method: "POST",
    headers: { "x-forwarded-for": ip, ...headers },
    body: data,
  });
}

Deno.test("a form body that asks for JSON gets the JSON answers a JSON body gets: success and every refusal, never a 303 or plain text", async () => {
  const { state, handler } = setup({ allowedOrigins: [SITE] });
  const headers = { origin: SITE, ...JSON_ACCEPT };
  const targets = { _next: `${SITE}/thanks`, _redirect_error: `${SITE}/sorry` };
  const cases: Array<[string, Request, Request]> = [
    [
      "success (urlencoded)",
      postForm({ message: "hi", ...targets }, headers, "10.0.0.1"),
      post({ message: "hi" }, { origin: SITE }, "10.0.0.2"),
    ],
    [
      "success (multipart)",
      postMultipart({ message: "hi", ...targets }, headers, "10.0.0.3"),
      post({ message: "hi" }, { origin: SITE }, "10.0.0.4"),
    ],
    [
      "honeypot",
      postForm({ message: "x", _gotcha: "bot", ...targets }, headers, "10.0.0.5"),
      post({ message: "x", _gotcha: "bot" }, { origin: SITE }, "10.0.0.6"),
    ],
    [
      "field error",
      postMultipart({ message: " ", ...targets }, headers, "10.0.0.7"),
      post({ message: " " }, { origin: SITE }, "10.0.0.8"),
    ],
    [
      "a file",
      postMultipart(
        { message: "m", cv: new File(["x"], "cv.pdf"), ...targets },
        headers,
        "10.0.1.1",
      ),
      postMultipart({ message: "m", cv: new File(["x"], "cv.pdf") }, headers, "10.0.1.2"),
    ],
    [
      "bad encoding",
      postForm("message=%FF&_redirect_error=%2Fsorry", headers, "10.0.1.3"),
      post('{"message": 1', { origin: SITE }, "10.0.1.4"),
    ],
    [
      "another origin",
      postForm({ message: "m", ...targets }, { origin: "https://evil.example", ...JSON_ACCEPT }),
      post({ message: "m" }, { origin: "https://evil.example" }),
    ],
  ];
  for (const [name, form, json] of cases) {
    const [fromForm, fromJson] = [await handler(form, PEER), await handler(json, PEER)];
    assert.equal(fromForm.status, fromJson.status, name);
    assert.equal(fromForm.headers.get("content-type"), "application/json", name);
    assert.equal(fromForm.headers.get("location"), null, name);
    const [formBody, jsonBody] = [await fromForm.json(), await fromJson.json()];
    if (name === "bad encoding") assert.equal(formBody.error, "invalid_encoding");
    else assert.deepEqual(formBody, jsonBody, name);
    assert.equal(
      fromForm.headers.get("access-control-allow-origin"),
      fromJson.headers.get(
        "access-control-allow-origin",
      ),
      name,
    );
  }
  assert.equal(state.texts.length, 4); // the two successes of each kind

  // Over the rate limit, the 6th post from one client: 429 JSON with Retry-After.
  for (let i = 1; i <= 5; i++) {
    await handler(postForm({ message: `${i}` }, headers, "10.9.9.9"), PEER);
  }
  const limited = await handler(postForm({ message: "6", ...targets }, headers, "10.9.9.9"), PEER);
  assert.equal(limited.status, 429);
  assert.ok(Number(limited.headers.get("retry-after")) > 0);
  assert.equal((await limited.json()).error, "rate_limited");
});

Deno.test("a form body without Accept: application/json still gets pages (browsers posting a form themselves)", async () => {
  const { handler } = setup();
  const accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
  const redirected = await handler(postForm({ message: "hi", _next: "/thanks" }, { accept }), PEER);
  assert.equal(redirected.status, 303);
  const plain = await handler(postForm({ message: "hi" }, { accept: "*/*" }, "10.0.0.2"), PEER);
  assert.equal(plain.headers.get("content-type"), "text/plain; charset=utf-8");
});

Deno.test("POST /api/f/default is the default form and /api/f/<id> each form of FORMS, answered in Formspree's shape beside contactd's", async () => {
  const { state, handler } = setup({
    allowedOrigins: [SITE],
    forms: [{ id: "sales", allowedOrigins: ["https://shop.example"] }],
  });
  const json = (body: unknown, path: string, origin: string, ip: string) =>
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json",
        origin,
        "x-forwarded-for": ip,
      },
      body: JSON.stringify(body),
    });
  const main = await handler(
    json({ email: "a@example.org", message: "hi" }, "/api/f/default", SITE, "10.0.0.1"),
    PEER,
  );
  assert.equal(main.status, 200);
  assert.deepEqual(await main.json(), { ok: true, next: "" });
  assert.equal(main.headers.get("access-control-allow-origin"), SITE);

  const sales = await handler(
    postMultipart(
      { message: "quote", _next: "https://shop.example/thanks" },
      {
        origin: "https://shop.example",
        ...JSON_ACCEPT,
      },
      "10.0.0.2",
      "/api/f/sales",
    ),
    PEER,
  );
  assert.deepEqual(await sales.json(), { ok: true, next: "https://shop.example/thanks" });
  const records = state.lines.map((line) => JSON.parse(line));
  assert.deepEqual(records.map((record) => record.form), [undefined, "sales"]);

  // The form's own origins: the default form's site may not post to sales.
  const foreign = await handler(json({ message: "x" }, "/api/f/sales", SITE, "10.0.0.3"), PEER);
  assert.equal(foreign.status, 403);
  assert.deepEqual((await foreign.json()).errors, [
    { message: ERRORS.origin_not_allowed.message, code: "origin_not_allowed" },
  ]);
  const field = await handler(json({ message: "" }, "/api/f/default", SITE, "10.0.0.4"), PEER);
  assert.equal(field.status, 400);
  assert.deepEqual(await field.json(), {
    ok: false,
    error: "field_required",
    field: "message",
    message: "message is required.",
    errors: [{ message: "message is required.", code: "REQUIRED_FIELD_EMPTY", field: "message" }],
  });

  // The preflight lets @formspree/core's headers through.
  const preflight = await handler(
    new Request("http://localhost/api/f/default", {
      method: "OPTIONS",
      headers: {
        origin: SITE,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type,formspree-client,formspree-session-data",
      },
    }),
    PEER,
  );
  assert.equal(preflight.status, 204);
  const allowed = preflight.headers.get("access-control-allow-headers")!.toLowerCase().split(", ");
  for (const name of ["content-type", "formspree-client", "formspree-session-data"]) {
    assert.ok(allowed.includes(name), name);
  }

  for (const path of ["/api/f/unknown", "/api/f/", "/api/f", "/api/f/default/x"]) {
    assert.equal(
      (await handler(json({ message: "x" }, path, SITE, "10.0.0.5"), PEER)).status,
      404,
      path,
    );
  }
  const get = await handler(new Request("http://localhost/api/f/default"), PEER);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get("allow"), "POST, OPTIONS");
});

Deno.test("a no-JS form posted to /api/f/<id> (a Formspree action changed to contactd) gets pages and its redirect", async () => {
  const { handler } = setup({ allowedOrigins: [SITE] });
  const response = await handler(
    new Request("http://localhost/api/f/default", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: SITE },
      body: new URLSearchParams({ message: "hi", _next: `${SITE}/thanks.html` }).toString(),
    }),
    PEER,
  );
  assert.equal(response.status, 303);
  assert.equal(response.headers.get("location"), `${SITE}/thanks.html`);
});

Deno.test("a relative _redirect on a page of an allowed origin lands on that origin (Origin, else Referer)", async () => {
  const { handler } = setup({ allowedOrigins: [SITE] });
  const byOrigin = await handler(
    postForm({ message: "hi", _redirect: "/thanks.html" }, { origin: SITE }, "10.0.0.1"),
    PEER,
  );
  assert.equal(byOrigin.status, 303);
  assert.equal(byOrigin.headers.get("location"), `${SITE}/thanks.html`);
  const byReferer = await handler(
    postForm(
      { message: " ", _redirect_error: "/sorry" },
      { referer: `${SITE}/contact/` },
      "10.0.0.2",
    ),
    PEER,
  );
  assert.equal(byReferer.headers.get("location"), `${SITE}/sorry?error=field_required`);
  // No page known (curl): the path stays a path on contactd's own address, as before.
  const bare = await handler(postForm({ message: "hi", _next: "/thanks" }, {}, "10.0.0.3"), PEER);
  assert.equal(bare.headers.get("location"), "/thanks");
});

Deno.test("a relative _redirect on a page of an origin that is not allowed is not used: delivered, and the plain-text page tells the site's owner why", async () => {
  const { state, handler } = setup(); // ALLOWED_ORIGINS unset: any page may post
  const response = await handler(
    postForm({ message: "hi", _redirect: "/thanks.html" }, {
      origin: "https://blog.example",
      host: "contact.example",
    }),
    PEER,
  );
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("location"), null);
  const text = await response.text();
  assert.match(text, /^Thank you\. Your message was sent\.\n\n\(For the site's owner: /);
  assert.match(
    text,
    /_redirect "\/thanks\.html" was not used\. The form is on https:\/\/blog\.example/,
  );
  assert.equal(state.texts.length, 1);
  // The same page from contactd's own host: the path is used as is.
  const here = await handler(
    postForm({ message: "hi", _redirect: "/thanks.html" }, {
      origin: "https://contact.example",
      host: "contact.example",
    }, "10.0.0.2"),
    PEER,
  );
  assert.equal(here.headers.get("location"), "/thanks.html");
});
