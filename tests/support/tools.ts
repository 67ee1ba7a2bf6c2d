/**
 * External tools some tests need (systemd-analyze, nginx). `.ci/run` installs them and sets
 * `CONTACTD_CI=1`, under which a missing tool fails its tests instead of skipping them.
 *
 * @module
 */

/** The path of `name` on PATH or in the sbin directories, or `undefined`. */
export function findTool(name: string): string | undefined {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").concat(["/usr/sbin", "/sbin"]);
  for (const dir of dirs) {
    try {
      const path = `${dir}/${name}`;
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Whether tests needing `name` should be skipped: only outside CI, when it is missing. */
export function skipWithout(name: string): boolean {
  return findTool(name) === undefined && Deno.env.get("CONTACTD_CI") !== "1";
}

/** `name`'s path; throws with the install hint when it is missing. */
export function requireTool(name: string, debianPackage: string): string {
  const path = findTool(name);
  if (path === undefined) {
    throw new Error(`${name} is missing: apt-get install -y ${debianPackage} (.ci/run does)`);
  }
  return path;
}
