/**
 * Runs last (`deno test` runs files in path order): names in one line every tool whose tests this
 * run skipped, with the command that installs it (tests/support/tools.ts records them).
 */
import assert from "node:assert/strict";
import { findTool, skipBecause, skippedFile, skippedSummary, underCi } from "./support/tools.ts";

Deno.test("a run names the tools whose tests it skipped in one line; under CI it skips none", async () => {
  const text = await Deno.readTextFile(skippedFile()).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return "";
    throw error;
  });
  await Deno.remove(skippedFile()).catch(() => {});
  const recorded = [...new Set(text.split("\n").filter(Boolean))];
  // Under .ci/run a missing tool is recorded too (and its tests ran and failed): none may be.
  if (underCi()) assert.deepEqual(recorded, [], "nothing may be missing under .ci/run");
  const summary = skippedSummary(text);
  if (recorded.length === 0) return assert.equal(summary, undefined);
  assert.ok(summary !== undefined && !summary.includes("\n"), summary);
  assert.equal(summary, `skipped for missing tools: ${recorded.join(", ")}`);
  console.log(summary);
});

Deno.test("skipBecause records what is missing; outside CI it skips, under CI it runs the tests", () => {
  const before = Deno.env.get("CONTACTD_CI");
  const file = skippedFile();
  // The first test has reported and removed this run's record; anything since is kept.
  let kept: string | undefined;
  try {
    kept = Deno.readTextFileSync(file);
    Deno.removeSync(file);
  } catch {
    kept = undefined;
  }
  try {
    Deno.env.delete("CONTACTD_CI");
    assert.equal(skipBecause("tool-a (install a)"), true);
    Deno.env.set("CONTACTD_CI", "1");
    assert.equal(skipBecause("tool-b\n(install b)"), false);
    assert.equal(Deno.readTextFileSync(file), "tool-a (install a)\ntool-b (install b)\n");
  } finally {
    if (before === undefined) Deno.env.delete("CONTACTD_CI");
    else Deno.env.set("CONTACTD_CI", before);
    if (kept === undefined) Deno.removeSync(file);
    else Deno.writeTextFileSync(file, kept);
  }
});

Deno.test("the skipped-tools line lists each tool once, in the order first skipped", () => {
  assert.equal(skippedSummary(""), undefined);
  assert.equal(
    skippedSummary(
      "nginx (apt-get install -y nginx)\ncurl (apt-get install -y curl)\nnginx (apt-get install -y nginx)\n",
    ),
    "skipped for missing tools: nginx (apt-get install -y nginx), curl (apt-get install -y curl)",
  );
});

Deno.test("CONTACTD_TOOLS_PATH replaces the search path, so a run can pretend a tool is missing", () => {
  const before = Deno.env.get("CONTACTD_TOOLS_PATH");
  try {
    Deno.env.delete("CONTACTD_TOOLS_PATH");
    assert.ok(findTool("sh"), "sh on PATH");
    Deno.env.set("CONTACTD_TOOLS_PATH", "/nonexistent-contactd-tools");
    assert.equal(findTool("sh"), undefined);
  } finally {
    if (before === undefined) Deno.env.delete("CONTACTD_TOOLS_PATH");
    else Deno.env.set("CONTACTD_TOOLS_PATH", before);
  }
});
