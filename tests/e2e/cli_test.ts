/**
 * The command line of the real `main.ts` process.
 */
import assert from "node:assert/strict";

const ROOT = new URL("../..", import.meta.url).pathname;

Deno.test("--version prints the version from deno.json, the one place it is kept", async () => {
  const { version } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  assert.match(version, /^\d+\.\d+\.\d+$/);
  const main = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", `${ROOT}main.ts`, "--version"],
    stdin: "null",
  }).output();
  assert.equal(main.code, 0);
  assert.equal(new TextDecoder().decode(main.stdout), `contactd ${version}\n`);
});

const TASKS = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`)).tasks;
/** How the tasks name the Deno that runs them (deno task runs its own `deno`). */
const EXEC_PATH = `"$(deno eval 'console.log(Deno.execPath())')"`;

/** `deno task contactd …` as deno task runs it, with the launcher's path made absolute. */
function contactdTask(...args: string[]): string[] {
  // `contactd` hands its arguments to `launch`, the task that runs the launcher with its flags.
  const words = (TASKS.launch as string).replaceAll(EXEC_PATH, Deno.execPath()).split(/\s+/);
  return [
    ...words.slice(1).map((word) => word === "tasks/launch.ts" ? `${ROOT}tasks/launch.ts` : word),
    ...args,
  ];
}

function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1" };
  for (const name of ["HOME", "DENO_DIR", "PATH"]) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

/** No stack trace, no uncaught error: what an operator should never see. */
function assertNoTrace(text: string): void {
  assert.doesNotMatch(text, /Uncaught|^\s+at |Stack backtrace|NotCapable:/m, text);
}

Deno.test("deno run main.ts check without flags ends with one line naming the --allow-env to grant", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-cli-" });
  for (const args of [["check"], [], ["pending"]]) {
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", `${ROOT}main.ts`, ...args],
      cwd: dir,
      clearEnv: true,
      env: baseEnv(),
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(output.stderr);
    assert.equal(output.code, 1, text);
    assertNoTrace(text);
    const lines = text.trim().split("\n");
    assert.equal(lines.length, 1, text);
    assert.match(lines[0]!, /^contactd: not permitted: .*grant --allow-env=MESSENGER_BOT_TOKEN,/);
  }
  await Deno.remove(dir, { recursive: true });
});

Deno.test("the operator commands run from a checkout through deno task contactd, reading .env, and fail in one line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-cli-" });
  // Port 6000 (X11) is one Deno's fetch refuses outright: the reason must survive.
  await Deno.writeTextFile(
    `${dir}/.env`,
    "MESSENGER_BOT_TOKEN=123456789:AAE_secret-token-value\nMESSENGER_CHAT_ID=42\n" +
      "MESSENGER_API_URL=http://127.0.0.1:6000\n",
  );
  const expected: Record<string, RegExp> = {
    check: /getMe failed: network error: port 6000 blocked by the runtime/,
    "chat-id": /getUpdates failed: network error: port 6000 blocked by the runtime/,
    "send-test": /not delivered: network error: port 6000 blocked by the runtime/,
    pending: /nothing pending/,
  };
  try {
    for (const [command, pattern] of Object.entries(expected)) {
      const output = await new Deno.Command(Deno.execPath(), {
        args: contactdTask(command),
        cwd: dir,
        clearEnv: true,
        env: baseEnv(),
        stdin: "null",
      }).output();
      const text = new TextDecoder().decode(output.stdout) +
        new TextDecoder().decode(output.stderr);
      assertNoTrace(text);
      assert.match(text, pattern, `${command}: ${text}`);
      assert.equal(output.code, command === "pending" ? 0 : 1, `${command}: ${text}`);
      assert.ok(!text.includes("AAE_secret"), text);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs `deno task contactd <args>` in a fresh directory holding `dotEnv` as `.env`. */
async function inCheckout(dotEnv: string, args: string[], mode = 0o600) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-cli-" });
  await Deno.writeTextFile(`${dir}/.env`, dotEnv, { mode });
  await Deno.chmod(`${dir}/.env`, mode);
  try {
    const output = await new Deno.Command(Deno.execPath(), {
      args: contactdTask(...args),
      cwd: dir,
      clearEnv: true,
      env: baseEnv(),
      stdin: "null",
    }).output();
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("deno task contactd check reports a malformed setting in one plain 'contactd check:' line, not JSON", async () => {
  const { code, stderr } = await inCheckout("PORT=http\n", ["check"]);
  assert.equal(code, 1);
  assert.equal(
    stderr,
    'contactd check: "PORT" must be a port number between 1 and 65535\n',
  );
});

Deno.test("deno task contactd refuses --env-file in one line saying the checkout reads .env (exit 2)", async () => {
  const { code, stderr } = await inCheckout("", ["check", "--env-file", "/etc/contactd/env"]);
  assert.equal(code, 2);
  const lines = stderr.trim().split("\n");
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, /^contactd check: --env-file is the option of a compiled contactd; /);
  assert.match(lines[0]!, /reads \.env in the checkout/);
  assert.doesNotMatch(stderr, /built|build time/);
});

Deno.test("deno task contactd reads a .env with a byte-order mark, and names its skipped lines and loose mode", async () => {
  const { stdout, stderr } = await inCheckout(
    "\uFEFFMESSENGER_BOT_TOKEN=123456789:AAE_secret-token-value\nMESSENGER_CHATID=42\n" +
      "MESSENGER_API_URL=http://127.0.0.1:6000\n",
    ["check"],
    0o644,
  );
  const text = stdout + stderr;
  // The token was read (a BOM would have left it "not set"): getMe was tried.
  assert.match(text, /getMe failed: network error/);
  assert.doesNotMatch(text, /"MESSENGER_BOT_TOKEN" is not set/);
  assert.match(
    stderr,
    /^contactd check: \.env line 2: MESSENGER_CHATID is not a contactd setting \(did you mean MESSENGER_CHAT_ID\?\); skipped$/m,
  );
  assert.match(stderr, /^contactd check: \.env is readable by others \(mode 644\): chmod 600/m);
  assert.ok(!text.includes("AAE_secret"));
});

Deno.test("deno task contactd --help names deno task contactd and .env, not the binary's --env-file", async () => {
  const { code, stdout } = await inCheckout("", ["--help"]);
  assert.equal(code, 0);
  assert.match(stdout, /^Usage: deno task contactd \[command\]/m);
  assert.doesNotMatch(stdout, /--env-file/);
});
