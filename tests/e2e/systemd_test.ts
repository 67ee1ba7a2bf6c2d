/**
 * systemd/contactd.service: sandbox score and `systemd-analyze verify`, offline.
 */
import assert from "node:assert/strict";
import { requireTool, skipWithout } from "../support/tools.ts";

const UNIT = new URL("../../systemd/contactd.service", import.meta.url).pathname;
const ignore = skipWithout("systemd-analyze");

async function analyze(...args: string[]) {
  const output = await new Deno.Command(requireTool("systemd-analyze", "systemd"), {
    args,
    env: { SYSTEMD_COLORS: "0", SYSTEMD_PAGER: "" },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

Deno.test({
  name: "systemd-analyze security rates contactd.service at exposure 1.5 or lower",
  ignore,
  fn: async () => {
    // --threshold is on the 0-100 scale: 15 = 1.5; it also makes the command exit non-zero.
    const { code, stdout, stderr } = await analyze(
      "security",
      "--offline=true",
      "--threshold=15",
      "--no-pager",
      UNIT,
    );
    const match = stdout.match(/Overall exposure level for contactd\.service: (\d+\.\d+)/);
    assert.ok(match, stdout + stderr);
    const exposure = Number(match[1]);
    assert.ok(exposure <= 1.5, `exposure ${exposure} > 1.5:\n${stdout}`);
    assert.equal(code, 0, stderr);
  },
});

Deno.test({
  name: "contactd.service runs the binary as a dynamic user in its StateDirectory, UMask 0077",
  fn: async () => {
    const unit = await Deno.readTextFile(UNIT);
    const settings = unit.split("\n").filter((line) => /^\w+=/.test(line));
    for (
      const line of [
        "ExecStart=/usr/local/bin/contactd serve",
        "EnvironmentFile=/etc/contactd/env",
        "DynamicUser=yes",
        "StateDirectory=contactd",
        "WorkingDirectory=/var/lib/contactd",
        "UMask=0077",
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "CapabilityBoundingSet=",
      ]
    ) assert.ok(settings.includes(line), `missing ${line}`);
    // V8's JIT needs writable-executable memory.
    assert.ok(!settings.some((line) => line.startsWith("MemoryDenyWriteExecute=yes")));
    // The binary never gets the env file path: systemd reads it (as root) before the sandbox.
    assert.ok(!unit.includes("--env-file"));
  },
});

Deno.test({
  name: "systemd-analyze verify finds nothing wrong with contactd.service but the absent binary",
  ignore,
  fn: async () => {
    // /usr/local/bin/contactd exists only on a server, so verify is clean only up to that one
    // complaint; a copy whose ExecStart names an existing program must then be entirely clean.
    const original = await analyze("verify", UNIT);
    const complaints = (original.stdout + original.stderr).trim().split("\n").filter(Boolean);
    for (const line of complaints) {
      assert.match(line, /Command \/usr\/local\/bin\/contactd is not executable/, line);
    }
    const dir = await Deno.makeTempDir({ prefix: "contactd-unit-" });
    try {
      const unit = await Deno.readTextFile(UNIT);
      const copy = unit.replace(
        "ExecStart=/usr/local/bin/contactd ",
        `ExecStart=${requireTool("true", "coreutils")} `,
      );
      assert.notEqual(copy, unit);
      await Deno.writeTextFile(`${dir}/contactd.service`, copy);
      const result = await analyze("verify", `${dir}/contactd.service`);
      assert.equal((result.stdout + result.stderr).trim(), "");
      assert.equal(result.code, 0);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
