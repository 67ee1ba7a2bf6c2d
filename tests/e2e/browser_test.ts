/**
 * The example form in a real browser: headless Chromium loads `examples/contact.html` from the
 * running service (`SERVE_EXAMPLE=1`, a fake Bot API behind it), fills and sends it, and reads
 * what a visitor would read. Screenshots go to `test-output/browser/` (git-ignored).
 */
import assert from "node:assert/strict";
import { apiError, type FakeBotApi, startFakeBotApi } from "../support/fake_bot_api.ts";
import { type Browser, BROWSER_DEPS, launchBrowser, type Page } from "../support/browser.ts";
import { skipWithout } from "../support/tools.ts";
import { type Service, startService } from "../support/service.ts";

const TOKEN = "123456789:AAE_browser-test-token";
const CHAT_ID = 4242;
const OUTPUT = new URL("../../test-output/browser/", import.meta.url).pathname;
const STATUS = "#contactd-status";
/** The status once an answer is shown; while sending it has no class. */
const DONE = `${STATUS}.ok, ${STATUS}.saved, ${STATUS}.error`;
const SKIP = skipWithout("chromium");

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

    // Not saved at all (a directory where the outbox should be: it cannot be written, not even
    // by root) and not delivered: the sender is asked to try again.
    const outbox = `${service.file}.outbox`;
    await Deno.remove(outbox);
    await Deno.mkdir(outbox);
    try {
      fake.script.push(apiError(500, "Internal Server Error"));
      await fill(page, { message: "nowhere to keep it" });
      const lost = await send(page);
      assert.equal(lost.kind, "error");
      assert.match(lost.text, /could not be sent \(error 500\)\. Please try again later\.$/);
    } finally {
      await Deno.remove(outbox);
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
  "without JavaScript the form posts urlencoded and the visitor reads plain text",
  async ({ service, fake, visitor }) => {
    const page = await visitor("198.51.100.50", { javaScriptEnabled: false });
    await fill(page, { name: "No Script", message: "Plain HTML works" });
    await page.locator("button[type=submit]").click();
    await page.waitForURL(/\/api\/contact$/);
    assert.equal(
      (await page.locator("body").textContent())?.trim(),
      "Thank you. Your message was sent.",
    );
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
          // Without a script the browser posts the form itself and shows contactd's page.
          await page.locator("button[type=submit]").click();
          await page.waitForURL(/\/api\/contact$/);
          assert.equal(
            (await page.locator("body").textContent())?.trim(),
            "Thank you. Your message was sent.",
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
