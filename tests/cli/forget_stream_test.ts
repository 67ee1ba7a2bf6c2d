/**
 * `contactd forget` on a backup file larger than one read (the service stopped): the backup file
 * is streamed, the dry run and the erasure alike.
 */
import assert from "node:assert/strict";
import { runCli } from "../../lib/cli/cli.ts";
import { READ_CHUNK_BYTES } from "../../lib/common/line_reader.ts";
import { formatRecord } from "../../lib/storage/backup.ts";
import { fakeCliIo } from "./_cli_io.ts";

function record(i: number): string {
  return formatRecord({
    ts: "2026-11-20T10:00:00Z",
    id: `r${i}`,
    name: "Ann",
    contact: i % 1000 === 7 ? "gone@example.org" : `kept${i}@example.org`,
    message: `message ${i} `.repeat(10),
    ip: "10.0.0.1",
    messenger_ok: true,
    messenger_error: null,
  });
}

async function cli(args: string[], file: string) {
  const { io, out, err } = fakeCliIo({
    env: (name) => name === "MESSAGES_FILE" ? file : undefined,
    now: () => new Date(Date.UTC(2026, 10, 25)),
  });
  return { code: await runCli(args, io), out, err };
}

Deno.test("forget on a backup file of many reads removes every matching record, early or late in the file, and keeps the rest as they were", async () => {
  const dir = await Deno.makeTempDir();
  const file = `${dir}/messages.jsonl`;
  try {
    const all = Array.from({ length: 3000 }, (_, i) => record(i));
    const text = all.join("") + '{"ts":"2026-11-2'; // and a torn last line
    assert.ok(text.length > 8 * READ_CHUNK_BYTES);
    await Deno.writeTextFile(file, text, { mode: 0o600 });
    const dry = await cli(["forget", "--contact", "GONE@example.org", "--dry-run"], file);
    assert.equal(dry.code, 0, dry.err.join());
    assert.match(dry.out[0]!, /^would remove 3 record\(s\) from /);
    assert.equal(await Deno.readTextFile(file), text);

    const done = await cli(["forget", "--contact", "gone@example.org"], file);
    assert.equal(done.code, 0, done.err.join());
    assert.match(done.out[0]!, /^removed 3 record\(s\) from /);
    const kept = all.filter((_, i) => i % 1000 !== 7).join("") + '{"ts":"2026-11-2\n';
    assert.equal(await Deno.readTextFile(file), kept);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
