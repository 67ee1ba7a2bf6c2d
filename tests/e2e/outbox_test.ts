/**
 * End to end: the state's files under the real service and its own permission flags. One
 * service per `MESSAGES_FILE` (a second is refused before it reads or writes anything), and the
 * database made 0600 beside the backup file, never through a link.
 */
import assert from "node:assert/strict";
import { openLocalStore } from "../../lib/storage/store.ts";
import { freePort, serviceCommand, startService, withService } from "../support/service.ts";

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Every byte and the modification time of each file, to compare before and after. */
async function snapshot(files: string[]) {
  return await Promise.all(files.map(async (file) => ({
    file,
    text: await Deno.readTextFile(file),
    mtime: (await Deno.stat(file)).mtime?.getTime(),
  })));
}

Deno.test("e2e: a second serve on the same MESSAGES_FILE is refused with one line naming the lock file and the other process, touching nothing", async () => {
  await withService({}, async (first) => {
    const response = await first.post({ message: "to the first one" }, "10.60.0.1");
    assert.equal(response.status, 200);
    await response.body?.cancel();
    // Its outbox is settled once the answer is noted (just after the answer): its row goes.
    const deadline = Date.now() + 10_000;
    const store = openLocalStore(`${first.file}.db`, { create: false });
    while ((await store.run("outbox.window", { afterSeq: 0, limit: 1 })).length > 0) {
      assert.ok(Date.now() < deadline, "the first service noted its answer");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await store.close();
    const files = [first.file, `${first.file}.db`, `${first.file}.lock`];
    const before = await snapshot(files);
    // A stray second start (another unit, a `deno task contactd` left running), with the same
    // derived flags, on the same files.
    const { args, env } = serviceCommand({
      MESSENGER_API_URL: "http://127.0.0.1:9",
      MESSENGER_BOT_TOKEN: "1:x",
      MESSENGER_CHAT_ID: "1",
      PORT: String(freePort()),
      MESSAGES_FILE: first.file,
    });
    const child = new Deno.Command(Deno.execPath(), {
      args,
      env,
      clearEnv: true,
      cwd: first.dir,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Started instead of refused, it would serve on: stopped, and the assertions below fail.
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const second = await child.output();
    clearTimeout(timer);
    assert.equal(second.code, 1);
    assert.equal(decode(second.stdout), "");
    const lines = decode(second.stderr).split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1, decode(second.stderr));
    const refusal = JSON.parse(lines[0]!);
    assert.equal(refusal.event, "files_locked");
    assert.equal(refusal.file, `${first.file}.lock`);
    assert.match(refusal.error, new RegExp(`process ${first.process.pid}\\b`));
    assert.deepEqual(await snapshot(files), before, "the running service's files are untouched");
    // The first one goes on.
    const after = await first.post({ message: "still the first one" }, "10.60.0.2");
    assert.equal(after.status, 200);
    await after.body?.cancel();
  });
});

Deno.test("e2e: under the service's own permission flags the database is made 0600 beside the backup file and its worker runs; a link there is refused", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${dir}/messages.jsonl`;
  try {
    // Unconfigured: nothing is delivered, only stored (in the database, by its worker).
    const service = await startService({ MESSAGES_FILE: file });
    try {
      const response = await service.post({ message: "kept" }, "10.60.0.3");
      assert.equal(response.status, 503);
      await response.body?.cancel();
      assert.equal((await Deno.stat(`${file}.db`)).mode! & 0o777, 0o600);
      assert.equal(await service.stop(), 0);
    } finally {
      await service.stop();
      await Deno.remove(service.dir, { recursive: true });
    }
    const store = openLocalStore(`${file}.db`, { create: false });
    assert.equal(await store.run("outbox.waiting", undefined), 1);
    await store.close();
    // A link where the database is: refused at start, its target untouched.
    await Deno.rename(`${file}.db`, `${dir}/elsewhere.db`);
    await Deno.symlink(`${dir}/elsewhere.db`, `${file}.db`);
    const refused = await startService({ MESSAGES_FILE: file }).then(
      (started) => ({ started }),
      (error: Error) => ({ error }),
    );
    if ("started" in refused) {
      await refused.started.stop();
      await Deno.remove(refused.started.dir, { recursive: true });
      assert.fail("the service started on a linked database");
    }
    assert.match(String(refused.error), /database_open_failed|symbolic link/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
