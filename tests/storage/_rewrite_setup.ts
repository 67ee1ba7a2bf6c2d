/**
 * What the rewrite tests share (retention, erasure): the memory file system with owners.
 *
 * @module
 */
import type { FileOwner, RewriteFs } from "../../lib/storage/rewrite.ts";
import { type FsCall, hookFs, type MemoryFs } from "../support/memory_fs.ts";

/**
 * A memory file system with owners: every call recorded, `before` hooks to hold or fail one;
 * `owners` by path, else 1001:1002 (a `.rewrite` file 0:0).
 */
export function rewriteFs(
  memory: MemoryFs,
  before?: (call: FsCall) => void | Promise<void>,
  owners: Readonly<Record<string, FileOwner>> = {},
) {
  const calls: string[] = [];
  const hooked = hookFs(memory, {
    before: async (call) => {
      calls.push(`${call.op} ${call.path}`);
      await before?.(call);
    },
  });
  const fs: RewriteFs = {
    ...hooked,
    // The service's files are 1001:1002; a new temporary file is its creator's (root's) until given.
    owner: (path) =>
      Promise.resolve(
        owners[path] ??
          (path.endsWith(".rewrite")
            ? { uid: 0, gid: 0, mode: 0o100600 }
            : { uid: 1001, gid: 1002, mode: 0o100640 }),
      ),
    chmod: (path, mode) => (calls.push(`chmod ${path} ${mode.toString(8)}`), Promise.resolve()),
    chown: (path, uid, gid) => (calls.push(`chown ${path} ${uid}:${gid}`), Promise.resolve()),
  };
  return { fs, calls };
}
