/**
 * The example form with its file input turned on (`ATTACHMENTS`), in headless Chromium: a file
 * chosen in the page reaches the chat byte for byte, sent by the page's script (a multipart
 * fetch, JSON answer) and by the browser alone without JavaScript (a multipart form post, `303`).
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { launchBrowser } from "../support/browser.ts";
import { skipWithout } from "../support/tools.ts";
import { startService, waitFor } from "../support/service.ts";

const TOKEN = "123456789:AAE_browser-files-token";
const CHAT_ID = 4343;
const SKIP = skipWithout("chromium");
/** Where a form post without JavaScript lands: the sender's case page. */
const CASE_PAGE_SENT = /\/api\/case\/[A-Za-z0-9_-]{32}\?sent=1$/;

/** The example with its commented file input turned on, posting to `contactUrl`. */
function filesExample(contactUrl: string): string {
  const example = Deno.readTextFileSync(new URL("../../examples/contact.html", import.meta.url));
  const page = example
    .replace(
      'action="/api/contact" method="post"',
      `action="${contactUrl}/api/contact" method="post" enctype="multipart/form-data"`,
    )
    .replace(
      /<!-- Files \(only with ATTACHMENTS[\s\S]*?(<label for="contactd-file">[\s\S]*?>)\s*-->/,
      "$1",
    );
  assert.match(page, /<input id="contactd-file"/);
  assert.match(page, /enctype="multipart\/form-data"/);
  return page;
}

function pdf(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  bytes.set(new TextEncoder().encode("%PDF-1.7\n"));
  for (let i = 9; i < size; i++) bytes[i] = (i * 17 + 3) & 0xff;
  return bytes;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

Deno.test({
  name:
    "browser: a file chosen in the example form reaches the chat byte for byte, with JavaScript (JSON answer) and without (303 to the case page)",
  ignore: SKIP,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
    const held = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const contactUrl = `http://127.0.0.1:${held.addr.port}`;
    const page = filesExample(contactUrl);
    const site = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }),
    );
    const siteUrl = `http://127.0.0.1:${site.addr.port}`;
    held.close();
    const service = await startService({
      PORT: String(new URL(contactUrl).port),
      MESSENGER_BOT_TOKEN: TOKEN,
      MESSENGER_CHAT_ID: String(CHAT_ID),
      MESSENGER_API_URL: fake.url,
      ALLOWED_ORIGINS: siteUrl,
      ATTACHMENTS: "1MB",
    });
    const browser = await launchBrowser();
    try {
      const files = [pdf(200_000), pdf(300_000)];
      for (const [i, javaScriptEnabled] of [true, false].entries()) {
        const context = await browser.newContext({ javaScriptEnabled });
        const tab = await context.newPage();
        await tab.goto(`${siteUrl}/`);
        await tab.locator("#contactd-message").fill(`with a file ${i}`);
        await tab.locator("#contactd-file").setInputFiles([
          { name: `cv ${i}.pdf`, mimeType: "application/pdf", buffer: Buffer.from(files[i]!) },
        ]);
        await tab.locator("button[type=submit]").click();
        if (javaScriptEnabled) {
          await tab.locator("#contactd-status.ok").waitFor();
          assert.equal(
            await tab.locator("#contactd-status").textContent(),
            "Thank you. Your message was sent.",
          );
        } else {
          await tab.waitForURL(CASE_PAGE_SENT);
        }
        await waitFor(() => fake.documents.length === i + 1, 20_000, `document ${i} sent`);
        assert.equal(sha256(fake.documents[i]!.bytes), sha256(files[i]!));
        assert.equal(fake.documents[i]!.name, `cv ${i}.pdf`);
        await context.close();
      }
      const records = await service.records();
      assert.deepEqual(records.map((r) => r.message), ["with a file 0", "with a file 1"]);
      assert.deepEqual(
        records.map((r) => (r.files as { sha256: string }[])[0]!.sha256),
        files.map(sha256),
      );
      assert.equal(await service.stop(), 0);
    } finally {
      await browser.close();
      await service.stop();
      await site.shutdown();
      await fake.close();
      await Deno.remove(service.dir, { recursive: true });
    }
  },
});
