import assert from "node:assert/strict";
import { type BackupRecord, formatRecord, openBackupFile } from "../../lib/storage/backup.ts";

const RECORD: BackupRecord = {
  ts: "2026-11-22T14:03:09Z",
  id: "k3Jd9xQa",
  name: "Ann",
  contact: "@ann",
  message: "line 1\nline 2",
  ip: "203.0.113.7",
  messenger_ok: false,
  messenger_error: "timeout",
};

Deno.test("formatRecord writes one line with the keys in the documented order", () => {
  const line = formatRecord({ ...RECORD, ["extra" as "ts"]: "x" } as BackupRecord);
  assert.ok(line.endsWith("\n"));
  assert.equal(line.indexOf("\n"), line.length - 1);
  assert.deepEqual(Object.keys(JSON.parse(line)), [
    "ts",
    "id",
    "name",
    "contact",
    "message",
    "ip",
    "messenger_ok",
    "messenger_error",
  ]);
  assert.deepEqual(JSON.parse(line), RECORD);
});

Deno.test("formatRecord keeps U+2028 and odd Unicode inside one line", () => {
  const line = formatRecord({ ...RECORD, message: "a\u2028b\u202Ec\r" });
  assert.equal(line.split("\n").length, 2);
  assert.equal(JSON.parse(line).message, "a\u2028b\u202Ec\r");
});

Deno.test("openBackupFile creates the file with mode 0600 and appends", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl`;
  await Deno.writeTextFile(path, "old\n", { mode: 0o600 });
  const appender = await openBackupFile(path, () => assert.fail("not loose"));
  await appender.append("new\n");
  await appender.close();
  assert.equal(await Deno.readTextFile(path), "old\nnew\n");
  const fresh = `${dir}/fresh.jsonl`;
  await (await openBackupFile(fresh)).close();
  assert.equal((await Deno.stat(fresh)).mode! & 0o777, 0o600);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("openBackupFile reports an existing file readable by group or others", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl`;
  await Deno.writeTextFile(path, "");
  await Deno.chmod(path, 0o644);
  const seen: number[] = [];
  await (await openBackupFile(path, (mode) => seen.push(mode))).close();
  assert.deepEqual(seen, [0o644]);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("openBackupFile fails at once when the directory is missing", async () => {
  await assert.rejects(
    openBackupFile("/nonexistent-dir-contactd/messages.jsonl"),
    Deno.errors.NotFound,
  );
});

Deno.test("openBackupFile follows a rotation: the next record goes to a new 0600 file", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl`;
  const appender = await openBackupFile(path);
  await appender.append("one\n");
  await Deno.rename(path, `${path}.1`);
  await appender.append("two\n");
  await appender.close();
  assert.equal(await Deno.readTextFile(`${path}.1`), "one\n");
  assert.equal(await Deno.readTextFile(path), "two\n");
  assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("openBackupFile fails while the directory is gone and recovers when it is back", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl`;
  const appender = await openBackupFile(path);
  await Deno.remove(dir, { recursive: true });
  await assert.rejects(appender.append("lost\n"), Deno.errors.NotFound);
  await Deno.mkdir(dir);
  await appender.append("back\n");
  await appender.close();
  assert.equal(await Deno.readTextFile(path), "back\n");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("openBackupFile puts the first record on its own line after a torn last line", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl`;
  await Deno.writeTextFile(path, '{"whole":1}\n{"torn', { mode: 0o600 });
  const appender = await openBackupFile(path);
  await appender.append('{"next":2}\n');
  await appender.close();
  assert.deepEqual((await Deno.readTextFile(path)).split("\n"), [
    '{"whole":1}',
    '{"torn',
    '{"next":2}',
    "",
  ]);
  await Deno.remove(dir, { recursive: true });
});
