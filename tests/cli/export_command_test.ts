/**
 * `contactd export` through the command line: options, output, errors, permissions given up.
 */
import assert from "node:assert/strict";
import { type CliIo, READ_ONLY_REVOKED, runCli } from "../../lib/cli/cli.ts";
import { formatRecord } from "../../lib/storage/backup.ts";
import type { StorageFs } from "../../lib/storage/file_system.ts";
import { READ_CHUNK_BYTES } from "../../lib/common/line_reader.ts";
import { MemoryFs } from "../support/memory_fs.ts";
import { fakeCliIo } from "./_cli_io.ts";

const RECORDS = [
  formatRecord({
    ts: "2026-11-20T10:00:00Z",
    id: "aaaa1111",
    name: "Ann",
    contact: "=1+1",
    message: "Hi, there",
    ip: "203.0.113.7",
    messenger_ok: true,
    messenger_error: null,
  }),
  JSON.stringify({ ts: "2026-11-21T10:00:00Z", id: "bbbb2222", form: "sales", name: "Bo" }) + "\n",
].join("");

/** Runs the command line with `files` as the only readable files (read through `fs`). */
async function cli(args: string[], files: Record<string, string | Error>) {
  let revoked: string[] = [];
  const memory = new MemoryFs();
  for (const [path, file] of Object.entries(files)) {
    if (typeof file === "string") memory.writeText(path, file);
  }
  const fs: StorageFs = {
    open: (path, options) => {
      const file = files[path];
      if (file instanceof Error) return Promise.reject(file);
      return revoked.length === 0
        ? Promise.reject(new Error("read before the permissions were given up"))
        : memory.open(path, options);
    },
    lstat: (path) => memory.lstat(path),
    rename: (from, to) => memory.rename(from, to),
    remove: (path) => memory.remove(path),
  };
  const fake = fakeCliIo({
    env: (name) => name === "MESSAGES_FILE" ? "data/messages.jsonl" : undefined,
  });
  revoked = fake.revoked;
  const { out, err } = fake;
  // The export reads through `fs` (lib/cli/export_command.ts ExportIo), given with the rest.
  const code = await runCli(args, { ...fake.io, fs } as CliIo);
  const stdout = out.map((line) => `${line}\n`).join("");
  return { code, stdout, err, revoked, lines: out.length };
}

Deno.test("contactd export prints the backup file's records as they are, the count on stderr, after giving up write, net and run", async () => {
  const { code, stdout, err, revoked } = await cli(["export"], {
    "data/messages.jsonl": RECORDS + '{"ts":"torn',
  });
  assert.equal(code, 0);
  assert.equal(stdout, RECORDS);
  assert.deepEqual(err, ["contactd export: 2 record(s) from data/messages.jsonl"]);
  assert.deepEqual(revoked, [...READ_ONLY_REVOKED]);
});

Deno.test("contactd export --format csv --since --form writes CRLF rows of the chosen records", async () => {
  const files = { "data/messages.jsonl": RECORDS + "damaged\n" };
  const csv = await cli(["export", "--format", "csv"], files);
  assert.equal(csv.code, 0);
  const lines = csv.stdout.split("\r\n");
  assert.equal(lines.length, 4); // header, two rows, the empty rest after the last CRLF
  assert.equal(
    lines[1],
    `2026-11-20T10:00:00Z,aaaa1111,default,Ann,'=1+1,"Hi, there",` +
      "203.0.113.7,true,",
  );
  assert.deepEqual(csv.err, [
    "contactd export: 2 record(s) from data/messages.jsonl; 1 damaged line(s) skipped",
  ]);
  const sales = await cli(["export", "--form", "sales"], files);
  assert.deepEqual(sales.stdout.trimEnd().split("\n").map((l) => JSON.parse(l).id), ["bbbb2222"]);
  const since = await cli(["export", "--since", "2026-11-21"], files);
  assert.deepEqual(since.stdout.trimEnd().split("\n").map((l) => JSON.parse(l).id), ["bbbb2222"]);
  const none = await cli(["export", "--since", "2027-01-01"], files);
  assert.equal(none.stdout, "");
  assert.deepEqual(none.err, [
    "contactd export: 0 record(s) from data/messages.jsonl; 1 damaged line(s) skipped",
  ]);
});

Deno.test("contactd export fails in one line for a missing, refused or forbidden backup file (exit 1)", async () => {
  const cases: Array<[string | Error | undefined, RegExp]> = [
    [undefined, /cannot read data\/messages\.jsonl: no such file \(nothing received yet/],
    [new Deno.errors.PermissionDenied("x"), /the system refused access: run it as the user/],
    [
      new Deno.errors.NotCapable("x"),
      /not permitted: this contactd may read only the MESSAGES_FILE/,
    ],
  ];
  for (const [file, pattern] of cases) {
    const files: Record<string, string | Error> = file === undefined
      ? {}
      : { "data/messages.jsonl": file };
    const { code, stdout, err } = await cli(["export"], files);
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.equal(err.length, 1);
    assert.match(err[0]!, /^contactd export: /);
    assert.match(err[0]!, pattern);
  }
});

Deno.test("contactd export refuses bad options with a usage error (exit 2), and other commands refuse export's options", async () => {
  for (
    const args of [
      ["export", "--since", "last week"],
      ["export", "--since", "2026-11-01T09:00:00"],
      ["export", "--format", "xlsx"],
      ["export", "--form", "Sales"],
      ["export", "--form", ""],
      ["pending", "--since", "2026-11-01"],
      ["check", "--format", "csv"],
    ]
  ) {
    const { code, err, revoked } = await cli(args, {});
    assert.equal(code, 2, args.join(" "));
    assert.equal(err.length, 1);
    assert.match(err[0]!, /^contactd: --(since|format|form) .*\(see contactd --help\)$/);
    assert.deepEqual(revoked, []);
  }
});

Deno.test("--help shows export's usage and options", async () => {
  const { code, stdout } = await cli(["export", "--help"], {});
  assert.equal(code, 0);
  assert.match(stdout, /contactd export \[--since DATE\] \[--form ID\] \[--format jsonl\|csv\]/);
  assert.match(stdout, /^ {2}export {2,}print the backup file's records/m);
});

Deno.test("contactd export streams a backup file of many reads to stdout in batches, the same bytes as the file", async () => {
  const many = Array.from({ length: 3000 }, (_, i) => RECORDS.replaceAll("aaaa1111", `a${i}`))
    .join("");
  assert.ok(many.length > 8 * READ_CHUNK_BYTES);
  const { code, stdout, err, lines } = await cli(["export"], { "data/messages.jsonl": many });
  assert.equal(code, 0);
  assert.equal(stdout, many);
  assert.ok(lines > 1 && lines < 6000 / 10, `${lines} writes for 6000 records`);
  assert.deepEqual(err, ["contactd export: 6000 record(s) from data/messages.jsonl"]);
});

Deno.test("contactd export --format csv starts with one UTF-8 byte-order mark, before the header; --no-bom leaves it out", async () => {
  const files = { "data/messages.jsonl": RECORDS };
  const csv = await cli(["export", "--format", "csv"], files);
  assert.equal(csv.code, 0);
  assert.ok(csv.stdout.startsWith("\uFEFFreceived_at,") || csv.stdout.startsWith("\uFEFFts,"));
  assert.equal(csv.stdout.split("\uFEFF").length, 2, "one mark, at the start");
  const plain = await cli(["export", "--format", "csv", "--no-bom"], files);
  assert.equal(plain.code, 0);
  assert.equal(plain.stdout, csv.stdout.slice(1));
  // JSON lines are the file's own bytes: no mark.
  const jsonl = await cli(["export"], files);
  assert.ok(!jsonl.stdout.includes("\uFEFF"));
  for (const args of [["export", "--no-bom"], ["check", "--no-bom"]]) {
    const refused = await cli(args, {});
    assert.equal(refused.code, 2, args.join(" "));
    assert.match(refused.err[0]!, /^contactd: --no-bom is for (--format csv|export) only/);
  }
  const { stdout } = await cli(["export", "--help"], {});
  assert.match(
    stdout,
    /^ {2}--no-bom {2,}export --format csv: leave out the UTF-8 byte-order mark/m,
  );
});
