/**
 * The binary's baked-in permissions. `deno compile` cannot download its runtime here, so the
 * flags are proven another way: `deno task compile --print` prints exactly what the task would
 * pass to `deno compile`, and the service runs under `deno run` with exactly those flags, in the
 * deployment's layout (working directory = systemd StateDirectory, env file elsewhere).
 */
import assert from "node:assert/strict";
import { DEFAULTS, parseConfig } from "../../lib/config/config.ts";
import { compileFailure, DEFAULT_ENV_FILE, OUTPUT, TARGETS } from "../../tasks/compile.ts";
import { serviceFlags } from "../../lib/config/permissions.ts";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { baseEnv, freePort, TOKEN } from "../support/service.ts";
import { runTask, sharedCheckout, sourceCheckout, type TaskOutput } from "../support/checkout.ts";
import { stateFiles } from "../../lib/common/state_files.ts";

const ROOT = new URL("../..", import.meta.url).pathname;
const CHAT_ID = 4242;

/**
 * Runs the real `deno task compile` with `args` and `buildEnv`, in a copy of the checkout's
 * sources (`checkout`, default one per file): never the developer's `.env`.
 */
function runCompileTask(
  args: string[],
  buildEnv: Record<string, string> = {},
  checkout?: string,
): Promise<TaskOutput> {
  return runTask(["--quiet", "compile", ...args], {
    env: buildEnv,
    ...(checkout === undefined ? {} : { checkout }),
  });
}

/**
 * Runs the real `deno task compile --print` with `buildEnv`; returns the `deno` arguments, the
 * copy's paths (the sources a flag may name) given as this checkout's.
 */
async function compileTask(
  buildEnv: Record<string, string> = {},
  checkout?: string,
): Promise<string[]> {
  const output = await runCompileTask(["--print"], buildEnv, checkout);
  assert.equal(output.code, 0, output.stderr);
  const copy = `${checkout ?? await sharedCheckout()}/`;
  return JSON.parse(output.stdout.trim().split("\n").at(-1)!.replaceAll(copy, ROOT));
}

/** The permission flags of a compile command line (between "compile" and "--output"). */
function bakedFlags(args: string[]): string[] {
  assert.equal(args[0], "compile");
  const output = args.indexOf("--output");
  assert.deepEqual(args.slice(output, output + 3), ["--output", OUTPUT, "main.ts"]);
  return args.slice(1, output);
}

/** The arguments baked into the binary after `main.ts` (its built defaults). */
function bakedArgs(args: string[]): string[] {
  return args.slice(args.indexOf("main.ts") + 1);
}

Deno.test("deno task compile bakes in exactly serviceFlags of the deployment defaults", async () => {
  const args = await compileTask();
  assert.deepEqual(
    bakedFlags(args),
    serviceFlags(parseConfig({}), { envFile: DEFAULT_ENV_FILE }),
  );
  // The deployment guide shows the same list an operator gets.
  const guide = await Deno.readTextFile(`${ROOT}docs/deployment.md`);
  for (const flag of bakedFlags(args)) {
    assert.ok(guide.includes(flag), `docs/deployment.md lacks ${flag}`);
  }
});

Deno.test("deno task compile never embeds an env file and grants nothing unscoped", async () => {
  const args = await compileTask({ MESSENGER_BOT_TOKEN: TOKEN });
  assert.ok(!args.some((arg) => arg.startsWith("--env") || arg === "--env-file"));
  assert.ok(!args.join(" ").includes(TOKEN));
  for (const flag of bakedFlags(args)) {
    assert.match(flag, /^--(no-prompt|allow-(net|read|write|env)=.+)$/);
  }
  const task: string = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks.compile;
  assert.ok(!/--env-file|--allow-all|-A\b|--allow-run(\s|$)/.test(task), task);
});

Deno.test("deno task compile takes HOST, PORT, MESSENGER_API_URL, MESSAGES_FILE and CONTACTD_ENV_FILE from the build environment", async () => {
  const args = await compileTask({
    HOST: "::1",
    PORT: "9000",
    MESSENGER_API_URL: "https://bot-api.internal:8443",
    MESSAGES_FILE: "/srv/contactd/messages.jsonl",
    CONTACTD_ENV_FILE: "/srv/contactd/env",
  });
  const file = "/srv/contactd/messages.jsonl";
  const state = stateFiles(file).join(",");
  assert.deepEqual(bakedFlags(args).slice(1, 4), [
    "--allow-net=[::1]:9000,bot-api.internal:8443",
    `--allow-read=${state},/srv/contactd,/srv/contactd/env`,
    `--allow-write=${state}`,
  ]);
  // The same values become the binary's defaults (arguments baked in after main.ts).
  assert.deepEqual(bakedArgs(args), [
    "--built-default",
    "HOST=::1",
    "--built-default",
    "PORT=9000",
    "--built-default",
    "MESSENGER_API_URL=https://bot-api.internal:8443",
    "--built-default",
    `MESSAGES_FILE=${file}`,
  ]);
});

Deno.test("deno task compile bakes in no defaults when the build environment sets none", async () => {
  assert.deepEqual(bakedArgs(await compileTask()), []);
});

Deno.test("deno task compile passes --target through for every supported target, into its own file", async () => {
  for (const target of TARGETS) {
    const output = await runCompileTask(["--print", "--target", target]);
    assert.equal(output.code, 0, output.stderr);
    const args: string[] = JSON.parse(output.stdout);
    const at = args.indexOf("--target");
    assert.deepEqual(args.slice(at, at + 4), [
      "--target",
      target,
      "--output",
      `${OUTPUT}-${target}`,
    ]);
  }
  const joined = await runCompileTask(["--target=aarch64-unknown-linux-gnu", "--print"]);
  assert.equal(joined.code, 0);
  assert.ok(joined.stdout.includes('"aarch64-unknown-linux-gnu"'));
});

Deno.test("deno task compile refuses an unknown argument or target with one line, building nothing", async () => {
  for (
    const args of [["--bogus"], ["--target", "riscv64-unknown-linux-gnu"], ["--target"], [
      "--env-file=.env",
    ]]
  ) {
    const output = await runCompileTask(args);
    assert.equal(output.code, 1, args.join(" "));
    assert.equal(output.stdout, "");
    const lines = output.stderr.trim().split("\n");
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.match(lines[0]!, /^compile: (unknown argument|--target must be one of)/);
  }
});

/** This run's Deno cache directory (`DENO_DIR` or Deno's default). */
async function denoDir(): Promise<string> {
  const output = await new Deno.Command("deno", {
    args: ["info", "--json"],
    env: baseEnv(),
    stdin: "null",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return JSON.parse(new TextDecoder().decode(output.stdout)).denoDir;
}

Deno.test("deno task compile without a reachable denort says in one line that the host is offline and how DENORT_BIN fixes it, leaving no dist/", async () => {
  const checkout = await sourceCheckout();
  const dist = `${checkout}/dist`;
  // A fresh DENO_DIR, so a denort cached by an earlier build cannot make the compile succeed;
  // only the npm packages are shared (the proxy below refuses their download too).
  const cache = await Deno.makeTempDir({ prefix: "contactd-deno-dir-" });
  const npm = `${await denoDir()}/npm`;
  if (await Deno.stat(npm).then(() => true, () => false)) await Deno.symlink(npm, `${cache}/npm`);
  try {
    // A proxy on a closed port: the download fails here and on a host that is online.
    const closed = freePort();
    const output = await runCompileTask([], {
      DENO_DIR: cache,
      HTTPS_PROXY: `http://127.0.0.1:${closed}`,
      https_proxy: `http://127.0.0.1:${closed}`,
    }, checkout);
    const stderr = output.stderr;
    assert.equal(output.code, 1, stderr);
    const lines = stderr.trim().split("\n");
    assert.match(lines.at(-1)!, /^compile: this host is offline .*DENORT_BIN=\/path\/to\/denort/);
    assert.doesNotMatch(stderr, /Caused by|Stack backtrace|dl\.deno\.land/);
    assert.equal(await Deno.stat(dist).then(() => true, () => false), false);
  } finally {
    await Deno.remove(cache, { recursive: true });
    await Deno.remove(checkout, { recursive: true });
  }
});

Deno.test("compileFailure shortens only Deno's base-binary download failure, and not when DENORT_BIN is set", async () => {
  const offline = "error: Writing deno compile executable to temporary file 'dist/x.tmp'\n\n" +
    "Caused by:\n    0: Setting up base binary.\n    1: error sending request for url " +
    "(https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip): client error " +
    "(Connect): dns error: failed to lookup address information\n";
  assert.match(compileFailure(offline, undefined)!, /^compile: this host is offline.*DENORT_BIN/);
  // The page that explains DENORT_BIN, where it is.
  assert.match(compileFailure(offline, undefined)!, /docs\/deployment\.md, "Offline build hosts"/);
  assert.match(
    await Deno.readTextFile(`${ROOT}docs/deployment.md`),
    /\*\*Offline build hosts \(`DENORT_BIN`\)\.\*\*/,
  );
  assert.equal(compileFailure(offline, "/opt/denort"), undefined);
  assert.equal(compileFailure("error: Type checking failed.\n", undefined), undefined);
});

Deno.test("the systemd unit lets the service bind the default PORT only, and a build with another PORT names the line to change", async () => {
  const unit = await Deno.readTextFile(`${ROOT}systemd/contactd.service`);
  assert.deepEqual(unit.match(/^SocketBindAllow=.*$/gm), [`SocketBindAllow=tcp:${DEFAULTS.PORT}`]);
  // The unit says where the rule is documented, in one place.
  assert.match(unit, /keep it equal to the PORT the binary[\s\S]*docs\/deployment\.md/);
  const other = await runCompileTask(["--print"], { PORT: "9000" });
  assert.equal(other.code, 0);
  assert.match(
    other.stderr,
    /set SocketBindAllow=tcp:9000 in systemd\/contactd\.service/,
  );
  const same = await runCompileTask(["--print"]);
  assert.doesNotMatch(same.stderr, /SocketBindAllow/);
});

Deno.test("deno task compile refuses a malformed build setting with one line", async () => {
  for (
    const [name, value] of [
      ["PORT", "http"],
      ["CONTACTD_ENV_FILE", "relative/env"],
      ["MESSENGER_API_URL", "http://a%2cb/"],
    ]
  ) {
    const output = await runCompileTask(["--print"], { [name!]: value! });
    assert.equal(output.code, 1);
    assert.equal(output.stdout, "");
    assert.match(output.stderr, new RegExp(`^compile: "${name}"`, "m"));
  }
});

Deno.test("a binary built with PORT and MESSENGER_API_URL serves with them, its env file holding only the secrets; everything else is NotCapable", async () => {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const other = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("must not be reached"),
  );
  const root = await Deno.makeTempDir({ prefix: "contactd-binary-" });
  const state = `${root}/var/lib/contactd`; // WorkingDirectory= of the unit
  const envFile = `${root}/etc/contactd/env`;
  await Deno.mkdir(state, { recursive: true });
  await Deno.mkdir(`${root}/etc/contactd`, { recursive: true });
  const port = freePort();
  // The operator's env file: secrets here only, never in the build.
  await Deno.writeTextFile(
    envFile,
    `MESSENGER_BOT_TOKEN=${TOKEN}\nMESSENGER_CHAT_ID=${CHAT_ID}\n`,
    { mode: 0o600 },
  );
  // PORT and MESSENGER_API_URL are given at build time only: the binary's defaults.
  const compiled = await compileTask({
    PORT: String(port),
    MESSENGER_API_URL: fake.url,
    CONTACTD_ENV_FILE: envFile,
  });
  const flags = bakedFlags(compiled);
  const env = { ...baseEnv(), UNLISTED_SECRET: "must not be readable" };
  const service = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...flags,
      `${ROOT}main.ts`,
      ...bakedArgs(compiled),
      "serve",
      "--env-file",
      envFile,
    ],
    cwd: state,
    clearEnv: true,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const url = `http://127.0.0.1:${port}`;
    let health: unknown;
    for (let i = 0; i < 300 && health === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      health = await fetch(`${url}/api/health`).then((r) => r.json(), () => undefined);
    }
    assert.deepEqual(health, { ok: true, configured: true, delivery: "ok", pending: 0 });

    const response = await fetch(`${url}/api/contact`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "203.0.113.9" },
      body: JSON.stringify({ name: "Ann", contact: "@ann", message: "Hello from the binary" }),
    });
    assert.equal(response.status, 200);
    assert.match(
      await response.text(),
      /^\{"ok":true,"case_url":"\/api\/case\/[A-Za-z0-9_-]{32}"\}$/,
    ); // with its case page
    assert.equal(fake.delivered.length, 1);
    assert.match(fake.delivered[0]!, /Hello from the binary/);
    const lines = (await Deno.readTextFile(`${state}/messages.jsonl`)).trim().split("\n");
    assert.equal(lines.length, 1);
    assert.equal(JSON.parse(lines[0]!).ip, "203.0.113.9");
    assert.equal((await Deno.stat(`${state}/messages.jsonl`)).mode! & 0o777, 0o600);

    const probe = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...flags,
        `${ROOT}tests/support/permission_probe.ts`,
        envFile,
        `${fake.url}/`,
        `http://127.0.0.1:${other.addr.port}/`,
      ],
      cwd: state,
      clearEnv: true,
      env,
      stdin: "null",
    }).output();
    assert.equal(probe.code, 0, new TextDecoder().decode(probe.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(probe.stdout)), {
      "write messages.jsonl": "ok",
      "read env file": "ok",
      "read setting": "ok",
      "connect to the API": "ok",
      "write another file here": "NotCapable",
      "write /tmp": "NotCapable",
      "write the env file": "NotCapable",
      "read /etc/passwd": "NotCapable",
      // Its own directory (the StateDirectory) is granted read, to sync it after a rewrite.
      "read the directory": "ok",
      "read env HOME": "NotCapable",
      "read whole env": "NotCapable",
      "connect to another loopback port": "NotCapable",
      "connect to another host": "NotCapable",
      "connect to the API host on port 80": "NotCapable",
      "listen elsewhere": "NotCapable",
      "run a program": "NotCapable",
      "system info": "NotCapable",
      "load a native library": "NotCapable",
    });
    assert.deepEqual(
      Array.from(Deno.readDirSync(state), (entry) => entry.name).sort(),
      [
        "messages.jsonl",
        "messages.jsonl.db",
        "messages.jsonl.db-shm",
        "messages.jsonl.db-wal",
        "messages.jsonl.lock",
      ],
    );
  } finally {
    service.kill("SIGTERM");
    const output = await service.output();
    await fake.close();
    await other.shutdown();
    await Deno.remove(root, { recursive: true });
    const logs = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.ok(!logs.includes("AAE_secret"), "token leaked in the logs");
    assert.equal(output.code, 0, logs);
  }
});

Deno.test("a binary refuses at start-up a PORT outside its baked-in permissions, naming the setting", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-binary-" });
  const compiled = await compileTask({ PORT: String(freePort()) });
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...bakedFlags(compiled), `${ROOT}main.ts`, ...bakedArgs(compiled)],
    cwd: dir,
    clearEnv: true,
    env: { ...baseEnv(), PORT: String(freePort()) },
    stdin: "null",
  }).output();
  await Deno.remove(dir, { recursive: true });
  assert.equal(output.code, 1);
  const lines = new TextDecoder().decode(output.stderr).trim().split("\n").map((l) =>
    JSON.parse(l)
  );
  assert.equal(lines.length, 1);
  assert.equal(lines[0].event, "config_invalid");
  assert.equal(lines[0].setting, "PORT");
  assert.match(lines[0].error, /this build may not listen on 127\.0\.0\.1:\d+/);
});

Deno.test("deno task compile reads .env as deno task start does (the environment wins) and prints what it baked in", async () => {
  // A checkout of its own: the real one's .env is the developer's.
  const dir = await sourceCheckout();
  try {
    await Deno.writeTextFile(
      `${dir}/.env`,
      "\uFEFFPORT=9123\nMESSAGES_FILE=/srv/contactd/m.jsonl\nHOST=127.0.0.2\nMESSENGER_PROT=1\n" +
        "MESSENGER_BOT_TOKEN=123456789:AAE_secret-token-value\n",
      { mode: 0o600 },
    );
    const output = await runCompileTask(["--print"], { HOST: "127.0.0.3" }, dir);
    const stderr = output.stderr;
    assert.equal(output.code, 0, stderr);
    const args: string[] = JSON.parse(output.stdout.trim());
    assert.deepEqual(bakedArgs(args), [
      "--built-default",
      "HOST=127.0.0.3",
      "--built-default",
      "PORT=9123",
      "--built-default",
      "MESSAGES_FILE=/srv/contactd/m.jsonl",
    ]);
    assert.ok(args.includes("--allow-net=127.0.0.3:9123,api.telegram.org:443"), args.join(" "));
    assert.match(
      stderr,
      /^compile: baked in: HOST=127\.0\.0\.3 PORT=9123 MESSENGER_API_URL=https:\/\/api\.telegram\.org MESSAGES_FILE=\/srv\/contactd\/m\.jsonl CHALLENGE=none TURNSTILE_VERIFY_URL=\S+; settings file --env-file \/etc\/contactd\/env$/m,
    );
    assert.match(stderr, /^compile: \.env line 4: MESSENGER_PROT is not a contactd setting/m);
    assert.ok(!stderr.includes("AAE_secret") && !args.join(" ").includes("AAE_secret"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task compile grants the mail server of SMTP_URL (environment or .env) and never bakes in the URL", async () => {
  const url = "smtp://relay:pa55-word@mail.example.org:2587";
  const checkout = await sourceCheckout();
  try {
    for (
      const [env, dotEnv] of [[{ SMTP_URL: url }, ""], [{}, `SMTP_URL=${url}\n`]] as const
    ) {
      await Deno.writeTextFile(`${checkout}/.env`, dotEnv, { mode: 0o600 });
      const output = await runCompileTask(["--print"], env, checkout);
      assert.equal(output.code, 0, output.stderr);
      const args: string[] = JSON.parse(output.stdout.trim());
      assert.ok(
        bakedFlags(args).includes(
          "--allow-net=127.0.0.1:8787,api.telegram.org:443,mail.example.org:2587",
        ),
        args.join(" "),
      );
      assert.deepEqual(bakedArgs(args), []);
      assert.ok(!(output.stdout + output.stderr).includes("pa55-word"));
      assert.ok(!(output.stdout + output.stderr).includes("relay:"));
    }
  } finally {
    await Deno.remove(checkout, { recursive: true });
  }
});

Deno.test("the compile tests never read the developer's .env: a hostile .env in the checkout they copy changes nothing", async () => {
  const hostile = await sourceCheckout();
  try {
    await Deno.writeTextFile(
      `${hostile}/.env`,
      "PORT=1\nHOST=0.0.0.0\nCHALLENGE=turnstile\nTURNSTILE_VERIFY_URL=https://evil.example\n" +
        "MESSENGER_API_URL=https://evil.example\nMESSAGES_FILE=/evil/m.jsonl\n" +
        "SMTP_URL=smtp://evil.example\nCONTACTD_ENV_FILE=/evil/env\n",
      { mode: 0o600 },
    );
    // The harness copies the sources of the checkout it is pointed at, never its .env.
    const copied = await sourceCheckout(hostile);
    try {
      assert.deepEqual(await compileTask({}, copied), await compileTask());
      assert.deepEqual(bakedArgs(await compileTask({}, copied)), []);
    } finally {
      await Deno.remove(copied, { recursive: true });
    }
    // The same .env read where it lies changes everything: the test above can fail.
    assert.notDeepEqual(await compileTask({}, hostile), await compileTask());
  } finally {
    await Deno.remove(hostile, { recursive: true });
  }
});
