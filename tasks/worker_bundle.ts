/**
 * `deno task worker`: bundles the database's worker (lib/storage/sqlite/worker.ts and the
 * folder's modules it imports) into one module, kept as the text of
 * `lib/storage/sqlite/worker_bundle.json`. lib/storage/store.ts imports that JSON (so it is part of
 * the static module graph: `deno run` reads it without a permission and `deno compile` embeds it)
 * and starts the worker from it as a `blob:` URL, which, unlike a worker's local module, needs no
 * `--allow-read`. `tests/storage/worker_bundle_test.ts` fails when the bundle is stale. With
 * `--check`, only compares.
 *
 * @module
 */

/** The worker's entry, and where its bundle is kept. */
export const WORKER_ENTRY = new URL("../lib/storage/sqlite/worker.ts", import.meta.url);
export const BUNDLE_FILE = new URL("../lib/storage/sqlite/worker_bundle.json", import.meta.url);

/** The bundle's file text for `source` (the JSON module lib/storage/store.ts imports). */
export function bundleFileText(source: string): string {
  return `${JSON.stringify({ source }, null, 2)}\n`;
}

/** Bundles the worker now (`deno bundle`, the Deno running this); resolves with its source. */
export async function bundleWorker(): Promise<string> {
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--platform", "deno", WORKER_ENTRY.pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!result.success) {
    throw new Error(`deno bundle failed: ${new TextDecoder().decode(result.stderr)}`);
  }
  return new TextDecoder().decode(result.stdout);
}

if (import.meta.main) {
  const text = bundleFileText(await bundleWorker());
  if (Deno.args.includes("--check")) {
    const kept = await Deno.readTextFile(BUNDLE_FILE).catch(() => "");
    if (kept !== text) {
      console.error("lib/storage/sqlite/worker_bundle.json is stale: run deno task worker");
      Deno.exit(1);
    }
  } else {
    await Deno.writeTextFile(BUNDLE_FILE, text);
  }
}
