/**
 * What the rewrite tests share (retention, erasure): the memory file system with owners.
 *
 * @module
 */
import type { RewriteFs } from "../../lib/storage/rewrite.ts";
import { type FsCall, hookFs, type MemoryFs } from "../support/memory_fs.ts";

/** A memory file system with owners: every call recorded, `before` hooks to hold or fail one. */
export function rewriteFs(memory: MemoryFs, before?: (call: FsCall) => void | Promise<void>) {
  const calls: string[] = [];
  const hooked = hookFs(memory, {
    before: async (call) => {
      calls.push(`${call.op} ${call.path}`);
      await before?.(call);
    },
  });
  const fs: RewriteFs = {
    ...hooked,
    owner: () => Promise.resolve({ uid: 1001, gid: 1002, mode: 0o100640 }),
    chmod: (path, mode) => (calls.push(`chmod ${path} ${mode.toString(8)}`), Promise.resolve()),
    chown: (path, uid, gid) => (calls.push(`chown ${path} ${uid}:${gid}`), Promise.resolve()),
  };
  return { fs, calls };
}
