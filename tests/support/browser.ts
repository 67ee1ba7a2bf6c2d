/**
 * Test harness: Debian's Chromium driven by playwright-core, both installed outside the
 * repository by `.ci/run` (`apt-get install chromium`, `npm install --prefix
 * /opt/contactd-browser playwright-core`). Only the few playwright calls the tests use are
 * typed here, so type-checking does not depend on the installation.
 *
 * @module
 */
import { createRequire } from "node:module";

/** Where `.ci/run` installs playwright-core; `CONTACTD_BROWSER_DEPS` overrides it. */
export const BROWSER_DEPS = Deno.env.get("CONTACTD_BROWSER_DEPS") ?? "/opt/contactd-browser";
/** Debian's Chromium; `CONTACTD_CHROMIUM` overrides it. */
export const CHROMIUM = Deno.env.get("CONTACTD_CHROMIUM") ?? "/usr/bin/chromium";

/** The parts of a playwright `Locator` the tests use. */
export interface Locator {
  fill(value: string): Promise<void>;
  click(): Promise<void>;
  focus(): Promise<void>;
  isDisabled(): Promise<boolean>;
  /** Waits until the selector matches a visible element. */
  waitFor(): Promise<void>;
  textContent(): Promise<string | null>;
  getAttribute(name: string): Promise<string | null>;
  boundingBox(): Promise<{ x: number; y: number; width: number; height: number } | null>;
  /** Chooses files in a file input (playwright's `setInputFiles` with in-memory files). */
  setInputFiles(files: { name: string; mimeType: string; buffer: Uint8Array }[]): Promise<void>;
}

/** The parts of a playwright `Page` the tests use. */
export interface Page {
  goto(url: string): Promise<unknown>;
  locator(selector: string): Locator;
  title(): Promise<string>;
  keyboard: { press(key: string): Promise<void> };
  evaluate<T>(script: string): Promise<T>;
  waitForURL(url: string | RegExp): Promise<void>;
  route(url: string, handler: (route: { abort(): Promise<void> }) => unknown): Promise<void>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
}

/** The parts of a playwright `BrowserContext` the tests use. */
export interface Context {
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/** Options of a new context (a fresh, isolated browser profile). */
export interface ContextOptions {
  readonly extraHTTPHeaders?: Record<string, string>;
  readonly javaScriptEnabled?: boolean;
  readonly viewport?: { width: number; height: number };
}

/** A running headless Chromium. */
export interface Browser {
  newContext(options?: ContextOptions): Promise<Context>;
  close(): Promise<void>;
}

/** True when Chromium and playwright-core are installed where the tests look. */
export function browserInstalled(): boolean {
  try {
    Deno.statSync(CHROMIUM);
    Deno.statSync(`${BROWSER_DEPS}/node_modules/playwright-core/package.json`);
    return true;
  } catch {
    return false;
  }
}

/**
 * Launches headless Chromium. Playwright gives it a fresh temporary user-data-dir, deleted on
 * close. Flags: no sandbox (CI runs as root), no GPU, and no background traffic to Google.
 */
export function launchBrowser(): Promise<Browser> {
  // playwright-core's bundled is-wsl probes /proc/sys/fs/binfmt_misc at load time, which Deno
  // allows only under --allow-all; this variable defers the probe (used only to open desktop
  // apps, never on this path).
  Deno.env.set("__IS_WSL_TEST__", "1");
  const require = createRequire(`${BROWSER_DEPS}/node_modules/`);
  const { chromium } = require("playwright-core");
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}
