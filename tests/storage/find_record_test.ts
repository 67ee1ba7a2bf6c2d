import assert from "node:assert/strict";
import { findRecord } from "../../lib/storage/records.ts";
import { denoFs } from "../../lib/storage/file_system.ts";

async function backupWith(text: string): Promise<string> {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/messages.jsonl`;
  await Deno.writeTextFile(path, text);
  return path;
}

const line = (id: string, extra = "") =>
  JSON.stringify({ ts: "2026-11-25T10:00:00Z", id, contact: `${id}@example.org${extra}` }) + "\n";

Deno.test("a submission's record is found by its id among many, across read chunks", async () => {
  const lines = Array.from({ length: 3000 }, (_, i) => line(`id${i}`, "x".repeat(40)));
  const path = await backupWith(lines.join(""));
  const record = await findRecord(denoFs, path, "id2500");
  assert.equal(record?.id, "id2500");
  assert.equal(record?.value.contact, `id2500@example.org${"x".repeat(40)}`);
  assert.equal(await findRecord(denoFs, path, "id30000"), undefined);
});

Deno.test("an id that only appears inside another record's text is not that record; a torn last line is none", async () => {
  const path = await backupWith(
    JSON.stringify({ ts: "2026-11-25T10:00:00Z", id: "a1", message: 'see "b2"' }) + "\n" +
      line("c3").trimEnd(),
  );
  assert.equal(await findRecord(denoFs, path, "b2"), undefined);
  assert.equal(await findRecord(denoFs, path, "c3"), undefined);
  assert.equal((await findRecord(denoFs, path, "a1"))?.id, "a1");
});
