/**
 * Copies of the sources for tests that run the service as another user or inside a namespace
 * that hides the checkout.
 *
 * @module
 */

/** The checkout's root, ending in `/`. */
export const ROOT = new URL("../../", import.meta.url).pathname;

/** Copies `lib/` (every topic folder in it) to `${dest}/lib`, readable by others. */
export async function copyLib(dest: string): Promise<void> {
  await copyTree(`${ROOT}lib`, `${dest}/lib`);
}

/** Copies the folder `from` with everything in it to `to`, readable by others. */
export async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true, mode: 0o755 });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await copyTree(`${from}/${entry.name}`, `${to}/${entry.name}`);
    else if (entry.isFile) await Deno.copyFile(`${from}/${entry.name}`, `${to}/${entry.name}`);
  }
}
