/**
 * `deno task start`: the launcher, run with exactly the flags of the task in deno.json.
 */
import assert from "node:assert/strict";
import { ENV_NAMES } from "../../lib/config/permissions.ts";
import {
  baseEnv,
  CHAT_ID,
  freePort,
  isRoot,
  NOBODY,
  startService,
  TOKEN,
} from "../support/service.ts";
import { runTask, sourceCheckout } from "../support/checkout.ts";
import { copyLib } from "../support/sources.ts";
import { requireTool, skipWithout } from "../support/tools.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const TASKS = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
/** The task that runs the launcher with its flags (`contactd` and `start` hand over to it). */
const TASK: string = TASKS.launch;
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
  // The everyday tasks hand over to the one that holds the flags, quietly.
  assert.equal(TASKS.contactd, "deno task --quiet launch");
  assert.equal(TASKS.start, "deno task --quiet launch serve");
  const words = TASK.replaceAll(EXEC_PATH, "EXEC_PATH").split(/\s+/);
  assert.ok(words.includes(`--allow-env=${ENV_NAMES}`));
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
    { mode: 0o600 },
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
    assert.deepEqual(health, { ok: true, configured: true, delivery: "ok", pending: 0 });
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
  await Deno.writeTextFile(`${dir}/.env`, "PORT=abc\n", { mode: 0o600 });
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

Deno.test("deno task start reads a form's settings from the environment for FORMS in .env (FORM_* granted)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  await Deno.writeTextFile(`${dir}/.env`, "FORMS=sales-eu\n", { mode: 0o600 });
  const output = await new Deno.Command(Deno.execPath(), {
    args: taskArgs("serve"),
    cwd: dir,
    clearEnv: true,
    // Read and refused: the General topic (a value that only a form's setting can carry here).
    env: { ...baseEnv(), FORM_SALES_EU_TOPIC_ID: "1" },
  }).output();
  assert.equal(output.code, 1);
  const lines = new TextDecoder().decode(output.stderr).trim().split("\n");
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.equal(JSON.parse(lines[0]!).setting, "FORM_SALES_EU_TOPIC_ID");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("deno task contactd and deno task start print one short Task line, not the permission list", async () => {
  const checkout = await sourceCheckout();
  try {
    for (const task of [["contactd", "--version"], ["start", "--version"]]) {
      const output = await runTask(task, { checkout });
      assert.equal(output.code, 0, output.stderr);
      assert.match(output.stdout, /^contactd \d+\.\d+\.\d+/);
      const lines = output.stderr.trim().split("\n");
      assert.equal(lines.length, 1, output.stderr);
      assert.match(lines[0]!, /^Task (contactd|start) deno task --quiet launch/);
      assert.ok(lines[0]!.length <= 80, lines[0]);
      assert.doesNotMatch(output.stderr, /--allow-/);
    }
  } finally {
    await Deno.remove(checkout, { recursive: true });
  }
});

Deno.test("every command that reads standard input reads it through deno task contactd: unblock -, forget --contact -", async () => {
  const checkout = await sourceCheckout();
  try {
    await Deno.writeTextFile(`${checkout}/.env`, "MESSAGES_FILE=data/messages.jsonl\n", {
      mode: 0o600,
    });
    await Deno.mkdir(`${checkout}/data`);
    // The launcher holding the child's standard input open made these wait forever. An empty
    // line is refused only once standard input has been read to its end.
    for (const command of [["unblock", "-"], ["forget", "--dry-run", "--contact", "-"]]) {
      const empty = await runTask(["contactd", ...command], {
        checkout,
        stdin: "\n",
        timeoutMs: 30_000,
      });
      assert.equal(empty.code, 2, `${command.join(" ")}: ${empty.stderr}`);
      assert.match(empty.stderr, /^contactd.*(standard input|--contact takes)/m);
      // A value is taken: whatever the files say, the command ends by itself.
      const value = await runTask(["contactd", ...command], {
        checkout,
        stdin: "spam@example.org\n",
        timeoutMs: 30_000,
      });
      assert.notEqual(value.code, 137, `${command.join(" ")} waited for standard input`);
      assert.doesNotMatch(value.stderr, /standard input/);
    }
  } finally {
    await Deno.remove(checkout, { recursive: true });
  }
});

Deno.test("deno task contactd check and start warn about a .env FORM_ line no form reads (FORM_SITEB_CHAT_ID for site-b)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  try {
    await Deno.writeTextFile(
      `${dir}/.env`,
      "FORMS=site-b\nFORM_SITEB_CHAT_ID=-100222\n",
      { mode: 0o600 },
    );
    const check = await new Deno.Command(Deno.execPath(), {
      args: taskArgs("check"),
      cwd: dir,
      clearEnv: true,
      env: baseEnv(),
    }).output();
    const text = new TextDecoder().decode(check.stderr);
    assert.match(
      text,
      /^contactd check: \.env line 2: FORM_SITEB_CHAT_ID is not a contactd setting \(did you mean FORM_SITE_B_CHAT_ID\?\); skipped$/m,
    );
    assert.ok(!text.includes("-100222"), text);
    // At start, as a JSON log line (PORT=abc then stops it before anything listens).
    const serve = await new Deno.Command(Deno.execPath(), {
      args: taskArgs("serve"),
      cwd: dir,
      clearEnv: true,
      env: { ...baseEnv(), PORT: "abc" },
    }).output();
    const lines = new TextDecoder().decode(serve.stderr).trim().split("\n").map((line) =>
      JSON.parse(line)
    );
    assert.ok(
      lines.some((line) =>
        line.event === "env_file_line_skipped" && line.name === "FORM_SITEB_CHAT_ID" &&
        line.closest === "FORM_SITE_B_CHAT_ID"
      ),
      JSON.stringify(lines),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Polls `url` until it answers (true) or `tries` × 100 ms pass (false). */
async function answers(url: string, tries = 100): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    const ok = await fetch(url).then((r) => r.body?.cancel().then(() => true), () => false);
    if (ok) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return false;
}

/** Whether process `pid` still exists (a zombie counts as gone). */
async function alive(pid: number): Promise<boolean> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`).catch(() => undefined);
  return stat !== undefined && !/^\d+ \(.*\) Z /.test(stat);
}

/** Starts the launcher in `dir` with a `.env` naming `port`; returns it and the child's pid. */
async function startLauncher(dir: string, port: number) {
  await Deno.writeTextFile(`${dir}/.env`, `PORT=${port}\n`, { mode: 0o600 });
  const launcher = new Deno.Command(Deno.execPath(), {
    args: taskArgs("serve"),
    cwd: dir,
    clearEnv: true,
    env: baseEnv(),
    stdout: "null",
    stderr: "null",
  }).spawn();
  assert.ok(await answers(`http://127.0.0.1:${port}/api/health`), "the service did not start");
  // Deno asks for --allow-all to read /proc/<pid>/…; the test task grants --allow-run, so cat.
  const children = new TextDecoder().decode(
    (await new Deno.Command("cat", {
      args: [`/proc/${launcher.pid}/task/${launcher.pid}/children`],
    }).output()).stdout,
  );
  const pids = children.trim().split(/\s+/).map(Number);
  assert.equal(pids.length, 1, children);
  return { launcher, child: pids[0]! };
}

Deno.test("when the launcher is killed with SIGKILL, its child stops and the port is free for a second start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  const port = freePort();
  const { launcher, child } = await startLauncher(dir, port);
  try {
    launcher.kill("SIGKILL");
    await launcher.status;
    let gone = false;
    for (let i = 0; i < 50 && !gone; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      gone = !(await alive(child));
    }
    assert.ok(gone, `child ${child} still runs after its launcher was killed`);
    const second = await startLauncher(dir, port);
    second.launcher.kill("SIGTERM");
    assert.equal((await second.launcher.status).code, 0);
  } finally {
    if (await alive(child)) Deno.kill(child, "SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
});

for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
  Deno.test(`the launcher passes ${signal} on: the child stops gracefully and both exit 0`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
    const { launcher, child } = await startLauncher(dir, freePort());
    try {
      launcher.kill(signal);
      assert.equal((await launcher.status).code, 0);
      assert.ok(!(await alive(child)));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("SIGHUP stops the service like SIGTERM: the request in flight is answered and recorded", async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  let called = () => {};
  const calledOnce = new Promise<void>((resolve) => called = resolve);
  // A Bot API that holds the first sendMessage until the signal has been sent (getMe, asked at
  // start, and the chat's getUpdates are answered at once).
  const api = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      if (request.url.endsWith("/getMe")) {
        return Response.json({ ok: true, result: { id: 1, username: "held_bot" } });
      }
      // The chat's long poll: nothing new (it is no sendMessage to hold).
      if (request.url.endsWith("/getUpdates")) return Response.json({ ok: true, result: [] });
      called();
      await held;
      return Response.json({ ok: true, result: { message_id: 1 } });
    },
  );
  const service = await startService({
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: `http://127.0.0.1:${api.addr.port}`,
  });
  try {
    const response = service.post({ name: "Ann", contact: "@ann", message: "in flight" });
    await calledOnce;
    service.process.kill("SIGHUP");
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    const answer = await response;
    const body = await answer.json();
    assert.ok(answer.status === 200 || answer.status === 502, JSON.stringify(body));
    // It ends by itself: no SIGTERM after the SIGHUP.
    assert.equal((await service.process.status).code, 0);
    assert.equal((await service.records()).length, 1);
    assert.ok(service.logs().some((line) => line.event === "stopping" && line.signal === "SIGHUP"));
  } finally {
    release();
    await service.stop();
    await api.shutdown();
    await Deno.remove(service.dir, { recursive: true });
  }
});

Deno.test("deno task start refuses a value that swallowed the token's line without printing any of the token", async () => {
  const secret = TOKEN.slice(TOKEN.indexOf(":") + 1);
  for (
    const [setting, value] of [
      ["TRUSTED_PROXIES", "none"],
      // A valid path otherwise: it would be echoed by the permission and file-mode lines.
      ["MESSAGES_FILE", "messages.jsonl"],
    ]
  ) {
    const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
    await Deno.writeTextFile(
      `${dir}/.env`,
      `PORT=${freePort()}\n${setting}="${value} MESSENGER_BOT_TOKEN=${TOKEN}"\n`,
      { mode: 0o600 },
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: taskArgs("serve"),
      cwd: dir,
      clearEnv: true,
      env: baseEnv(),
      // Accepted, the service would serve on: a refusal comes at once.
      signal: AbortSignal.timeout(30_000),
    }).output();
    await Deno.remove(dir, { recursive: true });
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, text);
    const lines = text.trim().split("\n");
    assert.equal(lines.length, 1, text);
    assert.equal(JSON.parse(lines[0]!).setting, setting);
    for (let i = 0; i + 8 <= secret.length; i++) {
      assert.ok(!text.includes(secret.slice(i, i + 8)), text);
    }
  }
});

/** The launcher's exit code and output, with no stack trace and one line on stderr. */
function oneLineFailure(output: Deno.CommandOutput): string {
  const text = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 1, text);
  assert.equal(new TextDecoder().decode(output.stdout), "");
  assert.equal(text.indexOf("\n"), text.length - 1, text);
  assert.doesNotMatch(text, /Uncaught|^ +at /m, text);
  return text.trim();
}

Deno.test("deno task start with a .env it cannot read (a directory) says so in one line and exits 1", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  try {
    await Deno.mkdir(`${dir}/.env`);
    const output = await new Deno.Command(Deno.execPath(), {
      args: taskArgs("serve"),
      cwd: dir,
      clearEnv: true,
      env: baseEnv(),
    }).output();
    const line = JSON.parse(oneLineFailure(output));
    assert.equal(line.event, "env_file_unreadable");
    assert.match(line.error, /^cannot read \.env: IsADirectory: /);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "deno task start with a .env of mode 000 says the system refused it in one line and exits 1",
  // As root the launcher runs as nobody (root reads any file), through setpriv.
  ignore: isRoot() && skipWithout("setpriv"),
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
    try {
      await Deno.writeTextFile(`${dir}/.env`, `MESSENGER_BOT_TOKEN=${TOKEN}\n`, { mode: 0o600 });
      await Deno.chmod(`${dir}/.env`, 0o000);
      let command = Deno.execPath();
      let args = taskArgs("serve");
      let env = baseEnv();
      if (isRoot()) {
        // Copies nobody may read (the checkout may sit under a private home), its own cache.
        await Deno.mkdir(`${dir}/src/tasks`, { recursive: true });
        await Deno.mkdir(`${dir}/src/lib`);
        await Deno.copyFile(`${ROOT}tasks/launch.ts`, `${dir}/src/tasks/launch.ts`);
        await copyLib(`${dir}/src`);
        await Deno.mkdir(`${dir}/home`);
        await Deno.chmod(dir, 0o755);
        for (const path of [dir, `${dir}/home`]) await Deno.chown(path, NOBODY, NOBODY);
        const setpriv = ["--reuid", String(NOBODY), "--regid", String(NOBODY), "--clear-groups"];
        let deno = Deno.execPath();
        const tool = requireTool("setpriv");
        const probe = await new Deno.Command(tool, { args: [...setpriv, "--", deno, "--version"] })
          .output();
        if (!probe.success) {
          deno = `${dir}/deno`;
          await Deno.copyFile(Deno.execPath(), deno);
        }
        command = tool;
        args = [
          ...setpriv,
          "--",
          deno,
          ...args.map((word) =>
            word === `${ROOT}tasks/launch.ts` ? `${dir}/src/tasks/launch.ts` : word
          ),
        ];
        env = { ...env, HOME: `${dir}/home`, DENO_DIR: `${dir}/home/deno` };
      }
      const output = await new Deno.Command(command, { args, cwd: dir, clearEnv: true, env })
        .output();
      assert.match(
        JSON.parse(oneLineFailure(output)).error,
        /^cannot read \.env: the system refused access \(permission denied\); /,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("deno task start refuses a comma in MESSENGER_API_URL (also %2c) with one line, before any child runs", async () => {
  for (const url of ["http://a%2cb/", "http://a,b:80/", "https://bot%2Capi.example"]) {
    const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
    await Deno.writeTextFile(`${dir}/.env`, `MESSENGER_API_URL=${url}\n`, { mode: 0o600 });
    const output = await new Deno.Command(Deno.execPath(), {
      args: taskArgs("serve"),
      cwd: dir,
      clearEnv: true,
      env: baseEnv(),
    }).output();
    await Deno.remove(dir, { recursive: true });
    const text = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, text);
    const lines = text.trim().split("\n");
    assert.equal(lines.length, 1, text);
    assert.equal(JSON.parse(lines[0]!).setting, "MESSENGER_API_URL");
  }
});

Deno.test("deno task start warns about a skipped .env line and a loose mode in JSON lines, and serves", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-launch-" });
  const port = freePort();
  await Deno.writeTextFile(`${dir}/.env`, `\uFEFFPORT=${port}\nMESSENGER_CHATID=7\n`);
  await Deno.chmod(`${dir}/.env`, 0o644);
  const child = new Deno.Command(Deno.execPath(), {
    args: taskArgs("serve"),
    cwd: dir,
    clearEnv: true,
    env: baseEnv(),
    stdout: "null",
    stderr: "piped",
  }).spawn();
  try {
    // The BOM did not hide PORT: the service listens where .env says.
    assert.ok(await answers(`http://127.0.0.1:${port}/api/health`), "the service did not start");
  } finally {
    child.kill("SIGTERM");
    const output = await child.output();
    await Deno.remove(dir, { recursive: true });
    const lines = new TextDecoder().decode(output.stderr).trim().split("\n").map((line) =>
      JSON.parse(line)
    );
    const skipped = lines.filter((line) => line.event === "env_file_line_skipped");
    assert.deepEqual(
      skipped.map(({ level, file, line, name, closest }) => ({ level, file, line, name, closest })),
      [{
        level: "warn",
        file: ".env",
        line: 2,
        name: "MESSENGER_CHATID",
        closest: "MESSENGER_CHAT_ID",
      }],
    );
    assert.ok(lines.some((line) => line.event === "file_mode" && line.file === ".env"));
  }
});
