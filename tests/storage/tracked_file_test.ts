import assert from "node:assert/strict";
import {
  type FileSource,
  type OpenedFile,
  type TrackedFile,
  trackFile,
  type WritableFile,
} from "../../lib/storage/tracked_file.ts";

/** Writes one text; rejects with the error that kept it off the disk. */
async function writeSynced(tracked: TrackedFile, text: string): Promise<void> {
  const { offsets, error } = await tracked.writeLines([text]);
  if (offsets.length !== 1) throw error;
}

const line = (name: string) => JSON.stringify({ ts: "2026-11-22T14:03:09Z", name }) + "\n";

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

function opened(file: WritableFile, id = "1:1", endsMidLine = false, size = 0): OpenedFile {
  return { file, id, endsMidLine, size };
}

Deno.test("trackFile writes each text whole through short writes and syncs it before resolving", async () => {
  const { file, writes, log } = fakeFile();
  const tracked = trackFile(opened(file));
  const lines = Array.from({ length: 3 }, (_, i) => line(`n${i}`));
  for (const line of lines) {
    await writeSynced(tracked, line);
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
  await assert.rejects(writeSynced(tracked, "a\n"), /EIO/);
  await assert.rejects(writeSynced(tracked, "b\n"), /EIO/);
  assert.equal(writes.join(""), "a\nb\n"); // the second line was written, not refused unseen
});

Deno.test("trackFile starts the next line fresh after a torn write", async () => {
  // The first write call lands 7 bytes, the second fails: a torn fragment stays in the file.
  const { file, writes } = fakeFile({ failWriteAt: 2 });
  const tracked = trackFile(opened(file));
  await assert.rejects(writeSynced(tracked, '{"ts":"x"}\n'));
  await writeSynced(tracked, '{"ts":"y"}\n');
  const lines = writes.join("").split("\n");
  assert.deepEqual(lines, ['{"ts":"', '{"ts":"y"}', ""]);
  assert.equal(JSON.parse(lines[1]!).ts, "y");
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
  await writeSynced(tracked, "a\n");
  state.id = "1:2"; // the path now names another file
  await writeSynced(tracked, "b\n");
  await writeSynced(tracked, "c\n");
  assert.equal(files.length, 2);
  assert.equal(files[0]!.writes.join(""), "a\n");
  assert.equal(files[0]!.log.at(-1), "close");
  assert.equal(files[1]!.writes.join(""), "b\nc\n");
});

Deno.test("trackFile fails while the path cannot be opened and recovers when it can", async () => {
  const { files, state, source } = fakeSource();
  const tracked = trackFile(await source.open(), source);
  state.id = null; // directory removed
  await assert.rejects(writeSynced(tracked, "lost\n"), /EACCES/);
  await assert.rejects(writeSynced(tracked, "lost too\n"), /EACCES/);
  state.id = "1:3";
  await writeSynced(tracked, "back\n");
  assert.equal(files.length, 2);
  assert.equal(files[1]!.writes.join(""), "back\n");
});

Deno.test("trackFile starts fresh after a torn last line left by an earlier run", async () => {
  const { file, writes } = fakeFile();
  const tracked = trackFile(opened(file, "1:1", true));
  await writeSynced(tracked, "x\n");
  await writeSynced(tracked, "y\n");
  assert.equal(writes.join(""), "\nx\ny\n");
});
