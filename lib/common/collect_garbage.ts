/**
 * A full garbage collection on request, for the long reads of the backup file
 * (lib/common/line_reader.ts asks for one every {@linkcode COLLECT_EVERY_BYTES}). V8's
 * `JSON.parse` puts every string value of at most 10 characters (an id, an address) into its
 * string table, which lives outside the heap and is emptied only by a full collection; a stream
 * of a million short-lived records never triggers one (the heap itself stays small), so the
 * table, and the process's memory, grew with the file: `contactd export` of a 1 GiB backup file
 * peaked at 180 MiB, twice what it needs (docs/performance.md). The collection is V8's `gc`,
 * exposed through `node:v8` and `node:vm` (no permission needed; Deno 2.9.6 allows it, and
 * tests/common/line_reader_test.ts fails when a runtime stops allowing it).
 *
 * @module
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** How many bytes a stream reads between two full collections. */
export const COLLECT_EVERY_BYTES = 64 * 1024 * 1024;

let _collect: (() => void) | undefined;

/** Runs a full garbage collection (a few tens of milliseconds with contactd's small heap). */
export function collectGarbage(): void {
  _collect ??= _exposeGc();
  _collect();
}

/** V8's `gc`, made available to a new context (throws when the runtime no longer allows it). */
function _exposeGc(): () => void {
  setFlagsFromString("--expose-gc");
  const gc: unknown = runInNewContext("gc");
  if (typeof gc !== "function") throw new TypeError("this runtime exposes no gc");
  return () => gc();
}
