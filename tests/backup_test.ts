import assert from "node:assert/strict";
import {
  type BackupRecord,
  type FileSource,
  formatRecord,
  formatTimestamp,
  openBackupFile,
  type OpenedFile,
  trackFile,
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

function opened(file: WritableFile, id = "1:1", endsMidLine = false): OpenedFile {
  return { file, id, endsMidLine };
}

Deno.test("trackFile writes each text whole through short writes and syncs it before resolving", async () => {
  const { file, writes, log } = fakeFile();
  const tracked = trackFile(opened(file));
  const lines = Array.from({ length: 3 }, (_, i) => formatRecord({ ...RECORD, name: `n${i}` }));
  for (const line of lines) {
    await tracked.writeSynced(line);
    assert.equal(log.at(-1), "sync");
  }
  assert.equal(writes.join(""), lines.join(""));
  assert.equal(log.filter((entry) => entry === "sync").length, 3);
  tracked.close();
  assert.equal(log.at(-1), "close");
});

Deno.test("trackFile rejects when the sync fails and keeps serving later writes", async () => {
  const { file, writes } = fakeFile({ failSync: true });
  const tracked = trackFile(opened(file));
  await assert.rejects(tracked.writeSynced("a\n"), /EIO/);
  await assert.rejects(tracked.writeSynced("b\n"), /EIO/);
  assert.equal(writes.join(""), "a\nb\n"); // the second line was written, not refused unseen
});

Deno.test("trackFile starts the next line fresh after a torn write", async () => {
  // The first write call lands 7 bytes, the second fails: a torn fragment stays in the file.
  const { file, writes } = fakeFile({ failWriteAt: 2 });
  const tracked = trackFile(opened(file));
  await assert.rejects(tracked.writeSynced('{"ts":"x"}\n'));
  await tracked.writeSynced('{"ts":"y"}\n');
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

/** A path whose file can be swapped, removed or made unopenable, like logrotate or an operator. */
function fakeSource() {
  const files: Array<ReturnType<typeof fakeFile>> = [];
  const state = { id: "1:1" as string | null, openFails: false, endsMidLine: false };
  const source: FileSource = {
    identify: () => Promise.resolve(state.id),
    open() {
      if (state.openFails || state.id === null) return Promise.reject(new Error("EACCES"));
      const made = fakeFile();
      files.push(made);
      return Promise.resolve(opened(made.file, state.id, state.endsMidLine));
    },
  };
  return { files, state, source };
}

Deno.test("trackFile writes to a new file once the old one was renamed away", async () => {
  const { files, state, source } = fakeSource();
  const tracked = trackFile(await source.open(), source);
  await tracked.writeSynced("a\n");
  state.id = "1:2"; // the path now names another file
  await tracked.writeSynced("b\n");
  await tracked.writeSynced("c\n");
  assert.equal(files.length, 2);
  assert.equal(files[0]!.writes.join(""), "a\n");
  assert.equal(files[0]!.log.at(-1), "close");
  assert.equal(files[1]!.writes.join(""), "b\nc\n");
});

Deno.test("trackFile fails while the path cannot be opened and recovers when it can", async () => {
  const { files, state, source } = fakeSource();
  const tracked = trackFile(await source.open(), source);
  state.id = null; // directory removed
  await assert.rejects(tracked.writeSynced("lost\n"), /EACCES/);
  await assert.rejects(tracked.writeSynced("lost too\n"), /EACCES/);
  state.id = "1:3";
  await tracked.writeSynced("back\n");
  assert.equal(files.length, 2);
  assert.equal(files[1]!.writes.join(""), "back\n");
});

Deno.test("trackFile starts fresh after a torn last line left by an earlier run", async () => {
  const { file, writes } = fakeFile();
  const tracked = trackFile(opened(file, "1:1", true));
  await tracked.writeSynced("x\n");
  await tracked.writeSynced("y\n");
  assert.equal(writes.join(""), "\nx\ny\n");
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
