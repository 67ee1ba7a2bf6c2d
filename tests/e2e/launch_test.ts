/**
 * `deno task start`: the launcher, run with exactly the flags of the task in deno.json.
 */
import assert from "node:assert/strict";
import { SETTING_NAMES } from "../../lib/config.ts";
import { baseEnv, freePort } from "../support/service.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const TASKS = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
const TASK: string = TASKS.contactd;
/** How the tasks name the Deno that runs them (deno task runs its own `deno`). */
const EXEC_PATH = `"$(deno eval 'console.log(Deno.execPath())')"`;

/**
 * The task's words as deno task would run them with `args` appended: the launcher's path made
 * absolute so it can run in a temp dir, and the Deno that runs it named.
 */
function taskArgs(...args: string[]): string[] {
  const words = TASK.replaceAll(EXEC_PATH, Deno.execPath()).split(/\s+/);
  assert.equal(words[0], "deno");
  return [
    ...words.slice(1).map((word) => word === "tasks/launch.ts" ? `${ROOT}tasks/launch.ts` : word),
    ...args,
  ];
}

Deno.test("deno task contactd reads exactly the settings main.ts reads, and runs only the Deno that runs it", () => {
  assert.equal(TASKS.start, "deno task contactd serve");
  const words = TASK.replaceAll(EXEC_PATH, "EXEC_PATH").split(/\s+/);
  assert.ok(words.includes(`--allow-env=${SETTING_NAMES.join(",")}`));
  assert.ok(words.includes("--allow-read=.env"));
  assert.ok(words.includes("--allow-run=EXEC_PATH"));
  assert.ok(
    !words.some((word) => /^(-A|--allow-all|--allow-(read|write|env|net|run))$/.test(word)),
  );
});

Deno.test("deno task start serves with .env settings, the environment winning, and stops on SIGTERM", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  const [filePort, envPort] = [freePort(), freePort()];
  await Deno.writeTextFile(
    `${dir}/.env`,
    `PORT=${filePort}\nMESSAGES_FILE=from-dotenv.jsonl\nMESSENGER_BOT_TOKEN=1:abc\nMESSENGER_CHAT_ID=7\n`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: taskArgs("serve"),
    cwd: dir,
    clearEnv: true,
    env: { ...baseEnv(), PORT: String(envPort) },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    let health: unknown;
    for (let i = 0; i < 100 && health === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      health = await fetch(`http://127.0.0.1:${envPort}/api/health`).then(
        (r) => r.json(),
        () => undefined,
      );
    }
    assert.deepEqual(health, { ok: true, configured: true });
    assert.equal((await Deno.stat(`${dir}/from-dotenv.jsonl`)).isFile, true);
  } finally {
    child.kill("SIGTERM");
    const output = await child.output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task start refuses a malformed setting with one line naming it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  await Deno.writeTextFile(`${dir}/.env`, "PORT=abc\n");
  const output = await new Deno.Command(Deno.execPath(), {
    args: taskArgs("serve"),
    cwd: dir,
    clearEnv: true,
    env: baseEnv(),
  }).output();
  assert.equal(output.code, 1);
  const lines = new TextDecoder().decode(output.stderr).trim().split("\n");
  assert.equal(lines.length, 1);
  assert.equal(JSON.parse(lines[0]!).setting, "PORT");
  await Deno.remove(dir, { recursive: true });
});
