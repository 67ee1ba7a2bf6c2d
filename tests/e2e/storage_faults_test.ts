/**
 * End to end: the backup file fails at run time. While it does, a delivered message is still
 * answered 200 (it reached the owner); an undelivered one 502 `stored:true` while the outbox
 * beside the file still takes it, and 500 only when neither the outbox nor the API took it
 * (nothing kept it); an error is logged and health says ok:false; once the fault clears the next
 * record is written and health recovers. Also: rotation, kill -9 during a burst, and a torn last
 * line across restarts.
 */
import assert from "node:assert/strict";
import { apiError } from "../support/fake_bot_api.ts";
import {
  CHAT_ID,
  isRoot,
  NOBODY,
  type Service,
  withRestarts,
  withService,
} from "../support/service.ts";
import { requireTool, skipWithout } from "../support/tools.ts";

/** Tests needing util-linux: skipped (and named at the end of the run) without it, never in CI. */
const test = {
  setpriv: skipWithout("setpriv") ? Deno.test.ignore : Deno.test,
  prlimit: skipWithout("prlimit") ? Deno.test.ignore : Deno.test,
};

async function health(service: Service): Promise<unknown> {
  // What the disk decides (delivery and pending are the queue's: tests/e2e/operations_test.ts).
  const { ok, configured } = await (await fetch(`${service.url}/api/health`)).json();
  return { ok, configured };
}

/** POSTs and returns the status and error code. */
async function submit(service: Service, message: string, ip: string) {
  const response = await service.post({ message }, ip);
  const body = await response.json();
  return [response.status, body.error ?? null];
}

/** The lines of a file: whole JSON records, and the text of any line that is not. */
async function readLines(path: string) {
  const lines = (await Deno.readTextFile(path)).split("\n");
  assert.equal(lines.pop(), "", "the file ends with a newline");
  const records: Array<Record<string, unknown>> = [];
  const torn: string[] = [];
  for (const line of lines) {
    try {
      records.push(JSON.parse(line));
    } catch {
      torn.push(line);
    }
  }
  return { records, torn };
}

/**
 * Runs one storage fault: `breakIt` makes the file unwritable, `fixIt` clears the fault. The
 * check in between is the same for every fault but one: whether the outbox beside the backup
 * file still takes the undelivered message (`outboxWorks`: then it is stored and answered 502
 * `stored:true`; otherwise nothing holds it and the answer is 500).
 */
async function faultCycle(
  service: Service,
  fake: { script: unknown[] },
  breakIt: () => Promise<void>,
  fixIt: () => Promise<void>,
  outboxWorks = false,
) {
  assert.deepEqual(await submit(service, "before", "10.1.0.1"), [200, null]);
  await breakIt();
  // Delivered but not stored: the truth is that the owner has it.
  assert.deepEqual(await submit(service, "delivered only", "10.1.0.2"), [200, null]);
  assert.deepEqual(await health(service), { ok: false, configured: true });
  // Neither delivered nor stored: a true error, nothing pretends.
  fake.script.push(apiError(500, "Internal Server Error"));
  assert.deepEqual(
    await submit(service, "lost", "10.1.0.3"),
    outboxWorks ? [502, "delivery_failed"] : [500, "internal"],
  );
  assert.deepEqual(await health(service), { ok: false, configured: true });
  const errors = service.logs().filter((log) => log.event === "backup_write_failed");
  assert.equal(errors.length, 2);
  assert.ok(errors.every((log) => log.level === "error" && typeof log.error === "string"));
  await fixIt();
  assert.deepEqual(await submit(service, "after", "10.1.0.4"), [200, null]);
  assert.deepEqual(await health(service), { ok: true, configured: true });
}

test.setpriv("e2e: a backup file the service may not write (mode changed under it) fails honestly and recovers", async () => {
  // Root ignores file modes, so the service runs as an ordinary user (nobody when we are root).
  await withService({}, async (service, fake) => {
    const rotated = `${service.file}.1`;
    await faultCycle(service, fake, async () => {
      // Like a logrotate `create` with the wrong owner or mode: the new file is not ours.
      await Deno.rename(service.file, rotated);
      await Deno.writeTextFile(service.file, "", { mode: 0o400 });
      await Deno.chmod(service.file, 0o400);
    }, async () => {
      await Deno.chmod(service.file, 0o600);
      if (isRoot()) await Deno.chown(service.file, NOBODY, NOBODY);
    }, true);
    assert.match(
      String(service.logs().find((log) => log.event === "backup_write_failed")?.error),
      /PermissionDenied|permission denied/i,
    );
    assert.deepEqual((await readLines(rotated)).records.map((r) => r.message), ["before"]);
    // The file was created by the service, so it really ran as an ordinary user.
    if (isRoot()) assert.equal((await Deno.stat(rotated)).uid, NOBODY);
    assert.deepEqual((await readLines(service.file)).records.map((r) => r.message), ["after"]);
  }, { unprivileged: true });
});

Deno.test("e2e: a removed backup directory fails honestly and recovers when it is back", async () => {
  const data = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${data}/messages.jsonl`;
  try {
    await withService({ MESSAGES_FILE: file }, async (service, fake) => {
      await faultCycle(
        service,
        fake,
        () => Deno.remove(data, { recursive: true }),
        () => Deno.mkdir(data),
      );
      const { records, torn } = await readLines(file);
      assert.deepEqual(records.map((r) => r.message), ["after"]);
      assert.deepEqual(torn, []);
      assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    });
  } finally {
    await Deno.remove(data, { recursive: true }).catch(() => {});
  }
});

test.prlimit("e2e: a backup file that cannot grow (RLIMIT_FSIZE, a full disk) fails honestly and recovers", async () => {
  await withService({}, async (service, fake) => {
    const prlimit = (limit: string) =>
      new Deno.Command(requireTool("prlimit"), {
        args: [`--pid=${service.process.pid}`, `--fsize=${limit}`],
      })
        .output().then((result) =>
          assert.ok(result.success, new TextDecoder().decode(result.stderr))
        );
    await faultCycle(service, fake, async () => {
      // Room for 20 more bytes: the next record is torn mid-line, then nothing fits.
      const size = (await Deno.stat(service.file)).size;
      await prlimit(`${size + 20}:unlimited`);
    }, () => prlimit("unlimited:unlimited"));
    assert.match(
      String(service.logs().find((log) => log.event === "backup_write_failed")?.error),
      /too large/i,
    );
    // The torn fragment sits on a line of its own; every record around it is whole.
    const { records, torn } = await readLines(service.file);
    assert.deepEqual(records.map((r) => r.message), ["before", "after"]);
    assert.equal(torn.length, 1);
    assert.equal(torn[0]!.length, 20);
  });
});

Deno.test("e2e: a backup file renamed away while running: the next record goes to a new 0600 file", async () => {
  await withService({}, async (service) => {
    assert.deepEqual(await submit(service, "one", "10.2.0.1"), [200, null]);
    await Deno.rename(service.file, `${service.file}.1`);
    assert.deepEqual(await submit(service, "two", "10.2.0.2"), [200, null]);
    assert.deepEqual(await submit(service, "three", "10.2.0.3"), [200, null]);
    const old = await readLines(`${service.file}.1`);
    const fresh = await readLines(service.file);
    assert.deepEqual(old.records.map((r) => r.message), ["one"]);
    assert.deepEqual(fresh.records.map((r) => r.message), ["two", "three"]);
    assert.equal((await Deno.stat(service.file)).mode! & 0o777, 0o600);
    assert.deepEqual(await health(service), { ok: true, configured: true });
  });
});

Deno.test("e2e: kill -9 during a burst: every line whole JSON after restart, every answered submission recorded", async () => {
  await withRestarts(CHAT_ID, async (start) => {
    const first = await start();
    const succeeded: string[] = [];
    const stored: string[] = [];
    let sent = 0;
    let killed = false;
    // 8 senders in parallel, distinct addresses, until the process is gone.
    const sender = async () => {
      while (!killed) {
        const n = sent++;
        const message = `burst ${n}`;
        try {
          const response = await first.post({ message }, `10.3.${n >> 8}.${n & 255}`);
          const body = await response.json();
          if (response.status === 200) succeeded.push(message);
          else if (body.stored === true) stored.push(message);
        } catch {
          // The process died with this request in flight: no answer, no promise made.
        }
      }
    };
    const senders = Array.from({ length: 8 }, sender);
    // Paced at about one a second: a few delivered, many more stored for later.
    while (succeeded.length < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    first.process.kill("SIGKILL");
    await first.process.status;
    killed = true;
    await Promise.all(senders);

    const second = await start({ MESSAGES_FILE: first.file });
    assert.deepEqual(await submit(second, "after restart", "10.4.0.1"), [200, null]);
    const { records, torn } = await readLines(first.file);
    assert.ok(torn.length <= 1, `at most one torn line: ${JSON.stringify(torn)}`);
    const recorded = new Set(records.map((r) => r.message));
    for (const message of succeeded) {
      assert.ok(recorded.has(message), `${message} was answered 200`);
    }
    // Answered "stored": its record was written before the answer, or at restart.
    for (const message of stored) assert.ok(recorded.has(message), `${message} was answered 502`);
    assert.equal(records.at(-1)!.message, "after restart");
    assert.equal(await second.stop(), 0);
  });
});

Deno.test("e2e: a torn last line left by an earlier run never corrupts the next record", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-data-" });
  const file = `${dir}/messages.jsonl`;
  await Deno.writeTextFile(file, '{"ts":"2026-11-22T14:03:09Z","name":"An', { mode: 0o600 });
  try {
    await withService({ MESSAGES_FILE: file }, async (service) => {
      assert.deepEqual(await submit(service, "next", "10.5.0.1"), [200, null]);
      const { records, torn } = await readLines(file);
      assert.deepEqual(torn, ['{"ts":"2026-11-22T14:03:09Z","name":"An']);
      assert.deepEqual(records.map((r) => r.message), ["next"]);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
