/**
 * `.gitignore` keeps every file contactd writes out of `git status`: the names come from
 * lib/common/state_files.ts, so a new state file that is not ignored fails here.
 */
import assert from "node:assert/strict";
import { databasePath, stateFiles } from "../../lib/common/state_files.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** The paths among `paths` that git ignores in this checkout (`git check-ignore`). */
async function ignored(paths: readonly string[]): Promise<string[]> {
  const child = new Deno.Command("git", {
    args: ["check-ignore", "--no-index", "--stdin"],
    cwd: ROOT,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(paths.join("\n") + "\n"));
  await writer.close();
  const result = await child.output();
  // 0: some ignored, 1: none; anything else is git failing.
  assert.ok(result.code <= 1, new TextDecoder().decode(result.stderr));
  return new TextDecoder().decode(result.stdout).split("\n").filter((line) => line !== "");
}

Deno.test(".gitignore ignores every file contactd keeps beside MESSAGES_FILE, the database's -wal and -shm included", async () => {
  for (const messagesFile of ["messages.jsonl", "data/contact.jsonl"]) {
    const database = databasePath(messagesFile);
    const files = [
      ...stateFiles(messagesFile),
      `${database}-wal`,
      `${database}-shm`,
      `${database}-journal`,
    ];
    assert.deepEqual((await ignored(files)).sort(), [...files].sort());
  }
});

Deno.test(".gitignore ignores the checkout's .env and keeps the sources and .env.example", async () => {
  assert.deepEqual(await ignored([".env"]), [".env"]);
  assert.deepEqual(
    await ignored([".env.example", "main.ts", "lib/common/state_files.ts", "deno.json"]),
    [],
  );
});
