/**
 * A spool (lib/files/spool.ts) in a temporary directory, removed after the test.
 *
 * @module
 */
import { openSpool, type Spool } from "../../lib/files/spool.ts";

/** Runs `test` with a spool at `<temporary directory>/messages.jsonl.files` and that path. */
export async function withSpool(
  test: (spool: Spool, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await test(await openSpool(`${dir}/messages.jsonl.files`), `${dir}/messages.jsonl.files`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
