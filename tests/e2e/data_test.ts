/**
 * Issue 22 end to end: the owner's data commands against a real service's files, run as an
 * operator runs them (`deno task contactd …`, with the flags the launcher derives).
 */
import assert from "node:assert/strict";
import { runContactdTask, serviceCommand, withService } from "../support/service.ts";
import { csvObjects } from "../support/csv.ts";

const HOSTILE = [
  { name: "Ann", contact: "ann@example.org", message: "Hello" },
  {
    name: '=HYPERLINK("http://evil")',
    contact: "+1 555 0100",
    message: 'a "quote", a comma\nand a line',
  },
  { name: "@Bo", contact: "-x", message: "Grüße \u{1F600}" },
];

/** The database beside `file` and its log, as Latin-1: a sender's words would show in it. */
async function databaseText(file: string): Promise<string> {
  const decoder = new TextDecoder("latin1");
  let text = "";
  for (const path of [`${file}.db`, `${file}.db-wal`]) {
    text += await Deno.readFile(path).then((bytes) => decoder.decode(bytes), () => "");
  }
  return text;
}

Deno.test("e2e: contactd export round trip while the service runs: jsonl is the file's lines, csv gives every value back (formulas neutralised), ids match the log", async () => {
  await withService({}, async (service) => {
    for (const body of HOSTILE) assert.equal((await service.post(body)).status, 200);
    const file = await Deno.readTextFile(service.file);
    const env = { MESSAGES_FILE: service.file };

    const jsonl = await runContactdTask(["export"], service.dir, env);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    assert.equal(jsonl.stdout, file);
    assert.match(jsonl.stderr, /contactd export: 3 record\(s\) from /);
    const ids = service.logs().filter((line) => line.event === "contact").map((line) => line.id);
    assert.deepEqual(jsonl.stdout.trimEnd().split("\n").map((line) => JSON.parse(line).id), ids);

    const csv = await runContactdTask(["export", "--format", "csv"], service.dir, env);
    assert.equal(csv.code, 0, csv.stderr);
    const rows = csvObjects(csv.stdout);
    assert.equal(rows.length, 3);
    const undo = (value: string) => value.replace(/^'(?=[=+\-@\t\r])/, "");
    rows.forEach((row, i) => {
      assert.equal(row.id, ids[i]);
      assert.equal(row.form, "default");
      for (const key of ["name", "contact", "message"] as const) {
        assert.equal(undo(row[key]!), HOSTILE[i]![key], `${key} of row ${i}`);
        assert.doesNotMatch(row[key]!, /^[=+\-@]/, `${key} of row ${i} starts a formula`);
      }
    });

    const later = await runContactdTask(["export", "--since", "2999-01-01"], service.dir, env);
    assert.equal(later.code, 0, later.stderr);
    assert.equal(later.stdout, "");
    // The service is not disturbed: it keeps appending.
    assert.equal((await service.post({ message: "after the export" })).status, 200);
    assert.equal((await service.records()).length, 4);
  });
});

Deno.test("e2e: contactd export of a missing backup file fails in one line, exit 1, no trace", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  try {
    const result = await runContactdTask(["export"], dir, {
      MESSAGES_FILE: `${dir}/messages.jsonl`,
    });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    assert.equal(
      result.stderr,
      `contactd export: cannot read ${dir}/messages.jsonl: no such file (nothing received yet, ` +
        "or MESSAGES_FILE names another file)\n",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("e2e: RETENTION removes older records at start, keeps the file's mode, and the service keeps appending to the new file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${dir}/messages.jsonl`;
  const day = 86_400_000;
  const at = (days: number) => new Date(Date.now() - days * day).toISOString().slice(0, 19) + "Z";
  const seeded = [
    JSON.stringify({ ts: at(400), name: "Old", message: "no id, long ago" }),
    JSON.stringify({ ts: at(91), id: "oldid001", name: "Old", message: "just too old" }),
    "a damaged line",
    JSON.stringify({ ts: at(89), id: "keptid01", name: "Kept", message: "young enough" }),
  ];
  await Deno.writeTextFile(file, seeded.map((line) => `${line}\n`).join(""), { mode: 0o640 });
  await Deno.chmod(file, 0o640);
  try {
    await withService({ MESSAGES_FILE: file, RETENTION: "90d" }, async (service) => {
      const retention = service.logs().find((line) => line.event === "retention");
      assert.deepEqual(retention, { ...retention, removed: 2, kept: 2 });
      assert.equal((await service.post({ message: "after retention" })).status, 200);
      const lines = (await Deno.readTextFile(file)).trimEnd().split("\n");
      assert.deepEqual(lines.slice(0, 2), [seeded[2], seeded[3]]);
      assert.equal(JSON.parse(lines[2]!).message, "after retention");
      assert.equal(lines.length, 3);
      assert.equal((await Deno.stat(file)).mode! & 0o777, 0o640);
      // Nothing of the rewrite is left beside it, and the log holds counts, never a record.
      assert.equal(await Deno.stat(`${file}.rewrite`).then(() => true, () => false), false);
      assert.ok(
        !service.stdout.concat(service.stderr).some((line) => /young enough|Old/.test(line)),
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Waits until `done()` holds, polling; fails after `ms` naming `what`. */
async function until(done: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

Deno.test("e2e: forget --address while the service runs under a steady stream: the right records gone (every form of the address), nothing appended lost, every line whole, the service keeps writing", async () => {
  await withService({}, async (service) => {
    const target = "2001:db8::77";
    for (const ip of ["2001:db8::77", "2001:0db8:0:0:0:0:0:77", "10.8.0.1"]) {
      assert.equal((await service.post({ message: `before from ${ip}` }, ip)).status, 200);
    }
    const env = { MESSAGES_FILE: service.file };
    const dry = await runContactdTask(
      ["forget", "--address", target, "--dry-run"],
      service.dir,
      env,
    );
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /^would remove 2 record\(s\) .* \(dry run: nothing changed\)$/m);
    assert.equal((await service.records()).length, 3);

    // A steady stream from other addresses while forget runs.
    let streaming = true;
    const sent: string[] = [];
    const stream = (async () => {
      for (let i = 0; streaming || i < 10; i++) {
        const message = `stream ${i}`;
        const response = await service.post({ message }, `10.9.${i >> 8}.${i & 255}`);
        assert.equal(response.status, 200);
        sent.push(message);
      }
    })();
    const forget = await runContactdTask(
      ["forget", "--address", `[${target.toUpperCase()}]`],
      service.dir,
      env,
    );
    streaming = false;
    await stream;
    assert.equal(forget.code, 0, forget.stderr);
    assert.match(forget.stdout, /^removed 2 record\(s\) from .* and 0 pending message\(s\)/m);
    assert.match(forget.stdout, /Telegram lets the bot delete its messages for 48 hours/);
    assert.equal((await service.post({ message: "after forget" }, "10.8.0.2")).status, 200);

    const text = await Deno.readTextFile(service.file);
    assert.ok(text.endsWith("\n"));
    const messages = text.trimEnd().split("\n").map((line) => JSON.parse(line).message);
    assert.deepEqual(messages, ["before from 10.8.0.1", ...sent, "after forget"]);
    const events = service.logs().filter((line) => line.event === "forget");
    assert.deepEqual(
      events.map(({ by, dry_run, records, pending }) => ({ by, dry_run, records, pending })),
      [
        { by: "address", dry_run: true, records: 2, pending: 0 },
        { by: "address", dry_run: false, records: 2, pending: 0 },
      ],
    );
    assert.ok(!JSON.stringify(service.logs()).includes("db8"), "the log names no address");
    for (const suffix of [".forget", ".forget.answer", ".rewrite"]) {
      assert.equal(await Deno.stat(service.file + suffix).then(() => true, () => false), false);
    }
  });
});

Deno.test("e2e: forget --id of a message still pending: it is never delivered afterwards, the others are", async () => {
  await withService({ MESSENGER_TIMEOUT_MS: "1000" }, async (service, fake) => {
    await fake.outage("html");
    const ids: string[] = [];
    for (const message of ["forget me", "keep me"]) {
      const response = await service.post({ message }, "10.7.0.1");
      assert.equal(response.status, 502);
      ids.push(String(service.logs().filter((line) => line.event === "contact").at(-1)!.id));
    }
    const forget = await runContactdTask(["forget", "--id", `#${ids[0]}`], service.dir, {
      MESSAGES_FILE: service.file,
    });
    assert.equal(forget.code, 0, forget.stderr);
    assert.match(forget.stdout, /^removed 1 record\(s\) from .* and 1 pending message\(s\)/m);
    await fake.outage(false);
    await until(() => fake.delivered.some((text) => text.endsWith("keep me")), 30_000, "keep me");
    assert.ok(!fake.delivered.some((text) => text.includes("forget me")));
    assert.deepEqual((await service.records()).map((record) => record.message), ["keep me"]);
    assert.doesNotMatch(await databaseText(service.file), /forget me/);
  });
});

Deno.test("e2e: forget with the service stopped does it itself under the lock; the next start neither delivers nor records the forgotten", async () => {
  const fakeDir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${fakeDir}/messages.jsonl`;
  try {
    await withService(
      { MESSAGES_FILE: file, MESSENGER_TIMEOUT_MS: "1000" },
      async (service, fake) => {
        await fake.outage("html");
        for (const contact of ["gone@example.org", "GONE@example.org", "stay@example.org"]) {
          assert.equal((await service.post({ message: `from ${contact}`, contact })).status, 502);
        }
      },
    );
    const forget = await runContactdTask(["forget", "--contact", "gone@example.org"], fakeDir, {
      MESSAGES_FILE: file,
    });
    assert.equal(forget.code, 0, forget.stderr);
    assert.match(forget.stdout, /^removed 2 record\(s\) from .* and 2 pending message\(s\)/m);
    assert.doesNotMatch(await Deno.readTextFile(file), /gone@/i);
    assert.doesNotMatch(await databaseText(file), /gone@/i);
    await withService({ MESSAGES_FILE: file }, async (service, fake) => {
      await until(() => fake.delivered.length >= 1, 30_000, "the one left delivered");
      assert.equal(fake.delivered.length, 1);
      assert.match(fake.delivered[0]!, /from stay@example\.org/);
      assert.deepEqual((await service.records()).map((r) => r.contact), ["stay@example.org"]);
    });
  } finally {
    await Deno.remove(fakeDir, { recursive: true });
  }
});

Deno.test("e2e: export and forget run with a binary's flags (the service's, as deno task compile bakes them in) while the service runs", async () => {
  await withService({}, async (service) => {
    for (const ip of ["10.6.0.1", "10.6.0.2"]) {
      assert.equal((await service.post({ message: `from ${ip}` }, ip)).status, 200);
    }
    const settings = { MESSAGES_FILE: service.file };
    const binary = (...args: string[]) => {
      const { args: run, env } = serviceCommand(settings);
      return new Deno.Command(Deno.execPath(), {
        args: [...run, ...args],
        cwd: service.dir,
        clearEnv: true,
        env,
        stdin: "null",
      }).output();
    };
    const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    const exported = await binary("export", "--format", "csv");
    assert.equal(exported.code, 0, decode(exported.stderr));
    assert.deepEqual(csvObjects(decode(exported.stdout)).map((row) => row.ip), [
      "10.6.0.1",
      "10.6.0.2",
    ]);
    const forgot = await binary("forget", "--address", "10.6.0.1");
    assert.equal(forgot.code, 0, decode(forgot.stderr));
    assert.match(decode(forgot.stdout), /^removed 1 record\(s\)/);
    assert.deepEqual((await service.records()).map((record) => record.ip), ["10.6.0.2"]);
  });
});
