/**
 * The updates offset kept in the database (`meta`): none at first, read back after a restart,
 * each save replacing the last, a damaged value logged and read as none, another bot's offset
 * none, a failing store rejecting. And the offset file an older release kept, read for the
 * import.
 */
import assert from "node:assert/strict";
import { updatesOffsetPath } from "../../lib/common/state_files.ts";
import {
  OFFSET_KEY,
  offsetStore,
  offsetText,
  readOffsetFile,
} from "../../lib/inbox/offset_file.ts";
import type { LogFields, Logger, LogLevel } from "../../lib/log/logger.ts";
import { openLocalStore, StoreError } from "../../lib/storage/store.ts";
import { hookFs, MemoryFs } from "../support/memory_fs.ts";
import { failingStore, withTempStore } from "../support/temp_store.ts";

function logger() {
  const lines: { level: LogLevel; fields: LogFields }[] = [];
  const log: Logger = (level, fields) => lines.push({ level, fields });
  return { lines, log };
}

const DAMAGED = [
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
  '{"offset":3,"bot":"x"}',
];

Deno.test("no offset kept is no offset, and nothing is logged", async () => {
  await withTempStore(async ({ store }) => {
    const { lines, log } = logger();
    assert.equal(await offsetStore(store, log).load(), undefined);
    assert.deepEqual(lines, []);
  });
});

Deno.test("a saved offset is read back after a restart; each save replaces the last", async () => {
  await withTempStore(async ({ store, path }) => {
    const { lines, log } = logger();
    const offsets = offsetStore(store, log, 111);
    await offsets.save(1);
    await offsets.save(812_345_678);
    await store.close();
    const reopened = openLocalStore(path, { create: false });
    try {
      assert.equal(await offsetStore(reopened, log, 111).load(), 812_345_678);
      assert.equal(
        await reopened.run("meta.get", { key: OFFSET_KEY }),
        '{"offset":812345678,"bot":111}',
      );
      await offsetStore(reopened, log).save(0);
      assert.equal(await offsetStore(reopened, log).load(), 0);
    } finally {
      await reopened.close();
    }
    assert.deepEqual(lines, []);
  });
});

Deno.test("a damaged offset is logged and read as none; the next save replaces it", async () => {
  await withTempStore(async ({ store }) => {
    for (const text of DAMAGED) {
      await store.run("meta.set", { key: OFFSET_KEY, value: text });
      const { lines, log } = logger();
      assert.equal(await offsetStore(store, log).load(), undefined, JSON.stringify(text));
      assert.deepEqual(lines, [{
        level: "warn",
        fields: { event: "updates_offset_damaged", key: OFFSET_KEY },
      }], JSON.stringify(text));
    }
    const { log } = logger();
    await offsetStore(store, log).save(5);
    assert.equal(await offsetStore(store, log).load(), 5);
  });
});

Deno.test("an offset kept for another bot (the token changed) is none; this bot's is read", async () => {
  await withTempStore(async ({ store }) => {
    await offsetStore(store, () => {}, 111).save(42);
    const { lines, log } = logger();
    assert.equal(await offsetStore(store, log, 222).load(), undefined);
    assert.equal(lines[0]?.fields.event, "updates_offset_other_bot");
    assert.equal(await offsetStore(store, () => {}, 111).load(), 42);
    assert.equal(await offsetStore(store, () => {}).load(), 42, "getMe unanswered: kept");
  });
});

Deno.test("a store that fails rejects, for the poller to log; a failed save leaves the previous offset", async () => {
  await withTempStore(async ({ store }) => {
    const { log } = logger();
    await offsetStore(store, log).save(10);
    const failing = failingStore(store, () => true);
    await assert.rejects(offsetStore(failing, log).load(), StoreError);
    await assert.rejects(offsetStore(failing, log).save(11), StoreError);
    assert.equal(await offsetStore(store, log).load(), 10);
  });
});

Deno.test("the offset file an older release kept is read for the import: none, damaged or a link is none", async () => {
  const messages = "/state/messages.jsonl";
  const path = updatesOffsetPath(messages);
  assert.equal(path, `${messages}.updates`);
  const fs = new MemoryFs();
  fs.mkdir("/state");
  const { lines, log } = logger();
  assert.equal(await readOffsetFile(messages, fs, log), undefined);
  fs.writeText(path, offsetText({ offset: 42, bot: 111 }) + "\n");
  assert.deepEqual(await readOffsetFile(messages, fs, log), { offset: 42, bot: 111 });
  fs.writeText(path, '{"offset":43}\n');
  assert.deepEqual(await readOffsetFile(messages, fs, log), { offset: 43 });
  assert.equal(lines.length, 0);
  for (const text of DAMAGED) {
    fs.writeText(path, text);
    assert.equal(await readOffsetFile(messages, fs, log), undefined, JSON.stringify(text));
    assert.deepEqual(lines.pop()?.fields, { event: "updates_offset_damaged", file: path });
  }
  fs.writeText("/elsewhere", '{"offset":99}\n');
  await fs.remove(path);
  fs.symlink("/elsewhere", path);
  assert.equal(await readOffsetFile(messages, fs, log), undefined);
  assert.equal(lines.pop()?.fields.reason, "symbolic link");
  const refused = hookFs(fs, {
    before(call) {
      if (call.op === "lstat") throw new Deno.errors.PermissionDenied(path);
    },
  });
  await assert.rejects(readOffsetFile(messages, refused, log), Deno.errors.PermissionDenied);
});
