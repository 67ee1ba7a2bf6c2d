import assert from "node:assert/strict";
import {
  type BackupRecord,
  createAppender,
  formatRecord,
  formatTimestamp,
  openBackupFile,
  type WritableFile,
} from "../lib/backup.ts";

const RECORD: BackupRecord = {
  ts: "2026-11-22T14:03:09Z",
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

Deno.test("formatTimestamp is UTC with whole seconds and a trailing Z", () => {
  assert.equal(formatTimestamp(new Date("2026-11-22T14:03:09.987+01:00")), "2026-11-22T13:03:09Z");
});

function fakeFile(behaviour: { failWriteAt?: number; failSync?: boolean } = {}) {
  const writes: string[] = [];
  const log: string[] = [];
  let calls = 0;
  const file: WritableFile = {
    async write(bytes) {
      calls++;
      await Promise.resolve();
      if (behaviour.failWriteAt === calls) throw new Error("ENOSPC");
      // Short writes happen; the appender must loop.
      const n = Math.min(bytes.byteLength, 7);
      writes.push(new TextDecoder().decode(bytes.subarray(0, n)));
      log.push("write");
      return n;
    },
    syncData() {
      log.push("sync");
      return behaviour.failSync ? Promise.reject(new Error("EIO")) : Promise.resolve();
    },
    close() {
      log.push("close");
    },
  };
  return { file, writes, log };
}

Deno.test("createAppender writes concurrent lines whole, in order, each synced before resolving", async () => {
  const { file, writes, log } = fakeFile();
  const appender = createAppender(file);
  const lines = Array.from({ length: 20 }, (_, i) => formatRecord({ ...RECORD, name: `n${i}` }));
  await Promise.all(lines.map((line) => appender.append(line)));
  assert.equal(writes.join(""), lines.join(""));
  assert.equal(log.filter((entry) => entry === "sync").length, 20);
  assert.equal(log.at(-1), "sync");
  await appender.close();
  assert.equal(log.at(-1), "close");
});

Deno.test("createAppender rejects when the sync fails and keeps serving later lines", async () => {
  const { file } = fakeFile({ failSync: true });
  const appender = createAppender(file);
  await assert.rejects(appender.append("a\n"), /EIO/);
  await assert.rejects(appender.append("b\n"), /EIO/);
});

Deno.test("createAppender starts the next line fresh after a torn write", async () => {
  // The first write call lands 7 bytes, the second fails: a torn fragment stays in the file.
  const { file, writes } = fakeFile({ failWriteAt: 2 });
  const appender = createAppender(file);
  await assert.rejects(appender.append('{"ts":"x"}\n'));
  await appender.append('{"ts":"y"}\n');
  const lines = writes.join("").split("\n");
  assert.deepEqual(lines, ['{"ts":"', '{"ts":"y"}', ""]);
  assert.equal(JSON.parse(lines[1]!).ts, "y");
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
