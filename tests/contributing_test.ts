/**
 * CONTRIBUTING.md tells the truth about the tree: its layout table names every folder of `lib/`
 * with the layer `deno task cycles` enforces and every file in it, and every file it names
 * anywhere (the "Life of a POST" included) exists.
 *
 * @module
 */
import assert from "node:assert/strict";
import { LAYERS } from "../tasks/cycles.ts";

const ROOT = new URL("../", import.meta.url);
const text = Deno.readTextFileSync(new URL("CONTRIBUTING.md", ROOT));

/** The layout table's rows: folder, layer and the files named in its last column. */
function layoutRows(): Array<{ folder: string; layer: number; files: string[] }> {
  return text.split("\n")
    .map((line) => /^\| `lib\/([a-z_]+)\/` +\| (\d+) +\|[^|]*\|(.*)\|$/.exec(line))
    .filter((match) => match !== null)
    .map((match) => ({
      folder: match[1]!,
      layer: Number(match[2]),
      files: [...match[3]!.matchAll(/`([a-z_]+\.ts)`/g)].map((file) => file[1]!),
    }));
}

function section(heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `CONTRIBUTING.md has no section "${heading}"`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? text.length : end);
}

const libFolders = () =>
  [...Deno.readDirSync(new URL("lib/", ROOT))].filter((entry) => entry.isDirectory)
    .map((entry) => entry.name).sort();

Deno.test("CONTRIBUTING's layout table has a row for every folder of lib/, and no other", () => {
  assert.deepEqual(layoutRows().map((row) => row.folder).sort(), libFolders());
});

Deno.test("CONTRIBUTING's layout table gives each folder the layer deno task cycles enforces", () => {
  for (const row of layoutRows()) {
    const layer = LAYERS.findIndex((folders) => folders.includes(row.folder));
    assert.equal(row.layer, layer, `lib/${row.folder}/ is layer ${layer} in tasks/cycles.ts`);
  }
});

Deno.test("CONTRIBUTING's layout table names every file of each lib/ folder, and only files that exist", () => {
  for (const row of layoutRows()) {
    const present = [...Deno.readDirSync(new URL(`lib/${row.folder}/`, ROOT))]
      .filter((entry) => entry.isFile && entry.name.endsWith(".ts")).map((entry) => entry.name);
    assert.deepEqual([...row.files].sort(), present.sort(), `lib/${row.folder}/`);
  }
});

Deno.test("every file CONTRIBUTING names by its path exists", () => {
  const paths = [...text.matchAll(/`((?:lib|tests|tasks|bench|examples|systemd|docs)\/[^`\s]+)`/g)]
    .map((match) => match[1]!).filter((path) => !path.includes("<"));
  assert.ok(paths.length >= 40, `only ${paths.length} paths found`);
  const missing = paths.filter((path) => {
    try {
      Deno.statSync(new URL(path, ROOT));
      return false;
    } catch {
      return true;
    }
  });
  assert.deepEqual(missing, []);
});

Deno.test("the life of a POST goes handler, rules, outbox, queue, Bot API, outbox done, backup, naming files that exist", () => {
  const life = section("Life of a POST");
  const files = [...life.matchAll(/`(lib\/[a-z_]+\/[a-z_]+\.ts)`/g)].map((match) => match[1]!);
  for (const file of files) Deno.statSync(new URL(file, ROOT)); // throws for a missing one
  const first = (file: string) => {
    const at = files.indexOf(file);
    assert.ok(at >= 0, `the life of a POST names ${file}`);
    return at;
  };
  const order = [
    "lib/http/handler.ts",
    "lib/http/contact.ts",
    "lib/storage/outbox.ts",
    "lib/delivery/queue.ts",
    "lib/bot/api.ts",
    "lib/storage/backup.ts",
  ].map(first);
  assert.deepEqual(order, [...order].sort((a, b) => a - b), "in the order a POST takes");
  assert.match(life, /\*\*Outbox done\.\*\*/);
});
