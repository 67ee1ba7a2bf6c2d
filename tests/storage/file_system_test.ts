import assert from "node:assert/strict";
import { denoFs, openNoFollow, readTextIfPresent } from "../../lib/storage/file_system.ts";

Deno.test("openNoFollow refuses a dangling symbolic link and creates nothing where it points", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const target = `${dir}/elsewhere`;
    await Deno.symlink(target, `${dir}/messages.jsonl.lock`);
    await assert.rejects(
      openNoFollow(denoFs, `${dir}/messages.jsonl.lock`, {
        write: true,
        create: true,
        mode: 0o600,
      }),
      Deno.errors.PermissionDenied,
    );
    await assert.rejects(Deno.lstat(target), Deno.errors.NotFound);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openNoFollow refuses a link to an existing file and leaves that file as it was", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const target = `${dir}/precious`;
    await Deno.writeTextFile(target, "keep me");
    await Deno.symlink(target, `${dir}/messages.jsonl`);
    await assert.rejects(
      openNoFollow(denoFs, `${dir}/messages.jsonl`, { append: true, create: true }),
      Deno.errors.PermissionDenied,
    );
    assert.equal(await Deno.readTextFile(target), "keep me");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("openNoFollow creates a missing file with its mode, and opens an existing one", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/messages.jsonl`;
    const created = await openNoFollow(denoFs, path, { append: true, create: true, mode: 0o600 });
    await created.write(new TextEncoder().encode("one\n"));
    created.close();
    assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
    const again = await openNoFollow(denoFs, path, { append: true, create: true, mode: 0o600 });
    await again.write(new TextEncoder().encode("two\n"));
    again.close();
    assert.equal(await Deno.readTextFile(path), "one\ntwo\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readTextIfPresent reads a file whole, says undefined for none, and never reads through a link", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/f`, "a\nb é\n");
    assert.equal(await readTextIfPresent(denoFs, `${dir}/f`), "a\nb é\n");
    assert.equal(await readTextIfPresent(denoFs, `${dir}/none`), undefined);
    await Deno.symlink(`${dir}/f`, `${dir}/link`);
    await assert.rejects(readTextIfPresent(denoFs, `${dir}/link`), Deno.errors.PermissionDenied);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
