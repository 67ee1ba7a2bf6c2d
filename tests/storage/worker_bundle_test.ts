/**
 * The database's worker runs from its bundle (tasks/worker_bundle.ts): the bundle must be what
 * lib/storage/sqlite/ bundles to now, or the service would run old code.
 */
import assert from "node:assert/strict";
import { BUNDLE_FILE, bundleFileText, bundleWorker } from "../../tasks/worker_bundle.ts";

Deno.test("lib/storage/sqlite/worker_bundle.json is the bundle of lib/storage/sqlite/worker.ts as it is now (else: deno task worker)", async () => {
  const kept = await Deno.readTextFile(BUNDLE_FILE);
  assert.ok(kept === bundleFileText(await bundleWorker()), "stale: run deno task worker");
});
