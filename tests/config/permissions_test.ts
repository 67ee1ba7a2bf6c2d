import assert from "node:assert/strict";
import { ConfigError, parseConfig, SETTING_NAMES } from "../../lib/config/config.ts";
import {
  blockedFlags,
  ENV_NAMES,
  exportFlags,
  fileOpenFailure,
  forgetFlags,
  listenFailure,
  pendingFlags,
  permissionGaps,
  permissionLine,
  serviceFlags,
} from "../../lib/config/permissions.ts";
import { callBotApi } from "../../lib/bot/api.ts";
import { mergeSettings } from "../../lib/config/settings.ts";
import { stateFiles } from "../../lib/common/state_files.ts";
import { denoFs, openNoFollow } from "../../lib/storage/file_system.ts";

/** The files the service keeps beside the backup file (lib/common/state_files.ts). */
const STATE = stateFiles("messages.jsonl").join(",");
/** Read also covers their directory (synced after a rename). */
const READ = `${STATE},.`;

Deno.test("serviceFlags grants the listen address, the API host:port, one file and the settings", () => {
  const flags = serviceFlags(parseConfig({}));
  assert.deepEqual(flags, [
    "--no-prompt",
    "--allow-net=127.0.0.1:8787,api.telegram.org:443",
    `--allow-read=${READ}`,
    `--allow-write=${STATE}`,
    `--allow-env=${ENV_NAMES}`,
  ]);
});

Deno.test("serviceFlags lets the service read the example page only with SERVE_EXAMPLE=1", async () => {
  const page = new URL("../../examples/contact.html", import.meta.url).pathname;
  assert.ok((await Deno.stat(page)).isFile);
  const serving = serviceFlags(parseConfig({ SERVE_EXAMPLE: "1" }));
  assert.ok(serving.includes(`--allow-read=${READ},${page}`));
  assert.ok(serving.includes(`--allow-write=${STATE}`));
  assert.ok(!serviceFlags(parseConfig({})).some((flag) => flag.includes("contact.html")));
});

Deno.test("serviceFlags follows the configured values, IPv6 in brackets", () => {
  const flags = serviceFlags(parseConfig({
    HOST: "::1",
    PORT: "9000",
    MESSENGER_API_URL: "http://127.0.0.1:4321",
    MESSAGES_FILE: "/var/lib/contactd/messages.jsonl",
  }));
  assert.ok(flags.includes("--allow-net=[::1]:9000,127.0.0.1:4321"));
  const file = "/var/lib/contactd/messages.jsonl";
  assert.ok(flags.includes(`--allow-write=${stateFiles(file).join(",")}`));
  assert.ok(flags.includes(`--allow-read=${stateFiles(file).join(",")},/var/lib/contactd`));
});

Deno.test("serviceFlags never grants unscoped or dangerous permissions", () => {
  for (const flag of serviceFlags(parseConfig({}))) {
    assert.match(flag, /^--(no-prompt|allow-(net|read|write|env)=.+)$/);
  }
});

Deno.test("mergeSettings lets the process environment win over .env and ignores other keys", () => {
  const merged = mergeSettings(
    { PORT: "1111", HOST: "0.0.0.0", PATH: "/evil", ["__proto__"]: "x" },
    { PORT: "2222", MESSAGES_FILE: undefined },
  );
  assert.deepEqual(merged, { PORT: "2222", HOST: "0.0.0.0" });
});

Deno.test("serviceFlags grants reading one env file, and refuses a path that would split the list", () => {
  const flags = serviceFlags(parseConfig({}), { envFile: "/etc/contactd/env" });
  assert.ok(flags.includes(`--allow-read=${READ},/etc/contactd/env`));
  assert.ok(flags.includes(`--allow-write=${STATE}`));
  for (const envFile of ["", "/etc/a,/etc/shadow", "/etc/a\0"]) {
    assert.throws(() => serviceFlags(parseConfig({}), { envFile }), RangeError);
  }
});

Deno.test("permissionGaps names each setting that asks for more than was granted", () => {
  const config = parseConfig({
    PORT: "9000",
    MESSENGER_API_URL: "http://[::1]:4321",
    MESSAGES_FILE: "/srv/m.jsonl",
  });
  const asked: unknown[] = [];
  assert.deepEqual(
    permissionGaps(config, (permission) => {
      asked.push(permission);
      return false;
    }).map((gap) => gap.setting),
    ["PORT", "MESSENGER_API_URL", "MESSAGES_FILE"],
  );
  assert.deepEqual(asked, [
    { name: "net", host: "127.0.0.1:9000" },
    { name: "net", host: "[::1]:4321" },
    { name: "write", path: "/srv/m.jsonl" },
  ]);
  assert.deepEqual(permissionGaps(config, () => true), []);
});

Deno.test("permissionGaps tells a binary asked for SERVE_EXAMPLE to unset it, not to rebuild", () => {
  const gaps = permissionGaps(
    parseConfig({ SERVE_EXAMPLE: "1" }),
    (permission) => permission.name !== "read",
  );
  assert.deepEqual(gaps.map((gap) => gap.setting), ["SERVE_EXAMPLE"]);
  assert.match(gaps[0]!.message, /unset it, or try the form with deno task start/);
  assert.doesNotMatch(gaps[0]!.message, /deno task compile/);
  const port = permissionGaps(parseConfig({ PORT: "9000" }), (p) => p.name !== "net");
  assert.match(
    port[0]!.message,
    /listen on 127\.0\.0\.1:9000 \(--allow-net=127\.0\.0\.1:9000\); build with this setting/,
  );
});

Deno.test("a comma (also %2c) or other list-breaking character in MESSENGER_API_URL is refused, naming the setting", () => {
  for (
    const url of [
      "http://a%2cb/",
      "http://a%2Cb:8080",
      "http://a,b/",
      "https://bot;api.example",
      "http://a%00b/",
      "http://a*b/",
    ]
  ) {
    let error: unknown;
    try {
      parseConfig({ MESSENGER_API_URL: url });
    } catch (caught) {
      error = caught;
    }
    assert.ok(error instanceof ConfigError, url);
    assert.equal(error.setting, "MESSENGER_API_URL");
    assert.ok(!error.message.includes("\n") && !error.message.includes(url), error.message);
  }
  for (const url of ["http://[::1]:4321", "https://bot-api.internal:8443", "http://127.0.0.1:9"]) {
    const flags = serviceFlags(parseConfig({ MESSENGER_API_URL: url }));
    assert.equal(flags[1]!.split(",").length, 2, flags[1]);
  }
});

Deno.test("permissionLine turns NotCapable into one line naming the flag to grant, and leaves other errors", () => {
  const env = permissionLine(
    new Deno.errors.NotCapable(
      'Requires env access to "MESSENGER_BOT_TOKEN", run again with the --allow-env flag',
    ),
  )!;
  assert.match(env, /^contactd: not permitted: .*grant --allow-env=MESSENGER_BOT_TOKEN,/);
  assert.ok(env.includes(SETTING_NAMES.join(",")));
  const net = permissionLine(
    new Deno.errors.NotCapable('Requires net access to "127.0.0.1:8787", run again with x\nmore'),
  )!;
  assert.match(net, /grant --allow-net=127\.0\.0\.1:8787 /);
  assert.ok(!net.includes("\n"));
  assert.match(
    permissionLine(new Deno.errors.PermissionDenied("Permission denied (os error 13)"))!,
    /^contactd: the system refused access: Permission denied/,
  );
  assert.equal(permissionLine(new Error("other")), undefined);
  assert.equal(permissionLine("text"), undefined);
});

Deno.test("a Bot API call refused by the permissions or by Deno's blocked ports says so, not just network error", async () => {
  const refusing = (error: Error): typeof fetch => () => Promise.reject(error);
  const options = { apiUrl: "http://127.0.0.1:6000", token: "1:abcdefghij", timeoutMs: 1000 };
  const blocked = await callBotApi(
    {
      ...options,
      fetch: refusing(new TypeError("Fetch failed: Requests to port 6000 are blocked")),
    },
    "getMe",
    {},
  );
  assert.deepEqual(blocked, {
    ok: false,
    error: "network error: port 6000 blocked by the runtime",
  });
  const denied = await callBotApi(
    {
      ...options,
      fetch: refusing(new Deno.errors.NotCapable('Requires net access to "127.0.0.1:6000"')),
    },
    "getMe",
    {},
  );
  assert.ok(!denied.ok);
  assert.match(denied.error, /^network error: not permitted \(grant --allow-net/);
});

Deno.test("a refused MESSAGES_FILE gets contactd's own advice, never Deno's (--allow-write, --allow-all)", () => {
  for (
    const message of [
      'Requires write access to "/srv/m.jsonl", run again with the --allow-write flag',
      'Requires write access to "/srv/m.jsonl", specify the required permissions during ' +
      "compilation using `deno compile --allow-write`",
      'Requires write access to "/srv/m.jsonl", or run again with --allow-all',
    ]
  ) {
    const fields = fileOpenFailure(new Deno.errors.NotCapable(message), "/srv/m.jsonl");
    assert.equal(fields.error, 'NotCapable: Requires write access to "/srv/m.jsonl"', message);
    assert.match(fields.hint!, /deno task start grants what MESSAGES_FILE names/);
    assert.match(fields.hint!, /deno task compile/);
    for (const text of Object.values(fields)) {
      assert.doesNotMatch(text, /--allow-|run again/, message);
    }
  }
  const denied = fileOpenFailure(new Deno.errors.PermissionDenied("Permission denied"), "/m");
  assert.match(denied.hint!, /owned by that user with mode 0600/);
  assert.deepEqual(fileOpenFailure(new Error("EIO"), "/m"), { error: "Error: EIO" });
  assert.doesNotMatch(
    permissionLine(
      new Deno.errors.NotCapable('Requires read access to "/x", run again with --allow-all'),
    )!,
    /--allow-all|run again/,
  );
});

Deno.test("listen_failed names the address, and says what to do when the port is taken", () => {
  const taken = listenFailure(
    new Deno.errors.AddrInUse("Address already in use (os error 98)"),
    "127.0.0.1",
    8787,
  );
  assert.deepEqual(taken, {
    address: "127.0.0.1:8787",
    error: "AddrInUse: Address already in use (os error 98)",
    hint: "another process listens on 127.0.0.1:8787 (another contactd?): stop it, or set PORT " +
      "to a free port",
  });
  assert.equal(listenFailure(new Deno.errors.AddrNotAvailable("x"), "::2", 1).address, "[::2]:1");
  assert.match(listenFailure(new Deno.errors.AddrNotAvailable("x"), "::2", 1).hint!, /set HOST/);
  assert.equal(listenFailure(new Error("odd"), "127.0.0.1", 1).hint, undefined);
});

Deno.test("exportFlags grant reading the backup file and the settings only: no write, no network, not the outbox", () => {
  assert.deepEqual(
    exportFlags(parseConfig({ MESSAGES_FILE: "/var/lib/contactd/messages.jsonl" })),
    [
      "--no-prompt",
      "--allow-read=/var/lib/contactd/messages.jsonl",
      `--allow-env=${ENV_NAMES}`,
    ],
  );
});

Deno.test("forgetFlags grant contactd's own files and their directory, and the settings: no network", () => {
  const file = "/var/lib/contactd/messages.jsonl";
  const flags = forgetFlags(parseConfig({ MESSAGES_FILE: file }));
  assert.deepEqual(flags, [
    "--no-prompt",
    `--allow-read=${stateFiles(file).join(",")},/var/lib/contactd`,
    `--allow-write=${stateFiles(file).join(",")}`,
    `--allow-env=${ENV_NAMES}`,
  ]);
  assert.ok(stateFiles(file).includes(`${file}.forget`));
  assert.ok(stateFiles(file).includes(`${file}.forget.answer`));
  assert.ok(stateFiles(file).includes(`${file}.rewrite`));
});

Deno.test("pendingFlags grant the database alone (reading its -wal and -shm), and the settings: no network, no other file", () => {
  const file = "/var/lib/contactd/messages.jsonl";
  assert.deepEqual(pendingFlags(parseConfig({ MESSAGES_FILE: file })), [
    "--no-prompt",
    `--allow-read=${file}.db,${file}.db-wal,${file}.db-shm`,
    `--allow-write=${file}.db`,
    `--allow-env=${ENV_NAMES}`,
  ]);
});

Deno.test("blockedFlags (blocked, unblock) grant the database alone (reading its -wal and -shm), and the settings: not the old block list file, no network", () => {
  const file = "/var/lib/contactd/messages.jsonl";
  assert.deepEqual(blockedFlags(parseConfig({ MESSAGES_FILE: file })), [
    "--no-prompt",
    `--allow-read=${file}.db,${file}.db-wal,${file}.db-shm`,
    `--allow-write=${file}.db`,
    `--allow-env=${ENV_NAMES}`,
  ]);
});

Deno.test("a state file that is a symbolic link is refused with a hint that says so, not 'make the directory writable'", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/real.jsonl`, "");
    await Deno.symlink(`${dir}/real.jsonl`, `${dir}/messages.jsonl`);
    const error = await openNoFollow(denoFs, `${dir}/messages.jsonl`, { read: true }).then(
      (file) => (file.close(), undefined),
      (error: unknown) => error,
    );
    assert.ok(error !== undefined, "the link was refused");
    const fields = fileOpenFailure(error, `${dir}/messages.jsonl`);
    assert.match(fields.hint!, /is a symbolic link .*contactd refuses links/);
    assert.doesNotMatch(fields.hint!, /writable|mode 0600/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
