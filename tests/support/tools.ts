/**
 * System tools some tests need (nginx, systemd, Chromium, util-linux, logrotate, curl): outside CI
 * a test whose tool is missing is skipped and the tool recorded, and the last test file
 * (`tests/zz_skipped_tools_test.ts`) names them all in one line with the install command. Under
 * `.ci/run` (`CONTACTD_CI=1`, which installs them) a missing tool fails its tests instead.
 *
 * @module
 */
import { browserInstalled } from "./browser.ts";

/** How to install each tool on Debian (what `.ci/run` does). */
export const INSTALL: Readonly<Record<string, string>> = {
  nginx: "apt-get install -y nginx",
  "systemd-analyze": "apt-get install -y systemd",
  systemctl: "apt-get install -y systemd",
  unshare: "apt-get install -y util-linux",
  nsenter: "apt-get install -y util-linux",
  prlimit: "apt-get install -y util-linux",
  setpriv: "apt-get install -y util-linux",
  logrotate: "apt-get install -y logrotate",
  curl: "apt-get install -y curl",
  true: "apt-get install -y coreutils",
  chromium:
    "apt-get install -y chromium && npm install --prefix /opt/contactd-browser playwright-core@1.65.1",
};

/** True under `.ci/run`, where nothing may be skipped for a missing tool. */
export function underCi(): boolean {
  return Deno.env.get("CONTACTD_CI") === "1";
}

/**
 * The directories searched: PATH and the sbin directories, or only `CONTACTD_TOOLS_PATH` when
 * set (a colon-separated list; empty: no tools), which lets a run pretend a tool is missing.
 */
function searchPath(): string[] {
  const only = Deno.env.get("CONTACTD_TOOLS_PATH");
  if (only !== undefined) return only.split(":").filter(Boolean);
  return (Deno.env.get("PATH") ?? "").split(":").concat(["/usr/sbin", "/sbin"]);
}

/** The path of `name` on the search path, or `undefined`. */
export function findTool(name: string): string | undefined {
  for (const dir of searchPath()) {
    try {
      const path = `${dir}/${name}`;
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Where this `deno test` run records what it skipped (one process runs every test file). */
export function skippedFile(): string {
  const tmp = Deno.env.get("TMPDIR") || "/tmp";
  return `${tmp}/contactd-skipped-tools-${Deno.pid}.txt`;
}

/**
 * Whether tests should be skipped for want of `what` (a tool and how to get it): records it for
 * the summary line and answers true; under CI it records it too (the last test file then fails)
 * and answers false, so the tests run and fail on what is missing.
 */
export function skipBecause(what: string): boolean {
  Deno.writeTextFileSync(skippedFile(), `${what.replaceAll("\n", " ")}\n`, { append: true });
  return !underCi();
}

/**
 * Whether tests needing `name` should be skipped: only outside CI, when it is missing.
 * `"chromium"` means Chromium and playwright-core where `tests/support/browser.ts` looks.
 */
export function skipWithout(name: string): boolean {
  const present = name === "chromium"
    ? browserInstalled() &&
      (Deno.env.get("CONTACTD_TOOLS_PATH") === undefined || findTool(name) !== undefined)
    : findTool(name) !== undefined;
  if (present) return false;
  return skipBecause(`${name} (${installHint(name)})`);
}

/** How to install `name` (from {@linkcode INSTALL}). */
function installHint(name: string): string {
  return INSTALL[name] ?? `install ${name}`;
}

/** `name`'s path; throws with the install hint when it is missing. */
export function requireTool(name: string): string {
  const path = findTool(name);
  if (path === undefined) {
    throw new Error(`${name} is missing: ${installHint(name)} (.ci/run does)`);
  }
  return path;
}

/**
 * The one summary line of what this run skipped, distinct and in first-seen order, or
 * `undefined` when nothing was; `text` is the recording file's content.
 */
export function skippedSummary(text: string): string | undefined {
  const skipped = [...new Set(text.split("\n").filter(Boolean))];
  return skipped.length === 0 ? undefined : `skipped for missing tools: ${skipped.join(", ")}`;
}
