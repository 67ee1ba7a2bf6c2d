/**
 * The example form in a real browser: headless Chromium loads `examples/contact.html` from the
 * running service (`SERVE_EXAMPLE=1`, a fake Bot API behind it), fills and sends it, and reads
 * what a visitor would read. Screenshots go to `test-output/browser/` (git-ignored).
 */
import assert from "node:assert/strict";
import { apiError, type FakeBotApi, startFakeBotApi } from "../support/fake_bot_api.ts";
import { type Browser, BROWSER_DEPS, launchBrowser, type Page } from "../support/browser.ts";
import { skipBecause, skipWithout } from "../support/tools.ts";
import { ERRORS } from "../../lib/http/errors.ts";
import { type Service, startService } from "../support/service.ts";

const TOKEN = "123456789:AAE_browser-test-token";
const CHAT_ID = 4242;
const OUTPUT = new URL("../../test-output/browser/", import.meta.url).pathname;
const STATUS = "#contactd-status";
/** The status once an answer is shown; while sending it has no class. */
const DONE = `${STATUS}.ok, ${STATUS}.saved, ${STATUS}.error`;
const SKIP = skipWithout("chromium");
/** Where a form post without JavaScript lands: the sender's case page (issue 33). */
const CASE_PAGE_SENT = /\/api\/case\/[A-Za-z0-9_-]{32}\?sent=1$/;
/**
 * The site's thank-you page a form post lands on, with the case page's path in the fragment
 * (issue 33; a honeypot hit gets one too, of no case).
 */
function thanksWithCase(siteUrl: string): RegExp {
  const escaped = siteUrl.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escaped}/thanks\\.html#case=/api/case/[A-Za-z0-9_-]{32}$`);
}

/** Clicks Send and waits until the status shows an outcome (class "ok" or "error"). */
async function send(page: Page): Promise<{ text: string; kind: string }> {
  await page.evaluate(`document.querySelector("${STATUS}").className = ""`);
  await page.locator("button[type=submit]").click();
  // Locators, not waitForFunction: the page's CSP forbids the eval that the latter uses.
  await page.locator(DONE).waitFor();
  const status = page.locator(STATUS);
  return {
    text: (await status.textContent()) ?? "",
    kind: (await status.getAttribute("class")) ?? "",
  };
}

async function fill(page: Page, fields: { name?: string; contact?: string; message: string }) {
  await page.locator("#contactd-name").fill(fields.name ?? "");
  await page.locator("#contactd-contact").fill(fields.contact ?? "");
  await page.locator("#contactd-message").fill(fields.message);
}

interface World {
  readonly browser: Browser;
  readonly service: Service;
  readonly fake: FakeBotApi;
  /** A fresh browser profile whose requests come from `ip` (via the trusted proxy header). */
  visitor(ip: string, options?: { javaScriptEnabled?: boolean; phone?: boolean }): Promise<Page>;
}

async function withWorld(run: (world: World) => Promise<void>) {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const service = await startService({
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    MESSENGER_TIMEOUT_MS: "1500",
    SERVE_EXAMPLE: "1",
  });
  const browser = await launchBrowser();
  const contexts: Array<{ close(): Promise<void> }> = [];
  try {
    await run({
      browser,
      service,
      fake,
      async visitor(ip, options = {}) {
        const context = await browser.newContext({
          extraHTTPHeaders: { "x-forwarded-for": ip },
          javaScriptEnabled: options.javaScriptEnabled ?? true,
          viewport: options.phone ? { width: 375, height: 740 } : { width: 1024, height: 720 },
        });
        contexts.push(context);
        const page = await context.newPage();
        await page.goto(`${service.url}/`);
        return page;
      },
    });
    assert.equal(await service.stop(), 0);
  } finally {
    for (const context of contexts) await context.close().catch(() => {});
    await browser.close();
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
  }
}

// playwright keeps a pipe to Chromium open between calls, which the sanitizers would report.
const options = { ignore: SKIP, sanitizeOps: false, sanitizeResources: false };

/** A browser test against the example page served by a running service. */
function browserTest(name: string, run: (world: World) => Promise<void>) {
  Deno.test({ name: `browser: ${name}`, ...options, fn: () => withWorld(run) });
}

browserTest(
  "the example form sends a message, shows success, and it is stored and delivered",
  async ({ service, fake, visitor }) => {
    const page = await visitor("198.51.100.10");
    assert.equal(await page.title(), "Contact");
    await fill(page, {
      name: "Ann Browser",
      contact: "ann@example.org",
      message: "Hi from Chromium",
    });
    await Deno.mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: `${OUTPUT}form-filled.png`, fullPage: true });

    const status = await send(page);
    assert.deepEqual(status, { text: "Thank you. Your message was sent.", kind: "ok" });
    await page.screenshot({ path: `${OUTPUT}form-sent.png`, fullPage: true });
    assert.equal(await page.evaluate(`document.querySelector("#contactd-message").value`), "");

    const [record, ...rest] = await service.records();
    assert.equal(rest.length, 0);
    assert.equal(record!.name, "Ann Browser");
    assert.equal(record!.contact, "ann@example.org");
    assert.equal(record!.message, "Hi from Chromium");
    assert.equal(record!.ip, "198.51.100.10");
    assert.equal(record!.messenger_ok, true);
    assert.equal(fake.delivered.length, 1);
    assert.match(fake.delivered[0]!, /From: Ann Browser[\s\S]*Hi from Chromium/);

    // Five more sends from the same visitor: four fit in the limit, the fifth is refused.
    for (let i = 2; i <= 5; i++) {
      await fill(page, { message: `message ${i}` });
      assert.equal((await send(page)).kind, "ok");
    }
    await fill(page, { message: "one too many" });
    const limited = await send(page);
    assert.equal(limited.kind, "error");
    assert.match(
      limited.text,
      /^Too many messages from your address\. Please try again in \d+ seconds\.$/,
    );
    assert.equal(
      await page.evaluate(`document.querySelector("#contactd-message").value`),
      "one too many",
    );
    await page.screenshot({ path: `${OUTPUT}rate-limited.png`, fullPage: true });
    assert.equal((await service.records()).length, 5);
    assert.equal(fake.delivered.length, 5);
  },
);

browserTest(
  "the form says 'saved, no need to send it again' when the Bot API fails, and 'try again' only when nothing was saved",
  async ({ service, fake, visitor }) => {
    const page = await visitor("198.51.100.20");
    fake.script.push(apiError(500, "Internal Server Error"));
    await fill(page, { message: "API is down" });
    const saved = await send(page);
    assert.equal(saved.kind, "saved");
    assert.match(
      saved.text,
      /saved and will be delivered shortly; there is no need to send it again\.$/,
    );
    const [record] = await service.records();
    assert.equal(record!.messenger_ok, false);
    // Sent again after the failure (the first retry comes within about a second).
    const deadline = Date.now() + 5000;
    while (!fake.delivered.some((text) => text.endsWith("API is down")) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(fake.delivered.some((text) => text.includes("Delivered late")));
    await page.screenshot({ path: `${OUTPUT}delivery-failed.png`, fullPage: true });

    // A hanging API: the button is disabled while sending, then "saved" once the wait is over.
    fake.script.push("hang");
    await fill(page, { message: "API hangs" });
    const button = page.locator("button[type=submit]");
    await button.click();
    await page.locator("button[type=submit]:disabled").waitFor();
    assert.equal(await page.locator(STATUS).textContent(), "Sending…");
    await page.locator(DONE).waitFor();
    assert.match((await page.locator(STATUS).textContent())!, /no need to send it again/);
    assert.equal(await button.isDisabled(), false);
    assert.equal((await service.records())[1]!.messenger_error, "timeout");

    // Not saved at all (a link put where the database is, at once: contactd never writes through
    // one, not even as root) and not delivered: the sender is asked to try again.
    const database = `${service.file}.db`;
    await Deno.symlink(`${service.file}.elsewhere`, `${database}.link`);
    await Deno.rename(`${database}.link`, database);
    try {
      fake.script.push(apiError(500, "Internal Server Error"));
      await fill(page, { message: "nowhere to keep it" });
      const lost = await send(page);
      assert.equal(lost.kind, "error");
      assert.match(lost.text, /could not be sent \(error 500\)\. Please try again later\.$/);
    } finally {
      // The link gone, the database is written anew there from the service's open connection.
      await Deno.remove(database);
    }
  },
);

browserTest(
  "over-long fields, network errors and the honeypot get honest words",
  async ({ service, fake, visitor }) => {
    const page = await visitor("198.51.100.30");
    // maxlength stops typing at the limit; a page without it meets the server's limit.
    await page.evaluate(
      `document.querySelector("#contactd-message").removeAttribute("maxlength")`,
    );
    await fill(page, { message: "x".repeat(4001) });
    const tooLong = await send(page);
    assert.equal(tooLong.text, "Your message is too long: at most 4000 characters.");
    assert.equal(await page.locator("#contactd-message").getAttribute("aria-invalid"), "true");
    assert.equal(await page.evaluate(`document.activeElement.id`), "contactd-message");

    await page.route("**/api/contact", (route) => route.abort());
    await fill(page, { message: "offline" });
    const offline = await send(page);
    assert.equal(offline.kind, "error");
    assert.match(offline.text, /^Could not reach the server: your message was not sent\./);

    const bot = await visitor("198.51.100.31");
    await bot.evaluate(`document.querySelector("#contactd-website").value = "https://spam"`);
    await fill(bot, { message: "buy now" });
    assert.equal((await send(bot)).kind, "ok"); // a bot must not learn it was caught
    assert.equal((await service.records()).length, 0);
    assert.equal(fake.calls.length, 0);
  },
);

browserTest(
  "the honeypot is hidden and never focused by keyboard; the page fits a phone",
  async ({ visitor }) => {
    const page = await visitor("198.51.100.40");
    await page.locator("#contactd-name").focus();
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      order.push(
        await page.evaluate(`document.activeElement.id || document.activeElement.tagName`),
      );
      await page.keyboard.press("Tab");
    }
    assert.deepEqual(order.slice(0, 4), [
      "contactd-name",
      "contactd-contact",
      "contactd-message",
      "BUTTON",
    ]);
    assert.ok(!order.includes("contactd-website"));
    const trap = page.locator("#contactd-website");
    assert.equal(await trap.getAttribute("tabindex"), "-1");
    assert.equal(await trap.getAttribute("autocomplete"), "off");
    assert.equal(await trap.getAttribute("type"), "text");
    assert.equal(
      await page.evaluate(
        `!!document.querySelector("#contactd-website").closest("[aria-hidden=true]")`,
      ),
      true,
    );
    const box = await trap.boundingBox();
    assert.ok(box === null || box.x + box.width <= 0, JSON.stringify(box));
    for (const id of ["contactd-name", "contactd-contact", "contactd-message"]) {
      assert.ok(await page.evaluate(`!!document.querySelector("label[for=${id}]")`), id);
    }
    assert.equal(await page.locator(STATUS).getAttribute("aria-live"), "polite");

    const phone = await visitor("198.51.100.41", { phone: true });
    await fill(phone, { name: "Phone", message: "Sent from a narrow screen" });
    assert.equal((await send(phone)).kind, "ok");
    assert.equal(await phone.evaluate(`document.documentElement.scrollWidth`), 375);
    const button = await phone.locator("button[type=submit]").boundingBox();
    assert.ok(button !== null && button.x >= 0 && button.x + button.width <= 375);
    await phone.screenshot({ path: `${OUTPUT}phone.png`, fullPage: true });
  },
);

browserTest(
  "without JavaScript the form posts urlencoded and the visitor lands on their case page, which says it was sent",
  async ({ service, fake, visitor }) => {
    const page = await visitor("198.51.100.50", { javaScriptEnabled: false });
    await fill(page, { name: "No Script", message: "Plain HTML works" });
    await page.locator("button[type=submit]").click();
    await page.waitForURL(CASE_PAGE_SENT);
    const body = (await page.locator("body").textContent()) ?? "";
    assert.ok(body.includes("Thank you. Your message was sent."), body);
    assert.ok(body.includes("Plain HTML works"), body);
    const [record] = await service.records();
    assert.equal(record!.name, "No Script");
    assert.equal(record!.message, "Plain HTML works");
    assert.equal(fake.delivered.length, 1);
  },
);

/** A static site on its own origin: its URL, and how to stop it. */
interface Site {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts the sites `makeSites` builds (their pages posting to contactd's URL) and then contactd
 * there, allowing the first site's origin, with `settings` on top. The service's port is held
 * while the sites bind theirs, so no site can be given it.
 */
async function serviceBehindSites<S extends [Site, ...Site[]]>(
  fake: { url: string },
  makeSites: (contactUrl: string) => S,
  settings: Record<string, string> = {},
): Promise<{ service: Service; sites: S }> {
  const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = held.addr;
  const sites = makeSites(`http://127.0.0.1:${port}`);
  held.close();
  const service = await startService({
    PORT: String(port),
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    ALLOWED_ORIGINS: sites[0].url,
    ...settings,
  });
  return { service, sites };
}

/**
 * A static site on its own origin serving the example with `action` pointing at contactd, after
 * `variant` (the example as it is, by default) has changed the page.
 */
function startStaticSite(contactUrl: string, variant = (page: string) => page): Site {
  const example = Deno.readTextFileSync(new URL("../../examples/contact.html", import.meta.url));
  const page = variant(example)
    .replace('action="/api/contact"', `action="${contactUrl}/api/contact"`);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }),
  );
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

Deno.test({
  name: "browser: a form on another origin works through CORS only when ALLOWED_ORIGINS lists it",
  ...options,
  fn: async () => {
    const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
    const { service, sites: [site, stranger] } = await serviceBehindSites(
      fake,
      (contactUrl) => [startStaticSite(contactUrl), startStaticSite(contactUrl)],
    );
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${site.url}/`);
      for (let i = 1; i <= 5; i++) {
        await fill(page, { message: `cross-origin ${i}` });
        assert.equal((await send(page)).text, "Thank you. Your message was sent.");
      }
      await fill(page, { message: "sixth" });
      // The wait is only known when Retry-After is exposed to the other origin's script.
      assert.match((await send(page)).text, /Please try again in \d+ seconds\.$/);
      assert.equal((await service.records()).length, 5);

      const other = await context.newPage();
      await other.goto(`${stranger.url}/`);
      await fill(other, { message: "from an unlisted site" });
      const refused = await send(other);
      assert.match(refused.text, /^Could not reach the server: your message was not sent\./);
      assert.equal((await service.records()).length, 5);
      assert.equal(fake.delivered.length, 5);
    } finally {
      await browser.close();
      assert.equal(await service.stop(), 0);
      await site.close();
      await stranger.close();
      await fake.close();
      await Deno.remove(service.dir, { recursive: true });
    }
    // Refused preflights are tallied: the summary written at the stop names the stranger.
    assert.ok(
      service.logs().some((log) =>
        log.event === "contact_summary" && Number(log.preflight_origin_not_allowed) >= 1 &&
        log.refused_origin === stranger.url
      ),
    );
  },
});

/** The ALTCHA widget's script, from the npm package `.ci/run` installs beside playwright-core. */
const ALTCHA_WIDGET = `${BROWSER_DEPS}/node_modules/altcha/dist/main/altcha.min.js`;

/**
 * A static site serving the example with its ALTCHA lines uncommented (as the README says to),
 * the widget's script beside it, and the challenge and the post going to contactd's origin.
 */
function startAltchaSite(contactUrl: string): Site {
  const example = Deno.readTextFileSync(new URL("../../examples/contact.html", import.meta.url));
  const lines = /<!-- CHALLENGE=altcha:[^\n]*\n([\s\S]*?)\s*-->/.exec(example);
  assert.ok(lines !== null, "the example form has no ALTCHA block to uncomment");
  const page = example.replace(lines[0], lines[1]!)
    .replace('challenge="/api/challenge"', `challenge="${contactUrl}/api/challenge"`)
    .replace('action="/api/contact"', `action="${contactUrl}/api/contact"`);
  const widget = Deno.readFileSync(ALTCHA_WIDGET);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (request) =>
      new URL(request.url).pathname === "/altcha.min.js"
        ? new Response(widget, { headers: { "content-type": "text/javascript" } })
        : new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }),
  );
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

Deno.test({
  name:
    "browser: with CHALLENGE=altcha the example form solves the challenge in the page and sends",
  ...options,
  fn: () =>
    withOneSite(startAltchaSite, {
      CHALLENGE: "altcha",
      CHALLENGE_SECRET: "YnJvd3Nlci10ZXN0LWFsdGNoYS1zZWNyZXQta2V5LTAxMjM0NTY3",
    }, async ({ browser, service, site, fake }) => {
      const context = await browser.newContext({ viewport: { width: 375, height: 740 } });
      const page = await context.newPage();
      await page.goto(`${site.url}/`);
      await page.locator("altcha-widget input[type=checkbox]").waitFor();
      await fill(page, { name: "Widget", message: "Solved in Chromium" });

      const started = Date.now();
      // The widget draws its check mark over the box: the click goes to the box, as a tap would.
      await page.evaluate(`document.querySelector("altcha-widget input[type=checkbox]").click()`);
      let payload = "";
      while (payload === "" && Date.now() - started < 30_000) {
        payload = await page.evaluate<string>(
          `document.querySelector("#contactd-form input[name=altcha]")?.value ?? ""`,
        );
        if (payload === "") await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.notEqual(payload, "", "the widget did not solve the challenge in 30 s");
      const { took, number } = JSON.parse(atob(payload));
      console.log(
        `ALTCHA solve in Chromium: ${took} ms of hashing for ${number + 1} hashes (widget ` +
          `reported), ${Date.now() - started} ms from click to payload`,
      );
      await Deno.mkdir(OUTPUT, { recursive: true });
      await page.screenshot({ path: `${OUTPUT}altcha-phone.png`, fullPage: true });
      const box = await page.locator("altcha-widget").boundingBox();
      assert.ok(box !== null && box.width > 0 && box.x + box.width <= 375);
      assert.equal(await page.evaluate(`document.documentElement.scrollWidth`), 375);

      await fill(page, { name: "Widget", message: "Solved in Chromium" });
      const status = await send(page);
      assert.deepEqual(status, { text: "Thank you. Your message was sent.", kind: "ok" });
      const [record, ...rest] = await service.records();
      assert.equal(rest.length, 0);
      assert.equal(record!.message, "Solved in Chromium");
      assert.equal(record!.altcha, undefined);
      assert.equal(fake.delivered.length, 1);
    }),
});

/**
 * Runs `run` with contactd behind one static site (`makeSite`, on another origin, allowed), with
 * `settings` on top, a fake Bot API and a browser; stops and removes them all afterwards.
 */
async function withOneSite(
  makeSite: (contactUrl: string) => Site,
  settings: Record<string, string>,
  run: (
    world: { browser: Browser; service: Service; site: Site; fake: FakeBotApi },
  ) => Promise<void>,
) {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const { service, sites: [site] } = await serviceBehindSites(
    fake,
    (contactUrl) => [makeSite(contactUrl)],
    settings,
  );
  const browser = await launchBrowser();
  try {
    await run({ browser, service, site, fake });
  } finally {
    await browser.close();
    assert.equal(await service.stop(), 0);
    await site.close();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
  }
}

/** The example with its block of fields of one's own uncommented, as its comment says to. */
function withOwnFields(example: string): string {
  const block = /<!-- Fields of your own[^\n]*\n(?:[^\n]*\n){2}([\s\S]*?)\s*-->/.exec(example);
  assert.ok(block !== null, "the example form has no block of fields of one's own");
  return example.replace(block[0], block[1]!);
}

Deno.test({
  name:
    "browser: the example's variant with fields of one's own sends every field, with or without JavaScript",
  ...options,
  fn: () =>
    withOneSite((url) => startStaticSite(url, withOwnFields), {}, async (world) => {
      const { browser, service, site, fake } = world;
      for (const javaScriptEnabled of [true, false]) {
        const context = await browser.newContext({ javaScriptEnabled });
        const page = await context.newPage();
        await page.goto(`${site.url}/`);
        await fill(page, { name: "Carl", contact: "carl@example.org", message: "Please call me" });
        await page.locator("#contactd-subject").fill("Quote");
        await page.locator("#contactd-phone").fill("+1 555");
        await page.locator("input[name=topics][value=websites]").click();
        await page.locator("input[name=topics][value=hosting]").click();
        if (javaScriptEnabled) {
          await page.screenshot({ path: `${OUTPUT}form-own-fields.png`, fullPage: true });
          assert.equal((await send(page)).text, "Thank you. Your message was sent.");
        } else {
          // Without a script the browser posts the form itself and lands on the case page.
          await page.locator("button[type=submit]").click();
          await page.waitForURL(CASE_PAGE_SENT);
          assert.ok(
            (await page.locator("body").textContent())?.includes(
              "Thank you. Your message was sent.",
            ),
          );
        }
        await context.close();
      }
      assert.equal(fake.delivered.length, 2);
      for (const text of fake.delivered) {
        assert.match(text, /\nSubject: Quote\nFrom: Carl\nContact: carl@example\.org\n/);
        assert.match(
          text,
          /\nTime: [^\n]+\n· phone: \+1 555\n· topics: websites, hosting\n\nPlease call me$/,
        );
      }
      const records = await service.records();
      assert.deepEqual(
        records.map((record) => record.fields),
        [0, 1].map(() => ({
          subject: "Quote",
          phone: "+1 555",
          topics: "websites, hosting",
        })),
      );
    }),
});

/** An example form of examples/migrating/, as docs/migrating.md shows it. */
const MIGRATING = new URL("../../examples/migrating/", import.meta.url);

/**
 * A static site on its own origin serving `page` at `/` (an example of examples/migrating/, its
 * placeholder addresses replaced: contactd's by `contactUrl`, the site's by its own), a thank-you
 * and a sorry page, and `files` (path: bytes, served as JavaScript).
 */
function startMigratedSite(
  contactUrl: string,
  page: string,
  files: Record<string, Uint8Array<ArrayBuffer>> = {},
): Site {
  let html = "";
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const path = new URL(request.url).pathname;
    const file = Object.hasOwn(files, path) ? files[path] : undefined;
    if (file !== undefined) {
      return new Response(file, { headers: { "content-type": "text/javascript" } });
    }
    const body = path === "/thanks.html"
      ? "<title>Thanks</title><h1>Thanks page</h1>"
      : path === "/sorry.html"
      ? "<title>Sorry</title><h1>Sorry page</h1>"
      : html;
    return new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } });
  });
  const url = `http://127.0.0.1:${server.addr.port}`;
  html = page.replaceAll("https://contact.example.org", contactUrl)
    .replaceAll("https://example.org", url);
  return { url, close: () => server.shutdown() };
}

/** The text of examples/migrating/`name`, after `change`. */
function migratingExample(name: string, change = (page: string) => page): string {
  return change(Deno.readTextFileSync(new URL(name, MIGRATING)));
}

for (const body of ["FormData (multipart)", "URLSearchParams (urlencoded)"]) {
  Deno.test({
    name:
      `browser: Formspree's documented fetch with ${body}, Accept: application/json and a _next reads JSON: thanks on success, contactd's words on a refusal, never a redirect`,
    ...options,
    fn: () =>
      withOneSite(
        (url) =>
          startMigratedSite(
            url,
            migratingExample("formspree_fetch.html", (page) =>
              body.startsWith("URLSearchParams")
                ? page.replace(
                  "body: new FormData(form)",
                  "body: new URLSearchParams(new FormData(form))",
                )
                : page),
          ),
        {},
        async ({ browser, service, site, fake }) => {
          const context = await browser.newContext();
          const page = await context.newPage();
          await page.goto(`${site.url}/`);
          const submit = async () => {
            await page.locator("#my-form-button").click();
            await page.locator("#my-form-status.done").waitFor();
            return (await page.locator("#my-form-status").textContent()) ?? "";
          };
          await page.locator("input[name=email]").fill("fay@example.org");
          await page.locator("textarea[name=message]").fill("Sent the Formspree way");
          assert.equal(await submit(), "Thanks for your submission!");
          // form.reset() ran: the page stayed, and nothing was sent twice.
          assert.equal(await page.evaluate(`document.querySelector("textarea").value`), "");
          assert.equal(new URL(await page.evaluate<string>(`location.href`)).origin, site.url);

          await page.locator("textarea[name=message]").fill("   ");
          assert.equal(await submit(), "message is required.");
          assert.equal(fake.delivered.length, 1);
          const [record, ...rest] = await service.records();
          assert.equal(rest.length, 0);
          assert.equal(record!.contact, "fay@example.org");
          assert.equal(record!.fields, undefined); // _next and _gotcha are not fields
          await context.close();
        },
      ),
  });
}

Deno.test({
  name:
    "browser: a Netlify form posts as Netlify wrote it: form-name is not shown, bot-field is a honeypot, and the relative _redirect lands on the site's thank-you page",
  ...options,
  fn: () =>
    withOneSite(
      (url) => startMigratedSite(url, migratingExample("netlify.html")),
      {},
      async ({ browser, service, site, fake }) => {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(`${site.url}/`);
        await page.locator("input[name=name]").fill("Nell");
        await page.locator("input[name=email]").fill("nell@example.org");
        await page.locator("textarea[name=message]").fill("Moved from Netlify");
        await page.locator("button[type=submit]").click();
        await page.waitForURL(thanksWithCase(site.url));
        assert.equal(await page.locator("h1").textContent(), "Thanks page");
        assert.equal(fake.delivered.length, 1);
        assert.match(fake.delivered[0]!, /Contact \(email\): nell@example\.org/);
        assert.doesNotMatch(fake.delivered[0]!, /form-name|bot-field/);
        assert.equal((await service.records())[0]!.fields, undefined);

        // A bot fills every field, the hidden one too: the same thank-you page, nothing sent.
        await page.goto(`${site.url}/`);
        await page.evaluate(
          `document.querySelector("[name=bot-field]").value = "http://spam.example"`,
        );
        await page.locator("textarea[name=message]").fill("Buy now");
        await page.locator("button[type=submit]").click();
        await page.waitForURL(thanksWithCase(site.url));
        assert.equal(fake.delivered.length, 1);
        assert.equal((await service.records()).length, 1);
        await context.close();
      },
    ),
});

Deno.test({
  name:
    "browser: a relative _redirect on a page of an origin ALLOWED_ORIGINS does not list is not used: the message is sent and the page tells the site's owner why",
  ...options,
  fn: () =>
    withOneSite(
      (url) => startMigratedSite(url, migratingExample("netlify.html")),
      { ALLOWED_ORIGINS: "" },
      async ({ browser, service, site, fake }) => {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(`${site.url}/`);
        await page.locator("textarea[name=message]").fill("Any site may post here");
        await page.locator("button[type=submit]").click();
        await page.waitForURL(/\/api\/contact$/);
        const text = (await page.locator("body").textContent()) ?? "";
        assert.match(text, /^Thank you\. Your message was sent\.\s+\(For the site's owner: /);
        assert.ok(
          text.includes(`_redirect "/thanks.html" was not used. The form is on ${site.url}`),
        );
        await Deno.mkdir(OUTPUT, { recursive: true });
        await page.screenshot({ path: `${OUTPUT}redirect-unresolved.png`, fullPage: true });
        assert.equal(fake.delivered.length, 1);
        assert.equal((await service.records()).length, 1);
        await context.close();
      },
    ),
});

Deno.test({
  name:
    "browser: a Basin or Getform form moved to contactd sends its fields, lands on the site's thank-you page, and _gotcha is a honeypot",
  ...options,
  fn: () =>
    withOneSite(
      (url) => startMigratedSite(url, migratingExample("basin_getform.html")),
      {},
      async ({ browser, service, site, fake }) => {
        const context = await browser.newContext({ javaScriptEnabled: false });
        const page = await context.newPage();
        await page.goto(`${site.url}/`);
        await page.locator("input[name=name]").fill("Bea");
        await page.locator("input[name=email]").fill("bea@example.org");
        await page.locator("input[name=phone]").fill("+1 555 0100");
        await page.locator("textarea[name=message]").fill("Moved from Basin");
        await page.locator("button[type=submit]").click();
        await page.waitForURL(thanksWithCase(site.url));
        const [record] = await service.records();
        assert.deepEqual(
          [record!.name, record!.contact, record!.message, record!.fields],
          ["Bea", "bea@example.org", "Moved from Basin", { phone: "+1 555 0100" }],
        );
        assert.match(fake.delivered[0]!, /· phone: \+1 555 0100/);
        await context.close();

        // A bot fills the hidden _gotcha too: the same thank-you page, nothing sent.
        const scripted = await browser.newContext();
        const bot = await scripted.newPage();
        await bot.goto(`${site.url}/`);
        await bot.evaluate(`document.querySelector("[name=_gotcha]").value = "bot"`);
        await bot.locator("input[name=email]").fill("bot@example.org");
        await bot.locator("textarea[name=message]").fill("spam");
        await bot.locator("button[type=submit]").click();
        await bot.waitForURL(thanksWithCase(site.url));
        assert.equal(fake.delivered.length, 1);
        assert.equal((await service.records()).length, 1);
        await scripted.close();
      },
    ),
});

/** `@formspree/core`'s browser build, installed beside playwright-core by `.ci/run`. */
const FORMSPREE_CORE = `${BROWSER_DEPS}/node_modules/@formspree/core/dist/index.mjs`;
/** The version `.ci/run` pins, named in the skip line's install command. */
const FORMSPREE_CORE_VERSION = Deno.readTextFileSync(new URL("../../.ci/run", import.meta.url))
  .match(/^FORMSPREE_CORE_VERSION=(\S+)$/m)?.[1];
const FORMSPREE_SKIP = SKIP || (() => {
  try {
    Deno.statSync(FORMSPREE_CORE);
    return false;
  } catch {
    return skipBecause(
      `@formspree/core (npm install --prefix ${BROWSER_DEPS} @formspree/core@${FORMSPREE_CORE_VERSION})`,
    );
  }
})();

/**
 * A page on the site that loads the published `@formspree/core` as a module and exposes
 * `submitTo(id, fields, asFormData)`: `submitForm` with `endpoint` set to contactd's `/api`, the
 * result as Formspree's client reports it (JSON text).
 */
const FORMSPREE_CORE_PAGE = `<!doctype html><title>Formspree client</title>
<script type="module">
  import { createClient } from "/formspree-core.mjs";
  const client = createClient();
  window.submitTo = async (id, fields, asFormData) => {
    let data = { ...fields };
    if (asFormData) {
      data = new FormData();
      for (const [name, value] of Object.entries(fields)) data.append(name, value);
    }
    const result = await client.submitForm(id, data, {
      endpoint: "https://contact.example.org/api",
    });
    return JSON.stringify(
      result.kind === "success"
        ? { kind: result.kind, next: result.next }
        : { kind: result.kind, form: result.getFormErrors(), fields: result.getAllFieldErrors() },
    );
  };
  document.title = "ready";
</script>`;

Deno.test({
  name:
    "browser: the published @formspree/core submitForm with endpoint <contactd>/api posts to /api/f/<id>: success, a field error and a refusal read as Formspree's client reads them",
  ignore: FORMSPREE_SKIP,
  sanitizeOps: false,
  sanitizeResources: false,
  fn: () =>
    withOneSite(
      (url) =>
        startMigratedSite(url, FORMSPREE_CORE_PAGE, {
          "/formspree-core.mjs": Deno.readFileSync(FORMSPREE_CORE),
        }),
      { FORMS: "sales", RATE_LIMIT: "4/1h" },
      async ({ browser, service, site, fake }) => {
        const context = await browser.newContext();
        const page = await context.newPage();
        await page.goto(`${site.url}/`);
        await page.waitForURL(`${site.url}/`);
        while ((await page.title()) !== "ready") await new Promise((r) => setTimeout(r, 20));
        const submit = async (id: string, fields: Record<string, string>, formData: boolean) =>
          JSON.parse(
            await page.evaluate<string>(
              `submitTo(${JSON.stringify(id)}, ${JSON.stringify(fields)}, ${formData})`,
            ),
          );

        // Success, as JSON and as FormData (with a relative _next: resolved on the site).
        assert.deepEqual(
          await submit("default", { email: "gus@example.org", message: "via JSON" }, false),
          { kind: "success", next: "" },
        );
        assert.deepEqual(
          await submit("sales", { message: "via FormData", _next: "/thanks.html" }, true),
          { kind: "success", next: `${site.url}/thanks.html` },
        );
        const records = await service.records();
        assert.deepEqual(records.map((record) => [record.form, record.message]), [
          [undefined, "via JSON"],
          ["sales", "via FormData"],
        ]);
        assert.equal(records[0]!.contact, "gus@example.org");
        assert.equal(fake.delivered.length, 2);

        // A field error: in the field's list, with Formspree's code.
        assert.deepEqual(await submit("default", { message: "" }, true), {
          kind: "error",
          form: [],
          fields: [["message", [{
            code: "REQUIRED_FIELD_EMPTY",
            message: "message is required.",
          }]]],
        });
        // A refusal (over RATE_LIMIT): a form error with contactd's sentence.
        await submit("default", { message: "fourth" }, false);
        assert.deepEqual(await submit("default", { message: "fifth" }, false), {
          kind: "error",
          form: [{ code: "UNSPECIFIED", message: ERRORS.rate_limited.message }],
          fields: [],
        });
        assert.equal(fake.delivered.length, 3);
        await context.close();
      },
    ),
});

browserTest(
  "the example form's success shows the case page's link with a line to keep it; the page opens, shows the message, and takes a reply written back without JavaScript",
  async ({ service, fake, visitor }) => {
    const page = await visitor("198.51.100.80", { phone: true });
    await fill(page, { message: "A question <b>without</b> an address" });
    const status = await send(page);
    assert.deepEqual(status, { text: "Thank you. Your message was sent.", kind: "ok" });
    const note = (await page.locator("#contactd-case-note").textContent()) ?? "";
    assert.match(note, /^Keep this link to read the reply and write back: your conversation page/);
    const href = (await page.locator("#contactd-case").getAttribute("href")) ?? "";
    assert.match(href, new RegExp(`^${service.url}/api/case/[A-Za-z0-9_-]{32}$`));
    await Deno.mkdir(OUTPUT, { recursive: true });
    await page.screenshot({ path: `${OUTPUT}case-link.png`, fullPage: true });

    await page.locator("#contactd-case").click();
    await page.waitForURL(href);
    assert.equal(await page.title(), "Your conversation");
    const body = (await page.locator("body").textContent()) ?? "";
    assert.ok(body.includes("A question <b>without</b> an address"), "shown as text, escaped");
    assert.equal(await page.evaluate(`document.querySelectorAll("b").length`), 0);
    assert.equal(await page.evaluate(`document.documentElement.scrollWidth`), 375);
    await page.screenshot({ path: `${OUTPUT}case-page-phone.png`, fullPage: true });

    await page.locator("textarea[name=message]").fill("Written back from the page");
    await page.locator("button[type=submit]").click();
    await page.waitForURL(`${href}?sent=1`);
    assert.ok(
      ((await page.locator("body").textContent()) ?? "").includes("Written back from the page"),
    );
    await page.screenshot({ path: `${OUTPUT}case-written-back.png`, fullPage: true });
    assert.equal(fake.delivered.length, 2);
    assert.match(fake.delivered[1]!, /Follow-up of #\w+, written on the sender's case page/);
    assert.equal((await service.records()).length, 2);
  },
);
