import assert from "node:assert/strict";
import { updatesOffsetPath } from "../../lib/common/state_files.ts";
import { offsetFile } from "../../lib/inbox/offset_file.ts";
import type { LogFields, Logger, LogLevel } from "../../lib/log/logger.ts";
import { hookFs, MemoryFs } from "../support/memory_fs.ts";

const MESSAGES = "/state/messages.jsonl";
const PATH = `${MESSAGES}.updates`;

function setup() {
  const fs = new MemoryFs();
  fs.mkdir("/state");
  const lines: { level: LogLevel; fields: LogFields }[] = [];
  const log: Logger = (level, fields) => lines.push({ level, fields });
  return { fs, lines, log };
}

Deno.test("the offset file lies beside MESSAGES_FILE", () => {
  assert.equal(updatesOffsetPath(MESSAGES), PATH);
});

Deno.test("no offset file is no offset, and nothing is logged", async () => {
  const { fs, lines, log } = setup();
  assert.equal(await offsetFile(MESSAGES, fs, log).load(), undefined);
  assert.deepEqual(lines, []);
});

Deno.test("a saved offset is read back, by a new store as after a restart", async () => {
  const { fs, lines, log } = setup();
  await offsetFile(MESSAGES, fs, log).save(812_345_678);
  assert.equal(await offsetFile(MESSAGES, fs, log).load(), 812_345_678);
  assert.equal(fs.readText(PATH), '{"offset":812345678}\n');
  assert.deepEqual(lines, []);
});

Deno.test("each save replaces the last: one whole line, private, no temporary file left", async () => {
  const { fs, log } = setup();
  const store = offsetFile(MESSAGES, fs, log);
  await store.save(1);
  await store.save(2);
  await store.save(0);
  assert.equal(fs.readText(PATH), '{"offset":0}\n');
  assert.equal(await store.load(), 0);
  assert.equal((await fs.lstat(PATH)).mode! & 0o777, 0o600);
  assert.equal(fs.exists(`${PATH}.tmp`), false);
  assert.ok((fs.directorySyncs.get("/state") ?? 0) >= 3, "the rename is made durable");
});

Deno.test("a damaged or torn offset file is logged and read as no offset", async () => {
  for (
    const text of [
      "",
      '{"offset":4',
      "not json\n",
      "[]",
      "42",
      "null",
      '{"offset":-1}',
      '{"offset":1.5}',
      '{"offset":"7"}',
      '{"offset":9007199254740992}',
      '{"other":3}',
    ]
  ) {
    const { fs, lines, log } = setup();
    fs.writeText(PATH, text);
    assert.equal(await offsetFile(MESSAGES, fs, log).load(), undefined, JSON.stringify(text));
    assert.deepEqual(lines, [{
      level: "warn",
      fields: { event: "updates_offset_damaged", file: PATH },
    }], JSON.stringify(text));
  }
});

Deno.test("a damaged offset file is replaced whole by the next save", async () => {
  const { fs, log } = setup();
  fs.writeText(PATH, '{"offset":4');
  const store = offsetFile(MESSAGES, fs, log);
  await store.save(5);
  assert.equal(fs.readText(PATH), '{"offset":5}\n');
  assert.equal(await store.load(), 5);
});

Deno.test("a file that cannot be read (other than missing) is thrown, for the poller to log", async () => {
  const { fs, log } = setup();
  fs.writeText(PATH, '{"offset":4}\n');
  const failing = hookFs(fs, {
    before(call) {
      if (call.op === "open" && call.path === PATH) throw new Deno.errors.PermissionDenied(PATH);
    },
  });
  await assert.rejects(offsetFile(MESSAGES, failing, log).load(), Deno.errors.PermissionDenied);
});

Deno.test("a save that fails leaves the previous offset and no temporary file", async () => {
  const { fs, lines, log } = setup();
  await offsetFile(MESSAGES, fs, log).save(10);
  const failing = hookFs(fs, {
    before(call) {
      if (call.op === "rename") throw new Deno.errors.Interrupted("disk gone");
    },
  });
  await assert.rejects(offsetFile(MESSAGES, failing, log).save(11), Deno.errors.Interrupted);
  assert.equal(await offsetFile(MESSAGES, fs, log).load(), 10);
  assert.equal(fs.exists(`${PATH}.tmp`), false);
  assert.deepEqual(lines, []);
});

Deno.test("a save never writes through a symbolic link at the offset file", async () => {
  const { fs, log } = setup();
  fs.writeText("/elsewhere", "precious\n");
  fs.symlink("/elsewhere", PATH);
  await offsetFile(MESSAGES, fs, log).save(3);
  assert.equal(fs.readText("/elsewhere"), "precious\n");
  assert.equal((await fs.lstat(PATH)).isSymlink, false);
  assert.equal(fs.readText(PATH), '{"offset":3}\n');
});

Deno.test("an offset is never read through a symbolic link at the offset file", async () => {
  const { fs, log } = setup();
  fs.writeText("/elsewhere", '{"offset":99}\n');
  fs.symlink("/elsewhere", PATH);
  let loaded: number | undefined;
  try {
    loaded = await offsetFile(MESSAGES, fs, log).load();
  } catch {
    loaded = undefined;
  }
  assert.equal(loaded, undefined);
});

Deno.test("an offset kept for another bot (the token changed) is none; this bot's is read", async () => {
  const fs = new MemoryFs();
  fs.mkdir("/state");
  await offsetFile(MESSAGES, fs, () => {}, 111).save(42);
  const lines: LogFields[] = [];
  assert.equal(
    await offsetFile(MESSAGES, fs, (_l, f) => void lines.push(f), 222).load(),
    undefined,
  );
  assert.equal(lines[0]?.event, "updates_offset_other_bot");
  assert.equal(await offsetFile(MESSAGES, fs, () => {}, 111).load(), 42);
});
