/**
 * The storage layer's size, before and after the move to SQLite (issue 28): `wc -l` of its files
 * at a commit (`git show`) and in the working tree. Alone:
 * `deno run -A bench/storage_lines.ts [before-commit]`.
 *
 * @module
 */

const REPO = new URL("..", import.meta.url).pathname;

/** The storage layer with its own files: the outbox, ledger, block list, replies, offset. */
const BEFORE = [
  "lib/storage/*.ts",
  "lib/spam/block_file.ts",
  "lib/spam/block_lines.ts",
  "lib/mail/reply_store.ts",
  "lib/inbox/offset_file.ts",
];
/** The storage layer on the database, the old files' readers and the one-time upgrade. */
const AFTER = [
  "lib/storage/**/*.ts",
  "lib/spam/block_store.ts",
  "lib/spam/block_file.ts",
  "lib/spam/block_lines.ts",
  "lib/mail/reply_store.ts",
  "lib/mail/reply_sources.ts",
  "lib/mail/reply_upkeep.ts",
  "lib/inbox/offset_file.ts",
  "lib/upgrade/*",
];
/**
 * Tables of capabilities the files never held (the learned filter, attachments, case pages):
 * not the same state, so not counted on either side.
 */
const NEW_STATE = [
  "lib/storage/sqlite/spam_sql.ts",
  "lib/storage/sqlite/files_sql.ts",
  "lib/storage/sqlite/cases_sql.ts",
];

/** Whether `path` matches `pattern` (`*`: within a folder, `**`: any depth). */
function matches(pattern: string, path: string): boolean {
  const source = pattern.split("**/").map((part) =>
    part.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")
  ).join("(?:.*/)?");
  return new RegExp(`^${source}$`).test(path);
}

async function git(...args: string[]): Promise<string> {
  const { success, stdout, stderr } = await new Deno.Command("git", {
    args: ["-C", REPO, ...args],
    stdin: "null",
  }).output();
  if (!success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(stderr)}`);
  return new TextDecoder().decode(stdout);
}

async function* walk(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(`${REPO}${dir}`)) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) yield* walk(path);
    else if (entry.isFile) yield path;
  }
}

const newlines = (text: string) => text.split("\n").length - 1;

/** Lines (as `wc -l` counts them) per file of `patterns`, at `rev` or in the working tree. */
async function count(patterns: string[], rev?: string): Promise<Map<string, number>> {
  const paths = rev === undefined
    ? await Array.fromAsync(walk("lib"))
    : (await git("ls-tree", "-r", "--name-only", rev, "--", "lib")).split("\n");
  const chosen = paths.filter((path) =>
    patterns.some((pattern) => matches(pattern, path)) && !NEW_STATE.includes(path)
  ).sort();
  const lines = new Map<string, number>();
  for (const path of chosen) {
    const text = rev === undefined
      ? await Deno.readTextFile(`${REPO}${path}`)
      : await git("show", `${rev}:${path}`);
    lines.set(path, newlines(text));
  }
  return lines;
}

const sum = (lines: Map<string, number>) => [...lines.values()].reduce((a, b) => a + b, 0);

/** A Markdown report: the totals before (at `rev`) and after (working tree), and per group. */
export async function storageLines(rev: string): Promise<string> {
  const before = await count(BEFORE, rev);
  const after = await count(AFTER);
  const group = (lines: Map<string, number>, prefix: string) =>
    sum(new Map([...lines].filter(([path]) => path.startsWith(prefix))));
  const groups = ["lib/storage/sqlite/", "lib/storage/", "lib/spam/", "lib/mail/", "lib/inbox/"];
  const rows = groups.map((prefix) => {
    const inner = prefix === "lib/storage/" ? group(after, "lib/storage/sqlite/") : 0;
    return `| ${prefix} | ${group(before, prefix)} | ${group(after, prefix) - inner} |`;
  });
  rows.push(`| lib/upgrade/ | 0 | ${group(after, "lib/upgrade/")} |`);
  const ratio = sum(after) / sum(before);
  return [
    `Storage layer, \`wc -l\`: ${sum(before)} lines in ${before.size} files at ${
      rev.slice(0, 7)
    }, ${sum(after)} in ${after.size} files now (${ratio.toFixed(2)} ×; goal < 0.5).`,
    "",
    "| folder | before | now |",
    "| --- | --- | --- |",
    ...rows,
  ].join("\n");
}

if (import.meta.main) {
  console.log(await storageLines(Deno.args[0] ?? "6c90727519f94b0954740c1e4323c5b350b03870"));
}
