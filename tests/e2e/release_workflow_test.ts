/**
 * .github/workflows/release.yml: valid YAML (parsed by Python's PyYAML, the one parser at hand;
 * Deno has none built in), built for both Linux targets with the compile task's own output names,
 * and its sums step, run here, writes a SHA256SUMS that `sha256sum -c` accepts.
 */
import assert from "node:assert/strict";
import { runTask } from "../support/checkout.ts";
import { findTool, skipBecause, underCi } from "../support/tools.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const WORKFLOW = `${ROOT}.github/workflows/release.yml`;
const TARGETS = ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"];
const PARSE = "import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin.read())))";

/** Skipped outside CI without python3 and PyYAML (recorded for the run's summary line). */
function skipWithoutYaml(): boolean {
  const python = findTool("python3");
  const ok = python !== undefined &&
    new Deno.Command(python, { args: ["-c", "import yaml"], stdout: "null", stderr: "null" })
      .outputSync().success;
  return !ok && skipBecause("python3-yaml (apt-get install -y python3-yaml)");
}

interface Step {
  readonly uses?: string;
  readonly name?: string;
  readonly run?: string;
  readonly with?: Record<string, string | boolean>;
  readonly "working-directory"?: string;
}

async function workflow(): Promise<Record<string, unknown>> {
  const python = findTool("python3");
  assert.ok(python || !underCi(), "python3 is missing: apt-get install -y python3-yaml");
  const child = new Deno.Command(python!, {
    args: ["-c", PARSE],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(await Deno.readFile(WORKFLOW));
  await writer.close();
  const output = await child.output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

function steps(doc: Record<string, unknown>): Step[] {
  const jobs = doc.jobs as Record<string, { steps: Step[] }>;
  assert.deepEqual(Object.keys(jobs), ["release"]);
  return jobs.release!.steps;
}

/** The compile task's output file for `target`, from its own `--print`. */
async function outputOf(target: string): Promise<string> {
  // In a copy of the sources: never the developer's .env.
  const result = await runTask(["--quiet", "compile", "--target", target, "--print"]);
  assert.equal(result.code, 0, result.stderr);
  const args: string[] = JSON.parse(result.stdout);
  return args[args.indexOf("--output") + 1]!;
}

const ignore = skipWithoutYaml();

Deno.test({
  name:
    "release.yml is valid YAML: on a v* tag, Deno 2.9.6 builds both Linux targets and the release gets them and their sums",
  ignore,
  fn: async () => {
    const doc = await workflow();
    // PyYAML reads the bare key `on` as YAML 1.1's boolean true.
    const on = (doc.on ?? doc.true) as { push?: { tags?: string[] } };
    assert.deepEqual(on, { push: { tags: ["v*"] } });
    assert.deepEqual(doc.permissions, { contents: "write" });
    const all = steps(doc);
    assert.ok(all[0]?.uses?.startsWith("actions/checkout@"));
    const setup = all.find((step) => step.uses?.startsWith("denoland/setup-deno@"));
    const ciDeno = (await Deno.readTextFile(`${ROOT}.ci/run`)).match(/^DENO_VERSION=(\S+)$/m)?.[1];
    assert.ok(ciDeno, "DENO_VERSION in .ci/run");
    assert.equal(setup?.with?.["deno-version"], `v${ciDeno}`, "the version .ci/run tests with");
    const runs = all.map((step) => step.run ?? "").join("\n");
    for (const target of TARGETS) {
      assert.match(runs, new RegExp(`^deno task compile --target ${target}$`, "m"));
    }
    const release = all.at(-1)!;
    assert.ok(release.uses?.startsWith("softprops/action-gh-release@"));
    const files = String(release.with?.files).trim().split("\n");
    const outputs = await Promise.all(TARGETS.map(outputOf));
    assert.deepEqual(files, [...outputs, "dist/SHA256SUMS"]);
    assert.equal(release.with?.fail_on_unmatched_files, true);
  },
});

Deno.test({
  name: "release.yml's sums step, run here on stand-in binaries, writes a SHA256SUMS that checks",
  ignore,
  fn: async () => {
    const sums = steps(await workflow()).find((step) => step.run?.includes("SHA256SUMS"));
    assert.ok(sums?.run, "a step writes SHA256SUMS");
    const dir = await Deno.makeTempDir({ prefix: "contactd-release-" });
    try {
      const dist = `${dir}/${sums["working-directory"] ?? "."}`;
      await Deno.mkdir(dist, { recursive: true });
      // The compile task's outputs (relative to the checkout), as the build step leaves them.
      for (const output of await Promise.all(TARGETS.map(outputOf))) {
        await Deno.mkdir(`${dir}/${output}`.replace(/\/[^/]+$/, ""), { recursive: true });
        await Deno.writeTextFile(`${dir}/${output}`, `binary ${output}\n`);
      }
      const run = await new Deno.Command("bash", {
        args: ["-eo", "pipefail", "-c", sums.run],
        cwd: dist,
        stdin: "null",
      }).output();
      assert.ok(run.success, new TextDecoder().decode(run.stderr));
      const lines = (await Deno.readTextFile(`${dist}/SHA256SUMS`)).trim().split("\n");
      assert.deepEqual(
        lines.map((line) => line.split(/\s+/)[1]),
        TARGETS.map((target) => `contactd-${target}`),
        "names without a directory, as users download them",
      );
      const check = await new Deno.Command("sha256sum", { args: ["-c", "SHA256SUMS"], cwd: dist })
        .output();
      assert.ok(check.success, new TextDecoder().decode(check.stdout));
      await Deno.writeTextFile(`${dist}/contactd-${TARGETS[0]}`, "tampered\n");
      const tampered = await new Deno.Command("sha256sum", {
        args: ["-c", "SHA256SUMS"],
        cwd: dist,
        stdout: "null",
        stderr: "null",
      }).output();
      assert.equal(tampered.success, false, "a changed binary fails the check");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
