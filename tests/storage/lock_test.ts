import assert from "node:assert/strict";
import { FilesLocked, lockFiles } from "../../lib/storage/lock.ts";
import { MemoryFs } from "../support/memory_fs.ts";

Deno.test("a second lock on the same MESSAGES_FILE is refused, naming the lock file and the holder's process", async () => {
  const fs = new MemoryFs();
  const first = await lockFiles("/data/messages.jsonl", 4242, fs);
  assert.equal(first.file, "/data/messages.jsonl.lock");
  assert.equal(fs.readText("/data/messages.jsonl.lock"), "4242\n");
  const refused = await lockFiles("/data/messages.jsonl", 7, fs).then(
    () => undefined,
    (error) => error,
  );
  assert.ok(refused instanceof FilesLocked);
  assert.equal(refused.holder, "4242");
  assert.match(refused.message, /\/data\/messages\.jsonl\.lock is locked by another contactd/);
  assert.match(refused.message, /process 4242/);
  assert.equal(fs.readText("/data/messages.jsonl.lock"), "4242\n", "the refused one wrote nothing");
  first.release();
  const next = await lockFiles("/data/messages.jsonl", 7, fs);
  assert.equal(fs.readText("/data/messages.jsonl.lock"), "7\n");
  next.release();
});

Deno.test("the lock holds across processes' open files on the real file system (flock), and is released on close", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-lock-" });
  try {
    const file = `${dir}/messages.jsonl`;
    const first = await lockFiles(file, 1);
    await assert.rejects(lockFiles(file, 2), FilesLocked);
    assert.equal((await Deno.stat(`${file}.lock`)).mode! & 0o777, 0o600);
    first.release();
    (await lockFiles(file, 3)).release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a lock file that is a symbolic link is refused, its target untouched", async () => {
  const fs = new MemoryFs();
  fs.writeText("/victim", "precious\n");
  fs.symlink("/victim", "/data/messages.jsonl.lock");
  await assert.rejects(lockFiles("/data/messages.jsonl", 1, fs), /symbolic link/);
  assert.equal(fs.readText("/victim"), "precious\n");
});
