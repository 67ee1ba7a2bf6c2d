/**
 * The command line: parsing, --help, --version, --env-file, dispatch.
 */
import assert from "node:assert/strict";
import { fakeCliIo } from "./_cli_io.ts";
import {
  BUILT_DEFAULT_FLAG,
  COMMANDS,
  helpText,
  LAUNCHED_BY_TASK_FLAG,
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
  mode: number | null = 0o100600,
) {
  const served: Settings[] = [];
  const serveOptions: ServeOptions[] = [];
  const { io, out, err } = fakeCliIo({
    env: (name) => env[name],
    readTextFile: (path) =>
      Object.hasOwn(files, path)
        ? Promise.resolve(files[path]!)
        : Promise.reject(new Deno.errors.NotCapable(`Requires read access to "${path}"`)),
    fileMode: () => Promise.resolve(mode),
    serve: (settings, options) => {
      served.push(settings);
      serveOptions.push(options);
      return Promise.resolve(0);
    },
  });
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

Deno.test("an env file a binary may not read stops the command with one line naming the setting that decides it, exit 1", async () => {
  const { code, err, served } = await run(["check", "--env-file", "/root/other"]);
  assert.equal(code, 1);
  assert.deepEqual(served, []);
  assert.deepEqual(err, [
    "contactd check: cannot read env file /root/other: not permitted: this binary may read only " +
    "the env file it was built for (CONTACTD_ENV_FILE at deno task compile, default " +
    "/etc/contactd/env; docs/deployment.md)",
  ]);
});

Deno.test("an env file that starts with a UTF-8 byte-order mark sets its first setting", async () => {
  const file = "\uFEFFMESSENGER_BOT_TOKEN=1:abc\nMESSENGER_CHAT_ID=7\n";
  const { served, err } = await run(["--env-file", "/e"], {}, { "/e": file });
  assert.deepEqual(served, [{ MESSENGER_BOT_TOKEN: "1:abc", MESSENGER_CHAT_ID: "7" }]);
  assert.deepEqual(err, []);
});

const SKIPPING = "# fine\nMESSENGER_CHATID=-100123\nAA:BB-secret-no-equals\n" +
  "messenger_bot_token=1:zz\nPATH=/usr/bin\nexport PORT=9000\nCHALLENGE_KEY=k\n";

Deno.test("a command warns once per skipped env-file line, in plain lines with the line number and closest setting, never the value", async () => {
  const { code, err, served } = await run(
    ["send-test", "--env-file", "/e"],
    {},
    { "/e": SKIPPING },
  );
  assert.equal(code, 1); // no token: the command itself fails after the warnings
  assert.deepEqual(served, []);
  assert.deepEqual(err.slice(0, 4), [
    "contactd send-test: /e line 2: MESSENGER_CHATID is not a contactd setting " +
    "(did you mean MESSENGER_CHAT_ID?); skipped",
    'contactd send-test: /e line 3: no "=" (settings are NAME=value lines); skipped',
    "contactd send-test: /e line 4: messenger_bot_token is not a contactd setting " +
    "(did you mean MESSENGER_BOT_TOKEN?); skipped",
    "contactd send-test: /e line 7: CHALLENGE_KEY is not a contactd setting " +
    "(did you mean CHALLENGE?); skipped",
  ]);
  assert.ok(!err.join("\n").includes("secret"));
  assert.ok(!err.join("\n").includes("-100123"));
  assert.ok(!err.join("\n").includes("PATH"), "a name that is not contactd's is not warned about");
});

Deno.test("a mistyped FORM_<ID>_ name in the env file is warned about once, naming the form's setting, never the value", async () => {
  const file = "FORMS=client-b\nFORM_CLIENTB_CHAT_ID=-100222\n";
  const { err } = await run(["send-test", "--env-file", "/e"], {}, { "/e": file });
  const warned = err.filter((line) => line.includes("FORM_CLIENTB_CHAT_ID"));
  assert.deepEqual(warned, [
    "contactd send-test: /e line 2: FORM_CLIENTB_CHAT_ID is not a contactd setting " +
    "(did you mean FORM_CLIENT_B_CHAT_ID?); skipped",
  ]);
  assert.ok(!err.join("\n").includes("-100222"));
  // FORMS from the process environment counts too.
  const fromProcess = await run(["send-test", "--env-file", "/e"], { FORMS: "clientb" }, {
    "/e": "FORM_CLIENTB_CHAT_ID=-100222\n",
  });
  assert.equal(fromProcess.err.filter((line) => line.includes("FORM_CLIENTB")).length, 0);
});

Deno.test("a form's setting spelt otherwise in the environment (FORM_SITEB_CHAT_ID for site-b) is warned about by check and at start, never the value", async () => {
  const env: Record<string, string> = {
    FORMS: "site-b,sales",
    FORM_SITEB_CHAT_ID: "-100222",
    "FORM_SITE-B_TITLE": "Site B",
    FORM_SALES_CHATID: "-100333",
  };
  const check = await run(["check"], env as Settings);
  assert.deepEqual(check.err.filter((line) => line.includes("is not a contactd setting")), [
    "contactd check: the environment's FORM_SITEB_CHAT_ID is not a contactd setting " +
    "(did you mean FORM_SITE_B_CHAT_ID?); ignored",
    "contactd check: the environment's FORM_SITE-B_TITLE is not a contactd setting " +
    "(did you mean FORM_SITE_B_TITLE?); ignored",
    "contactd check: the environment's FORM_SALES_CHATID is not a contactd setting " +
    "(did you mean FORM_SALES_CHAT_ID?); ignored",
  ]);
  const serve = await run(["serve"], env as Settings);
  const lines = serve.err.map((line) => JSON.parse(line));
  assert.deepEqual(
    lines.filter((line) => line.event === "env_setting_ignored").map((
      { level, name, closest },
    ) => ({
      level,
      name,
      closest,
    }))[0],
    { level: "warn", name: "FORM_SITEB_CHAT_ID", closest: "FORM_SITE_B_CHAT_ID" },
  );
  for (const text of [...check.err, ...serve.err]) assert.ok(!/-100222|-100333|Site B/.test(text));
  // Spelt right, nothing is said.
  const right = await run(["check"], { FORMS: "site-b", FORM_SITE_B_CHAT_ID: "-100222" });
  assert.ok(!right.err.some((line) => line.includes("is not a contactd setting")));
});

Deno.test("serve warns about skipped env-file lines as JSON log lines (env_file_line_skipped)", async () => {
  const { err, served } = await run(["serve", "--env-file", "/e"], {}, { "/e": SKIPPING });
  assert.deepEqual(served, [{ PORT: "9000" }]);
  const lines = err.map((line) => JSON.parse(line));
  assert.deepEqual(
    lines.map(({ event, level, line, problem, name, closest }) => ({
      event,
      level,
      line,
      problem,
      name,
      closest,
    })),
    [
      {
        event: "env_file_line_skipped",
        level: "warn",
        line: 2,
        problem: "unknown_name",
        name: "MESSENGER_CHATID",
        closest: "MESSENGER_CHAT_ID",
      },
      {
        event: "env_file_line_skipped",
        level: "warn",
        line: 3,
        problem: "no_equals",
        name: undefined,
        closest: undefined,
      },
      {
        event: "env_file_line_skipped",
        level: "warn",
        line: 4,
        problem: "unknown_name",
        name: "messenger_bot_token",
        closest: "MESSENGER_BOT_TOKEN",
      },
      {
        event: "env_file_line_skipped",
        level: "warn",
        line: 7,
        problem: "unknown_name",
        name: "CHALLENGE_KEY",
        closest: "CHALLENGE",
      },
    ],
  );
  assert.ok(!err.join("\n").includes("secret"));
});

Deno.test("an env file others may read is warned about (chmod 600), as the backup file is", async () => {
  const loose = await run(["check", "--env-file", "/e"], {}, { "/e": "PORT=1\n" }, 0o100644);
  assert.ok(
    loose.err.includes(
      "contactd check: /e is readable by others (mode 644): chmod 600 /e, it holds the bot token",
    ),
    loose.err.join("\n"),
  );
  const served = await run(["serve", "--env-file", "/e"], {}, { "/e": "PORT=1\n" }, 0o100640);
  assert.deepEqual(served.err.map((line) => JSON.parse(line).event), ["file_mode"]);
  assert.equal(JSON.parse(served.err[0]!).mode, "640");
  const tight = await run(["serve", "--env-file", "/e"], {}, { "/e": "PORT=1\n" }, 0o100600);
  assert.deepEqual(tight.err, []);
});

Deno.test("run by deno task contactd, help and usage errors name deno task and .env, not --env-file", async () => {
  const { out } = await run(["--help", LAUNCHED_BY_TASK_FLAG]);
  const text = out.join("\n");
  assert.match(text, /^Usage: deno task contactd \[command\]/m);
  assert.match(text, /\.env in the checkout/);
  assert.doesNotMatch(text, /--env-file/);
  const usage = await run(["bogus", LAUNCHED_BY_TASK_FLAG]);
  assert.equal(usage.code, 2);
  assert.match(usage.err[0]!, /\(see deno task contactd --help\)$/);
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
    if (command === "forget" || command === "unblock") continue; // they need an argument
    // export's options have a default format.
    const options = command === "export" ? { export: { format: "jsonl" } } : {};
    assert.deepEqual(parseCommandLine([command]), { kind: "run", command, ...options });
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

Deno.test("the README stays a guide: at most 320 lines (the reference lives in docs/)", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const lines = readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0);
  assert.ok(lines <= 320, `README.md has ${lines} lines`);
});

Deno.test("the README documents every command and the binary's env-file option", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  for (const command of Object.keys(COMMANDS)) {
    assert.match(readme, new RegExp(`contactd ${command}`));
  }
  assert.match(readme, /--env-file PATH/);
});

Deno.test("the settings tables (docs/deployment.md), the README, .env.example and --help name every setting, with the same defaults", async () => {
  const readme = await Deno.readTextFile(`${ROOT}README.md`);
  const guide = await Deno.readTextFile(`${ROOT}docs/deployment.md`);
  const example = await Deno.readTextFile(`${ROOT}.env.example`);
  const help = helpText("1.2.3");
  // The README names each setting and links the tables.
  assert.match(readme, /\(docs\/deployment\.md#settings\)/);
  assert.match(guide, /^## Settings$/m);
  // Table rows look like: | `NAME` | `default` or unset | meaning |
  const rows = new Map<string, string>();
  for (const match of guide.matchAll(/^\| `([A-Z_]+)` +\| ([^|]*?) +\|/gm)) {
    rows.set(match[1]!, match[2]!);
  }
  const defaults: Readonly<Record<string, string>> = DEFAULTS;
  for (const name of SETTING_NAMES) {
    const fallback = Object.hasOwn(defaults, name) ? defaults[name]! : "";
    assert.equal(rows.get(name), fallback === "" ? "unset" : `\`${fallback}\``, `table ${name}`);
    assert.ok(readme.includes(`\`${name}\``), `README does not name ${name}`);
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

Deno.test("the repository carries an OSI licence (LICENSE, MIT), and CONTRIBUTING says why", async () => {
  const licence = await Deno.readTextFile(`${ROOT}LICENSE`);
  assert.match(licence, /^MIT License\n\nCopyright \(c\) \d{4} /);
  assert.match(licence, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
  const contributing = await Deno.readTextFile(`${ROOT}CONTRIBUTING.md`);
  assert.match(contributing, /^## Licence\n\ncontactd is under the \[MIT licence\]\(LICENSE\)/m);
  assert.match(contributing, /Decided, for three reasons/);
});

Deno.test("the docs say what is downloaded and when, and how to trust a TLS-intercepting proxy; the README links it", async () => {
  const readme = await Deno.readTextFile(`${ROOT}docs/deployment.md`);
  assert.match(
    await Deno.readTextFile(`${ROOT}README.md`),
    /\(docs\/deployment\.md#what-is-downloaded-and-when\)/,
  );
  assert.doesNotMatch(readme, /no dependencies beyond Deno/);
  assert.match(readme, /^## What is downloaded, and when$/m);
  assert.match(readme, /downloads one npm package into Deno's cache, `altcha-lib`/);
  assert.match(readme, /even with `CHALLENGE=none`/);
  assert.match(readme, /`export DENO_CERT=\/path\/to\/proxy-ca\.pem`/);
  assert.match(readme, /`export NODE_EXTRA_CA_CERTS=\/path\/to\/proxy-ca\.pem`/);
  // The package it names is the one deno.json pins.
  const { imports } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
  assert.ok(Object.values(imports).some((spec) => String(spec).startsWith("npm:altcha-lib@")));
});
