/**
 * The block list file an older release kept, read back for the import: its blocks and lifts
 * replayed, a torn last line and damaged lines skipped by number, never read through a link,
 * nothing written.
 */
import assert from "node:assert/strict";
import { readBlockList } from "../../lib/spam/block_file.ts";
import { keyOf, spamBlocks } from "../../lib/spam/block_list.ts";
import { blockLine, liftKeyLine, liftLine } from "../../lib/spam/block_lines.ts";
import { MemoryFs } from "../support/memory_fs.ts";

const DAY = 86_400_000;
const NOW = Date.parse("2026-11-22T14:03:09Z");
const PATH = "/data/messages.jsonl.blocked";
const SPAMMER = { id: "s1", ip: "2001:db8:1:2::7", contact: "spam@example.org" };

function files(text: string): MemoryFs {
  const fs = new MemoryFs();
  fs.mkdir("/data");
  fs.writeText(PATH, text);
  return fs;
}

Deno.test("the file's blocks and lifts add up in order, by submission and by key, without writing", async () => {
  const blocks = [
    ...spamBlocks(SPAMMER, NOW, DAY, 7),
    ...spamBlocks({ id: "s2", ip: "192.0.2.1", contact: "x" }, NOW, DAY),
    ...spamBlocks({ id: "s3", ip: "192.0.2.2", contact: "" }, NOW, DAY),
  ];
  const text = blocks.map(blockLine).join("") + liftLine("s2", "2026-11-22T14:03:10Z") +
    liftKeyLine(keyOf("2001:db8:1:2::1"), "2026-11-22T14:03:11Z");
  const fs = files(text);
  const { list, damaged } = await readBlockList(fs, PATH);
  assert.deepEqual(damaged, []);
  assert.deepEqual(list.all().map((block) => [block.submission, block.kind, block.by]), [
    ["s1", "contact", 7],
    ["s3", "address", undefined],
  ]);
  assert.equal(fs.readText(PATH), text);
});

Deno.test("a torn last line and a damaged line are skipped and named by number, never by content", async () => {
  const [address, contact] = spamBlocks(SPAMMER, NOW, DAY);
  const fs = files(
    blockLine(address!) + "not json spam@example.org\n" + blockLine(contact!) +
      '{"op":"block","kind":"addr',
  );
  const { list, damaged } = await readBlockList(fs, PATH);
  assert.deepEqual(damaged, [2, 4]);
  assert.equal(list.size, 2);
});

Deno.test("a symbolic link at the path is never followed", async () => {
  const fs = new MemoryFs();
  fs.mkdir("/data");
  fs.writeText("/data/other", blockLine(spamBlocks(SPAMMER, NOW, DAY)[0]!));
  fs.symlink("/data/other", PATH);
  await assert.rejects(readBlockList(fs, PATH), Deno.errors.PermissionDenied);
});
