/**
 * End to end: the outbox's files under the real service and its own permission flags. One
 * service per `MESSAGES_FILE` (a second is refused before it reads or writes anything), a
 * compaction whose rename is made durable by syncing the directory, and `contactd pending`
 * naming damaged lines.
 */
import assert from "node:assert/strict";
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
    // Its outbox is settled once the answer is noted (written just after the answer).
    const deadline = Date.now() + 10_000;
    while (!(await Deno.readTextFile(`${first.file}.outbox`)).includes('"op":"recorded"')) {
      assert.ok(Date.now() < deadline, "the first service noted its answer");
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const files = [first.file, `${first.file}.outbox`, `${first.file}.lock`];
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

Deno.test("e2e: a compaction under the service's own permission flags syncs the directory, so its rename is durable", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${dir}/messages.jsonl`;
  try {
    // 1.5 MiB of delivered submissions and one pending: start-up compacts.
    let text = "";
    for (let i = 0; i < 1500; i++) {
      const id = `dead${String(i).padStart(6, "0")}`;
      text += JSON.stringify({
        op: "add",
        id,
        ts: "2026-11-22T14:03:09Z",
        name: "Ann",
        contact: "@ann",
        message: "m".repeat(900),
        ip: "203.0.113.7",
      }) + "\n" + JSON.stringify({ op: "recorded", id, status: 200 }) + "\n" +
        JSON.stringify({ op: "done", id, ts: "2026-11-22T14:03:10Z", result: "delivered" }) + "\n";
    }
    await Deno.writeTextFile(`${file}.outbox`, text, { mode: 0o600 });
    // Unconfigured: nothing is delivered, only stored.
    const service = await startService({ MESSAGES_FILE: file });
    try {
      assert.ok((await Deno.stat(`${file}.outbox`)).size < 1000, "compacted at start");
      const events = service.logs().map((line) => line.event);
      assert.ok(!events.includes("outbox_directory_sync_failed"), JSON.stringify(service.logs()));
      assert.ok(!events.includes("outbox_compaction_failed"), JSON.stringify(service.logs()));
      assert.equal(await service.stop(), 0);
    } finally {
      await service.stop();
      await Deno.remove(service.dir, { recursive: true });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("e2e: contactd pending names the damaged lines of the outbox and those kept aside", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${dir}/messages.jsonl`;
  try {
    const add = JSON.stringify({
      op: "add",
      id: "pend0001",
      ts: "2026-11-22T14:03:09Z",
      name: "Ann",
      contact: "@ann",
      message: "hello",
      ip: "203.0.113.7",
    });
    await Deno.writeTextFile(`${file}.outbox`, `${add}\n{torn\n`, { mode: 0o600 });
    await Deno.writeTextFile(`${file}.outbox.damaged`, "{earlier\n", { mode: 0o600 });
    const { args, env } = serviceCommand({ MESSAGES_FILE: file });
    const output = await new Deno.Command(Deno.execPath(), {
      args: [...args, "pending"],
      clearEnv: true,
      env,
      cwd: dir,
      stdin: "null",
    }).output();
    const stdout = decode(output.stdout);
    assert.equal(output.code, 0, decode(output.stderr));
    assert.match(stdout, /pend0001/);
    assert.match(
      stdout,
      /damaged: 1 line\(s\) of .*messages\.jsonl\.outbox skipped, 1 kept aside in .*messages\.jsonl\.outbox\.damaged/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
