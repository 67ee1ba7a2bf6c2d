/**
 * Runs last (`deno test` runs files in path order): names in one line every tool whose tests this
 * run skipped, with the command that installs it (tests/support/tools.ts records them).
 */
import assert from "node:assert/strict";
import { findTool, skippedFile, skippedSummary, underCi } from "./support/tools.ts";

Deno.test("a run names the tools whose tests it skipped in one line; under CI it skips none", async () => {
  const text = await Deno.readTextFile(skippedFile()).catch((error) => {
    if (error instanceof Deno.errors.NotFound) return "";
    throw error;
  });
  await Deno.remove(skippedFile()).catch(() => {});
  const summary = skippedSummary(text);
  if (underCi()) assert.equal(summary, undefined, "nothing may be skipped under .ci/run");
  if (summary !== undefined) console.log(summary);
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
