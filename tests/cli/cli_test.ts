/**
 * The command line: parsing, --help, --version, --env-file, dispatch.
 */
import assert from "node:assert/strict";
import { loadOutbox, readSubmissions } from "../../lib/storage/outbox.ts";
import {
  BUILT_DEFAULT_FLAG,
  type CliIo,
  COMMANDS,
  helpText,
  parseCommandLine,
  runCli,
  type ServeOptions,
} from "../../lib/cli/cli.ts";
import { DEFAULTS, SETTING_NAMES } from "../../lib/config/config.ts";
import type { Settings } from "../../lib/config/settings.ts";

const ROOT = new URL("../..", import.meta.url).pathname;

/** Runs the CLI with `serve` recording the settings it got instead of serving. */
async function run(
  args: string[],
  env: Settings = {},
  files: Record<string, string> = {},
) {
  const out: string[] = [];
  const err: string[] = [];
  const served: Settings[] = [];
  const serveOptions: ServeOptions[] = [];
  const io: CliIo = {
    version: "1.2.3",
    env: (name) => env[name],
    readTextFile: (path) =>
      Object.hasOwn(files, path)
        ? Promise.resolve(files[path]!)
        : Promise.reject(new Deno.errors.NotCapable(`Requires read access to "${path}"`)),
    fetch: () => Promise.reject(new Error("no network in this test")),
    now: () => new Date(0),
    readOutbox: loadOutbox,
    readSubmissions,
    granted: () => true,
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    serve: (settings, options) => {
      served.push(settings);
      serveOptions.push(options);
      return Promise.resolve(0);
    },
  };
  const code = await runCli(args, io);
  return { code, out, err, served, serveOptions };
}

Deno.test("contactd with no command, or serve, runs the service with the environment's settings", async () => {
  for (const args of [[], ["serve"]]) {
    const { code, served } = await run(args, { PORT: "9000", HOST: "::1" });
    assert.equal(code, 0);
    assert.deepEqual(served, [{ PORT: "9000", HOST: "::1" }]);
  }
});

Deno.test("--env-file settings are used, the process environment winning", async () => {
  const file = "# comment\nPORT=1111\nHOST=0.0.0.0\nMESSENGER_CHAT_ID='-5'\nPATH=/evil\n";
  for (
    const args of [["--env-file", "/etc/contactd/env"], ["serve", "--env-file=/etc/contactd/env"]]
  ) {
    const { served } = await run(args, { PORT: "2222" }, { "/etc/contactd/env": file });
    assert.deepEqual(served, [{ PORT: "2222", HOST: "0.0.0.0", MESSENGER_CHAT_ID: "-5" }]);
  }
});

Deno.test("an env file that may not be read stops the command with one line, exit 1", async () => {
  const { code, err, served } = await run(["check", "--env-file", "/root/other"]);
  assert.equal(code, 1);
  assert.deepEqual(served, []);
  assert.deepEqual(err, [
    "contactd: cannot read env file /root/other: not permitted " +
    "(a compiled contactd reads only the env file named at build time)",
  ]);
});

Deno.test("usage errors exit 2 with one line pointing at --help", async () => {
  for (
    const args of [["bogus"], ["--port", "1"], ["check", "extra"], ["--env-file"], ["--env-file="]]
  ) {
    const { code, err, served } = await run(args);
    assert.equal(code, 2, args.join(" "));
    assert.equal(err.length, 1);
    assert.match(err[0]!, /^contactd: .+ \(see contactd --help\)$/);
    assert.deepEqual(served, []);
  }
});

Deno.test("parseCommandLine recognises every command and the options", () => {
  for (const command of Object.keys(COMMANDS)) {
    assert.deepEqual(parseCommandLine([command]), { kind: "run", command });
  }
  assert.deepEqual(parseCommandLine(["-h"]), { kind: "help" });
  assert.deepEqual(parseCommandLine(["check", "--help"]), { kind: "help" });
  assert.deepEqual(parseCommandLine(["-V"]), { kind: "version" });
  assert.deepEqual(parseCommandLine(["chat-id", "--env-file", "x"]), {
    kind: "run",
    command: "chat-id",
    envFile: "x",
  });
});

Deno.test("--help lists every command and every setting with its default", async () => {
  const { code, out } = await run(["--help"]);
  assert.equal(code, 0);
  const text = out.join("\n");
  assert.equal(text, helpText("1.2.3").trimEnd());
  for (const command of Object.keys(COMMANDS)) {
    assert.match(text, new RegExp(`^  ${command} `, "m"));
  }
  for (const name of SETTING_NAMES) assert.match(text, new RegExp(`^  ${name} `, "m"));
  for (const value of Object.values(DEFAULTS)) {
    // An empty default means unset: no "(default )" line.
    assert.equal(text.includes(`(default ${value})`), value !== "", `default ${value}`);
  }
  assert.match(text, /--env-file PATH/);
  assert.match(text, /--version/);
});

Deno.test("the README documents every command and the binary's env-file option", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  for (const command of Object.keys(COMMANDS)) {
    assert.match(readme, new RegExp(`contactd ${command}`));
  }
  assert.match(readme, /--env-file PATH/);
});

Deno.test("the README's settings table, .env.example and --help name every setting, with the same defaults", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const example = await Deno.readTextFile(`${ROOT}.env.example`);
  const help = helpText("1.2.3");
  // README rows look like: | `NAME` | `default` or unset | meaning |
  const rows = new Map<string, string>();
  for (const match of readme.matchAll(/^\| `([A-Z_]+)` +\| ([^|]*?) +\|/gm)) {
    rows.set(match[1]!, match[2]!);
  }
  const defaults: Readonly<Record<string, string>> = DEFAULTS;
  for (const name of SETTING_NAMES) {
    const fallback = Object.hasOwn(defaults, name) ? defaults[name]! : "";
    assert.equal(rows.get(name), fallback === "" ? "unset" : `\`${fallback}\``, `README ${name}`);
    assert.match(example, new RegExp(`^(# ?)?${name}=`, "m"), `.env.example lacks ${name}`);
    assert.match(help, new RegExp(`^  ${name} `, "m"), `--help lacks ${name}`);
  }
  // Nothing documented that the code does not read.
  assert.deepEqual([...rows.keys()].sort(), [...SETTING_NAMES].sort());
  const assigned = [...example.matchAll(/^(?:# ?)?([A-Z_]+)=/gm)].map((match) => match[1]!);
  assert.deepEqual(assigned.sort(), [...SETTING_NAMES].sort());
});

Deno.test("a binary's built defaults (arguments baked in before the operator's) apply where the env file and environment leave a setting unset or blank", async () => {
  const built = [
    BUILT_DEFAULT_FLAG,
    "PORT=9000",
    BUILT_DEFAULT_FLAG,
    "MESSENGER_API_URL=http://a:1",
  ];
  const plain = await run([...built, "serve"]);
  assert.equal(plain.code, 0);
  assert.deepEqual(plain.served, [{ PORT: "9000", MESSENGER_API_URL: "http://a:1" }]);
  const file = "PORT=\nMESSENGER_API_URL=http://b:2\n";
  const overridden = await run(
    [...built, "--env-file", "/etc/contactd/env"],
    { HOST: "::1" },
    { "/etc/contactd/env": file },
  );
  assert.deepEqual(overridden.served, [
    { PORT: "9000", MESSENGER_API_URL: "http://b:2", HOST: "::1" },
  ]);
  const env = await run(built, { PORT: "9100" });
  assert.equal(env.served[0]!.PORT, "9100");
});

Deno.test("--built-default takes only the settings a build decides, as NAME=VALUE", async () => {
  for (const value of ["MESSENGER_BOT_TOKEN=1:x", "TRUSTED_PROXIES=none", "PORT"]) {
    const { code, err, served } = await run([BUILT_DEFAULT_FLAG, value]);
    assert.equal(code, 2, value);
    assert.equal(err.length, 1);
    assert.match(err[0]!, /--built-default takes one of HOST, PORT, MESSENGER_API_URL/);
    assert.equal(served.length, 0);
  }
});

Deno.test("--help shows a binary's built defaults as its defaults", async () => {
  const { out } = await run([BUILT_DEFAULT_FLAG, "PORT=9000", "--help"]);
  assert.match(out.join("\n"), /^ {2}PORT +listen port \(default 9000\)$/m);
  assert.match(helpText("1"), /^ {2}PORT +listen port \(default 8787\)$/m);
});

Deno.test("--stop-on-stdin-eof reaches serve; without it serve gets no such option", async () => {
  assert.deepEqual((await run(["--stop-on-stdin-eof", "serve"])).serveOptions, [
    { stopOnStdinEof: true },
  ]);
  assert.deepEqual((await run(["serve"])).serveOptions, [{}]);
});
