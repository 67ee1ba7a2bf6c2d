/**
 * systemd/contactd.service: sandbox score and `systemd-analyze verify`, offline; and live, the
 * unit as shipped under a real systemd booted in a fresh namespace (root only; skipped with the
 * reason outside CI where that is unavailable).
 */
import assert from "node:assert/strict";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { isRoot } from "../support/service.ts";
import { runTask, sharedCheckout } from "../support/checkout.ts";
import { copyLib } from "../support/sources.ts";
import { type BootedSystemd, bootSystemd, mainPid, runArgs, SYSTEMD } from "../support/systemd.ts";
import { findTool, requireTool, skipBecause, skipWithout } from "../support/tools.ts";

const UNIT = new URL("../../systemd/contactd.service", import.meta.url).pathname;
const ignore = skipWithout("systemd-analyze");

async function analyze(...args: string[]) {
  const output = await new Deno.Command(requireTool("systemd-analyze"), {
    args,
    env: { SYSTEMD_COLORS: "0", SYSTEMD_PAGER: "" },
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

Deno.test("the live test signals only a real main process: MainPID 0, 1 or none fails with the unit's state", () => {
  for (const value of ["0", "1", "", undefined, "-1", "12a"]) {
    assert.throws(
      () => mainPid({ MainPID: value, ActiveState: "failed", Result: "exit-code" }),
      /no main process to signal \(MainPID=.*ActiveState=failed, Result=exit-code\)/,
    );
  }
  assert.equal(mainPid({ MainPID: "4242", ActiveState: "active" }), "4242");
});

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
        `ExecStart=${requireTool("true")} `,
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

// ---------------------------------------------------------------------------------------------
// Live: the unit as shipped under a real systemd (PID 1 of a fresh namespace; root only).

const ROOT = new URL("../../", import.meta.url).pathname;
const LIVE_TOOLS = ["unshare", "nsenter", "systemctl", "logrotate", "curl"] as const;
const liveIgnore = skipLive();
const TOKEN = "123456789:AAE_systemd-live-test-token";
const CHAT_ID = 4242;
const URL_8787 = "http://127.0.0.1:8787";

/**
 * Skipped outside CI without root, the tools, a systemd to boot, namespaces to boot it in, or a
 * free port 8787 (the reason is recorded); under CI each of these fails the test instead.
 */
function skipLive(): boolean {
  if (LIVE_TOOLS.filter((tool) => skipWithout(tool)).length > 0) return true;
  if (!isRoot()) return skipBecause("root (the live systemd test boots systemd as PID 1)");
  try {
    if (!Deno.statSync(SYSTEMD).isFile) {
      return skipBecause(`${SYSTEMD} (apt-get install -y systemd)`);
    }
  } catch {
    return skipBecause(`${SYSTEMD} (apt-get install -y systemd)`);
  }
  if (!canUnshare()) {
    return skipBecause(
      "new PID and mount namespaces (unshare --pid --fork --mount true fails here: a container " +
        "without CAP_SYS_ADMIN?)",
    );
  }
  if (portBusy(8787)) {
    return skipBecause(
      "a free port 8787 (the shipped unit listens there and the host shares it; stop what holds it)",
    );
  }
  return false;
}

/** Whether this host lets root start a process in new PID and mount namespaces. */
function canUnshare(): boolean {
  const unshare = findTool("unshare");
  if (unshare === undefined) return false;
  const probe = new Deno.Command(unshare, {
    args: ["--pid", "--fork", "--mount", "true"],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).outputSync();
  return probe.success;
}

/** Whether something on this host already listens on `port` (on 127.0.0.1 or every address). */
function portBusy(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return false;
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) return true;
    throw error;
  }
}

/** A front for the fake Bot API: the next `slow` requests wait `delayMs`, then fail with 503. */
function startSlowFront(target: string) {
  const front = { slow: 0, delayMs: 0, received: 0 };
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      // The chat's long poll passes through: only notifications are slowed and counted.
      const polling = new URL(request.url).pathname.endsWith("/getUpdates");
      if (!polling) front.received++;
      if (front.slow > 0 && !polling) {
        front.slow--;
        await new Promise((resolve) => setTimeout(resolve, front.delayMs));
        // A slow failure: the service stops meanwhile, so only its next start may deliver it.
        await request.body?.cancel();
        return Response.json({ ok: false, error_code: 503, description: "slow" }, { status: 503 });
      }
      const url = new URL(request.url);
      const upstream = await fetch(`${target}${url.pathname}${url.search}`, {
        method: request.method,
        headers: request.headers,
        body: await request.arrayBuffer(),
      });
      return new Response(await upstream.arrayBuffer(), {
        status: upstream.status,
        headers: upstream.headers,
      });
    },
  );
  return Object.assign(front, {
    url: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  });
}

/** `curl` from the host (the namespace shares its network): status and JSON body. */
async function curl(path: string, message?: string): Promise<{ status: number; body: unknown }> {
  const args = ["-sS", "-m", "30", "-o", "-", "-w", "\n%{http_code}"];
  if (message !== undefined) {
    args.push("-H", "content-type: application/json", "--data-binary", JSON.stringify({ message }));
  }
  const output = await new Deno.Command(requireTool("curl"), {
    args: [...args, `${URL_8787}${path}`],
    stdin: "null",
  }).output();
  const text = new TextDecoder().decode(output.stdout);
  const cut = text.lastIndexOf("\n");
  const body = text.slice(0, cut);
  let json: unknown = body;
  try {
    json = JSON.parse(body);
  } catch {
    // not JSON: the assertion shows the text
  }
  return { status: Number(text.slice(cut + 1)), body: json };
}

/** The documented logrotate config: the block naming the backup file in docs/ or the README. */
async function documentedLogrotate(): Promise<string> {
  const files = [`${ROOT}README.md`];
  try {
    for await (const entry of Deno.readDir(`${ROOT}docs`)) {
      if (entry.name.endsWith(".md")) files.push(`${ROOT}docs/${entry.name}`);
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  for (const file of files) {
    const match = (await Deno.readTextFile(file)).match(
      /```\n(\/var\/lib\/private\/contactd\/messages\.jsonl \{\n[^`]*\})\n```/,
    );
    if (match) return match[1]! + "\n";
  }
  throw new Error("no logrotate config for /var/lib/private/contactd/messages.jsonl in the docs");
}

Deno.test({
  name:
    "systemd, live: the shipped unit starts sandboxed, serves, records 0600 as its dynamic user, keeps writing across logrotate, restarts after kill -9 and drains on stop",
  ignore: liveIgnore,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async (t) => {
    const unshare = requireTool("unshare");
    const nsenter = requireTool("nsenter");
    requireTool("logrotate");
    const busy = await fetch(`${URL_8787}/`).then(() => true, () => false);
    assert.ok(!busy, "port 8787 (the unit's SocketBindAllow=) is in use on this host");
    const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID, floodControl: false });
    const front = startSlowFront(fake.url);
    // Outside /tmp (the namespace hides it under a fresh tmpfs) and readable by the dynamic user.
    await Deno.mkdir("/opt", { recursive: true });
    const dir = await Deno.makeTempDir({ dir: "/opt", prefix: "contactd-systemd-test-" });
    await Deno.chmod(dir, 0o755);
    let systemd: BootedSystemd | undefined;
    const started = Date.now();
    try {
      systemd = await bootSystemd(dir, { unshare, nsenter });
      const sd = systemd;
      const journal = async () =>
        (await sd.run("journalctl", "-u", "contactd", "--no-pager", "-n", "40", "-o", "cat"))
          .stdout;
      const show = async () =>
        Object.fromEntries(
          (await sd.check(
            "systemctl",
            "show",
            "contactd",
            "-p",
            "MainPID,NRestarts,ActiveState,Result",
          ))
            .trim().split("\n").map((line) => line.split("=", 2) as [string, string]),
        );

      // The stand-in binary: the real Deno running main.ts with exactly the compile task's flags,
      // the checkout mounted read-only, and a pre-filled DENO_DIR mounted read-only.
      // In a copy of the sources (never the developer's .env); its paths given as the checkout's.
      const print = await runTask(["--quiet", "compile", "--print"], {
        env: { MESSENGER_API_URL: front.url },
      });
      assert.equal(print.code, 0, print.stderr);
      const compileArgs = JSON.parse(print.stdout.replaceAll(`${await sharedCheckout()}/`, ROOT));
      // Copies, not the checkout and the Deno on PATH themselves: those may sit under /tmp (a
      // fresh tmpfs in the namespace) or a home directory (ProtectHome=yes hides it).
      const src = `${dir}/src`;
      const denoDir = `${dir}/deno-dir`;
      const deno = `${dir}/deno`;
      await Deno.mkdir(`${src}/lib`, { recursive: true });
      await Deno.mkdir(denoDir);
      for (const name of ["main.ts", "deno.json", "deno.lock"]) {
        await Deno.copyFile(`${ROOT}${name}`, `${src}/${name}`).catch((error) => {
          if (!(error instanceof Deno.errors.NotFound)) throw error;
        });
      }
      await copyLib(src);
      await Deno.copyFile(`${ROOT}systemd/contactd.service`, `${dir}/contactd.service`);
      await Deno.copyFile(Deno.execPath(), deno);
      await Deno.chmod(deno, 0o755);
      const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
      await Deno.writeTextFile(
        `${dir}/contactd`,
        `#!/bin/sh\nDENO_DIR=${quote(denoDir)} exec ${quote(deno)} ${
          runArgs(compileArgs, `${src}/main.ts`).map(quote).join(" ")
        } "$@"\n`,
      );
      await Deno.chmod(`${dir}/contactd`, 0o755);
      await sd.check("mount", "--bind", src, src);
      await sd.check("mount", "-o", "remount,bind,ro", src);
      await sd.check(
        "env",
        `DENO_DIR=${denoDir}`,
        deno,
        "cache",
        "--quiet",
        `${src}/main.ts`,
      );
      await sd.check("mount", "--bind", denoDir, denoDir);
      await sd.check("mount", "-o", "remount,bind,ro", denoDir);
      await sd.check("install", "-m", "0755", `${dir}/contactd`, "/usr/local/bin/contactd");
      await sd.check(
        "install",
        "-m",
        "0644",
        `${dir}/contactd.service`,
        "/run/systemd/system/",
      );
      await Deno.writeTextFile(
        `${dir}/env`,
        `MESSENGER_BOT_TOKEN=${TOKEN}\nMESSENGER_CHAT_ID=${CHAT_ID}\nMESSENGER_API_URL=${front.url}\n`,
      );
      await sd.check("install", "-D", "-m", "0600", `${dir}/env`, "/etc/contactd/env");
      await sd.check("systemctl", "daemon-reload");

      await t.step("the sandbox lets it start and health answers through curl", async () => {
        await sd.check("systemctl", "start", "contactd");
        let health = await curl("/api/health").catch(() => ({ status: 0, body: null }));
        for (let i = 0; i < 100 && health.status !== 200; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          health = await curl("/api/health");
        }
        assert.equal(health.status, 200, await journal());
        assert.deepEqual((health.body as { ok?: unknown }).ok, true);
        assert.equal((await show()).ActiveState, "active");
      });

      const stat = async (path: string) => (await sd.check("stat", "-c", "%a %u %U", path)).trim();
      const records = async (path: string) =>
        (await sd.check("cat", path)).split("\n").filter(Boolean).map((line) => JSON.parse(line));
      const FILE = "/var/lib/private/contactd/messages.jsonl";

      await t.step(
        "a submission is delivered and recorded 0600, owned by the dynamic user",
        async () => {
          const answer = await curl("/api/contact", "first through systemd");
          assert.equal(answer.status, 200, JSON.stringify(answer.body) + (await journal()));
          assert.ok(fake.delivered.some((text) => text.includes("first through systemd")));
          const [mode, uid, user] = (await stat(FILE)).split(" ");
          assert.equal(mode, "600");
          // systemd's dynamic users are 61184-65519; the name is the unit's.
          assert.ok(Number(uid) >= 61184 && Number(uid) <= 65519, `uid ${uid}`);
          assert.equal(user, "contactd");
          const status = await sd.check("cat", `/proc/${mainPid(await show())}/status`);
          assert.match(
            status,
            new RegExp(`^Uid:\\t${uid}\\t`, "m"),
            "the service runs as the file's owner",
          );
          assert.equal((await stat("/var/lib/private/contactd")).split(" ")[0], "700");
          assert.deepEqual((await records(FILE)).map((record) => record.message), [
            "first through systemd",
          ]);
        },
      );

      await t.step(
        "after a logrotate run with the documented config it writes a new file",
        async () => {
          const before = (await show()).MainPID;
          await Deno.writeTextFile(`${dir}/logrotate.conf`, await documentedLogrotate());
          await sd.check(
            "logrotate",
            "-f",
            "-s",
            `${dir}/logrotate.state`,
            `${dir}/logrotate.conf`,
          );
          assert.deepEqual((await records(`${FILE}.1`)).map((record) => record.message), [
            "first through systemd",
          ]);
          const answer = await curl("/api/contact", "after rotation");
          assert.equal(answer.status, 200, JSON.stringify(answer.body) + (await journal()));
          assert.deepEqual((await records(FILE)).map((record) => record.message), [
            "after rotation",
          ]);
          assert.equal((await stat(FILE)).split(" ")[0], "600");
          assert.equal((await show()).MainPID, before, "rotation needs no restart");
        },
      );

      await t.step("kill -9 of the main process is followed by Restart=on-failure", async () => {
        const before = await show();
        // Never "kill -9 0" (the test run's process group) for a unit that failed to start.
        await sd.check("kill", "-9", mainPid(before));
        let after = await show();
        for (
          let i = 0;
          i < 150 && !(after.ActiveState === "active" && after.NRestarts === "1");
          i++
        ) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          after = await show();
        }
        assert.equal(after.NRestarts, "1", JSON.stringify(after));
        assert.notEqual(after.MainPID, before.MainPID);
        let answer = await curl("/api/contact", "after kill -9").catch(() => ({
          status: 0,
          body: null,
        }));
        for (let i = 0; i < 100 && answer.status === 0; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          answer = await curl("/api/contact", "after kill -9").catch(() => ({
            status: 0,
            body: null,
          }));
        }
        assert.equal(answer.status, 200, JSON.stringify(answer.body) + (await journal()));
      });

      await t.step(
        "systemctl stop answers an in-flight sender (saved), records it, exits cleanly, and the next start delivers it",
        async () => {
          front.slow = 1;
          front.delayMs = 3000;
          const received = front.received;
          const inFlight = curl("/api/contact", "in flight at stop");
          while (front.received === received) {
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          await sd.check("systemctl", "stop", "contactd");
          const answer = await inFlight;
          const body = answer.body as { stored?: unknown };
          // Delivered before the stop (200), or answered "saved, will be delivered" (502).
          assert.ok(
            answer.status === 200 || (answer.status === 502 && body.stored === true),
            `${answer.status} ${JSON.stringify(answer.body)}\n${await journal()}`,
          );
          assert.ok((await records(FILE)).some((record) => record.message === "in flight at stop"));
          const state = await show();
          assert.equal(state.ActiveState, "inactive", JSON.stringify(state));
          assert.equal(state.Result, "success", await journal());
          if (answer.status === 502) {
            assert.ok(!fake.delivered.some((text) => text.includes("in flight at stop")));
            await sd.check("systemctl", "start", "contactd");
            for (let i = 0; i < 150; i++) {
              if (fake.delivered.some((text) => text.includes("in flight at stop"))) break;
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
            assert.ok(
              fake.delivered.some((text) => text.includes("in flight at stop")),
              await journal(),
            );
            await sd.check("systemctl", "stop", "contactd");
          }
        },
      );
    } finally {
      await systemd?.shutdown();
      await front.close();
      await fake.close();
      await Deno.remove(dir, { recursive: true });
      console.log(`systemd, live: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  },
});
