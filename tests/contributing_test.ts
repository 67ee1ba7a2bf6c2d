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
    .map((line) => /^\| `lib\/([a-z_]+(?:\/[a-z_]+)*)\/` +\| (\d+) +\|[^|]*\|(.*)\|$/.exec(line))
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

/** Every folder under lib/, a topic's subfolders included (`storage/sqlite`). */
function libFolders(under = ""): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync(new URL(`lib/${under}`, ROOT))) {
    if (!entry.isDirectory) continue;
    const folder = `${under}${entry.name}`;
    found.push(folder, ...libFolders(`${folder}/`));
  }
  return found.sort();
}

Deno.test("CONTRIBUTING's layout table has a row for every folder of lib/, and no other", () => {
  assert.deepEqual(layoutRows().map((row) => row.folder).sort(), libFolders());
});

Deno.test("CONTRIBUTING's layout table gives each folder the layer deno task cycles enforces", () => {
  for (const row of layoutRows()) {
    // A subfolder is of its topic's layer.
    const topic = row.folder.split("/")[0]!;
    const layer = LAYERS.findIndex((folders) => folders.includes(topic));
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

/** Every `.ts` file under `dir` (a path relative to the root), recursively. */
function sourcesUnder(dir: string): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync(new URL(`${dir}/`, ROOT))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) found.push(...sourcesUnder(path));
    else if (entry.name.endsWith(".ts")) found.push(path);
  }
  return found;
}

Deno.test("every lib/ path a source file cites (in a comment or a string) exists", () => {
  const cited = new Map<string, string>();
  for (const file of [...sourcesUnder("lib"), ...sourcesUnder("tasks"), "main.ts"]) {
    const source = Deno.readTextFileSync(new URL(file, ROOT));
    for (const match of source.matchAll(/\blib\/[a-z_]+\/(?:[a-z_]+\/)*[a-z_]*\.ts\b/g)) {
      cited.set(match[0], file);
    }
  }
  assert.ok(cited.size >= 40, `only ${cited.size} citations found`);
  const missing = [...cited].filter(([path]) => {
    try {
      Deno.statSync(new URL(path, ROOT));
      return false;
    } catch {
      return true;
    }
  }).map(([path, file]) => `${file} cites ${path}`);
  assert.deepEqual(missing, []);
});

/** Where a function starts, formatted as `deno fmt` leaves it: a declaration, method or arrow. */
const FUNCTION_START = new RegExp(
  [
    /^(\s*)(export\s+)?(default\s+)?(async\s+)?function\*?\s*[\w$]*\s*[<(]/.source,
    /^(\s*)((static|private|public|override|readonly)\s+)*(async\s+)?\*?(#?[\w$]+|\[Symbol\.\w+\])\s*(<[^>]*>)?\(.*$/
      .source,
    /^(\s*)(export\s+)?(const|let)\s+[\w$]+\s*(:[^=]*)?=\s*(async\s*)?(\([^)]*\)|[\w$]+)\s*(:[^=]*)?=>\s*\{?\s*$/
      .source,
  ].join("|"),
);

/**
 * Each function of `source` longer than `max` lines: from its first line to the closing brace at
 * its own indentation (the code is `deno fmt`ed, so the brace is there).
 */
function longFunctions(source: string, max: number): string[] {
  const lines = source.split("\n");
  const found: string[] = [];
  lines.forEach((line, start) => {
    if (!FUNCTION_START.test(line)) return;
    if (/^\s*(if|for|while|switch|return|catch|\})\b/.test(line)) return;
    const indent = line.length - line.trimStart().length;
    for (let end = start + 1; end < lines.length; end++) {
      const next = lines[end]!;
      if (next.trim() === "") continue;
      const depth = next.length - next.trimStart().length;
      if (depth < indent) return;
      if (depth === indent && next.trimStart().startsWith("}")) {
        const length = end - start + 1;
        if (length > max) found.push(`line ${start + 1}: ${length} lines: ${line.trim()}`);
        return;
      }
    }
  });
  return found;
}

Deno.test("no function in lib/ or main.ts is over 120 lines", () => {
  const long = [...sourcesUnder("lib"), "main.ts"].flatMap((file) =>
    longFunctions(Deno.readTextFileSync(new URL(file, ROOT)), 120).map((what) => `${file} ${what}`)
  );
  assert.deepEqual(long, []);
  // The measure itself finds a long one.
  const body = Array.from({ length: 121 }, (_, i) => `  const a${i} = ${i};`).join("\n");
  assert.equal(longFunctions(`export function f() {\n${body}\n}\n`, 120).length, 1);
});
