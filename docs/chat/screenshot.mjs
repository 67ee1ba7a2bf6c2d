/**
 * Takes docs/chat/notification.png, the README's "In the chat" picture, from
 * docs/chat/mockup.html in headless Chromium (playwright-core; a Node script, not part of the
 * build or the tests).
 *
 * To re-run it, from the repository's root:
 *
 * ```sh
 * apt-get install -y chromium fonts-noto-color-emoji   # once: the browser and the emoji font
 * npm install --prefix /opt/contactd-browser playwright-core@1.65.1   # once (as .ci/run does)
 * node docs/chat/screenshot.mjs
 * ```
 *
 * `CONTACTD_BROWSER_DEPS` (default `/opt/contactd-browser`) is where playwright-core is
 * installed, `CONTACTD_CHROMIUM` (default `/usr/bin/chromium`) the browser, as for the browser
 * tests (tests/support/browser.ts); nothing is installed into the repository. The page loads
 * nothing from the network (JavaScript off, every request but the page's own aborted).
 *
 * @module
 */
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const PAGE = pathToFileURL(join(HERE, "mockup.html")).href;
const OUT = join(HERE, "notification.png");
const DEPS = process.env.CONTACTD_BROWSER_DEPS ?? "/opt/contactd-browser";
const CHROMIUM = process.env.CONTACTD_CHROMIUM ?? "/usr/bin/chromium";

const require = createRequire(join(DEPS, "node_modules", "/"));
const { chromium } = require("playwright-core");

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
  ],
});
try {
  const context = await browser.newContext({
    viewport: { width: 900, height: 600 },
    deviceScaleFactor: 2,
    javaScriptEnabled: false,
  });
  const page = await context.newPage();
  await page.route(
    "**/*",
    (route) => route.request().url() === PAGE ? route.continue() : route.abort(),
  );
  await page.goto(PAGE);
  await page.locator("#shot").screenshot({ path: OUT, animations: "disabled" });
  console.log(`wrote ${OUT}`);
} finally {
  await browser.close();
}
