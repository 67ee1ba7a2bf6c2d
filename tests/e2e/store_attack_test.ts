/**
 * End to end, a hostile test of the SQLite store (issue 28, points 5 and 6) and of the chat's
 * hardening (issue 30): the real service killed with SIGKILL at random moments (while serving,
 * while starting, while importing the old release's files, while erasing), a database taken
 * away under it, a full disk while submissions, presses and replies arrive, commands run while
 * it serves, and a group chat flooded by refusals and commands while submissions keep coming.
 * Every promise made (an answer `200`, or `502` with `stored:true`) must hold afterwards.
 */
import assert from "node:assert/strict";
import { apiError, type FakeBotApi, startFakeBotApi } from "../support/fake_bot_api.ts";
import { skipWithoutMailServer, startMailServer } from "../support/mail_server.ts";
import { requireTool, skipWithout } from "../support/tools.ts";
import {
  BLOCKED_SENDER,
  copyFixtures,
  FIXTURE,
  FIXTURE_CHAT,
  OLD_SUFFIXES,
} from "../fixtures/release_6c90727.ts";
import {
  baseEnv,
  freePort,
  runBlockCommand,
  runContactdTask,
  runPending,
  type Service,
  serviceCommand,
  startService,
  TOKEN,
  waitFor,
} from "../support/service.ts";

// Sizes of the loops: STORE_ATTACK_KILLS, STORE_ATTACK_FORGETS, STORE_ATTACK_IMPORT_KILLS,
// STORE_ATTACK_GROUP_SUBMISSIONS.

/** A private chat (paced at about one message a second). */
const PRIVATE_CHAT = 424_242;

/**
 * The answers a reply gets: mailed or not, and, when its case page could not be read or written
 * (a full disk), not posted (lib/inbox/case_reply.ts `CASE_ANSWERS.notSaved`).
 */
const REPLY_ANSWER = /Not sent|Sent to|Not posted/;

/** Random integer in [low, high). */
function between(low: number, high: number): number {
  return low + Math.floor(Math.random() * (high - low));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the senders were promised, by message text. */
interface Ledger {
  /** Answered 200 or 502 `stored:true`. */
  readonly acknowledged: Set<string>;
  /** Answered anything else (a refusal, a 500), by status. */
  readonly other: Map<string, number>;
  sent: number;
}

/** The unique message text of submission `n` (no text is a prefix of another). */
const textOf = (n: number) => `attack <${n}> end`;

/** A distinct forwarded address per submission, so the rate limit never applies. */
const addressOf = (n: number) => `10.${70 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;

/** Posts submissions one after another, `gapMs` apart, until `stop()`; notes every answer. */
async function stream(
  service: Service,
  ledger: Ledger,
  stop: () => boolean,
  gapMs: number,
): Promise<void> {
  while (!stop()) {
    const n = ledger.sent++;
    const message = textOf(n);
    try {
      const response = await service.post({ message }, addressOf(n));
      const body = await response.json();
      if (response.status === 200 || (response.status === 502 && body.stored === true)) {
        ledger.acknowledged.add(message);
      } else ledger.other.set(message, response.status);
    } catch {
      // Killed with the request in flight: no answer, no promise.
    }
    await sleep(gapMs);
  }
}

/** How many times each text was delivered, by message text (only `texts`). */
function deliveries(fake: FakeBotApi, texts: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const text of texts) counts.set(text, 0);
  for (const delivered of fake.delivered) {
    const match = delivered.match(/attack <\d+> end/);
    if (match !== null && counts.has(match[0])) counts.set(match[0], counts.get(match[0])! + 1);
  }
  return counts;
}

/** The backup file's records, every line whole JSON but at most one torn line. */
async function recordsOf(file: string) {
  const lines = (await Deno.readTextFile(file)).split("\n").filter((line) => line !== "");
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
 * Spawns the service with its derived flags and kills it with SIGKILL after `ms` (start-up), or
 * as soon as its output holds `event` (then `ms` is the longest wait).
 */
async function killDuringStart(
  settings: Record<string, string>,
  ms: number,
  event?: string,
): Promise<void> {
  const { args, env } = serviceCommand({ PORT: String(freePort()), ...settings });
  const child = new Deno.Command(Deno.execPath(), {
    args,
    env: { ...baseEnv(), ...env },
    clearEnv: true,
    stdin: "null",
    stdout: event === undefined ? "null" : "piped",
    stderr: "null",
  }).spawn();
  const kill = () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // It already exited (a refusal): the next start shows why.
    }
  };
  const timer = setTimeout(kill, ms);
  if (event !== undefined) {
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      if (text.includes(`"event":"${event}"`)) kill();
    }
  }
  await child.status;
  clearTimeout(timer);
}

/** The settings of a service on `file` against `fake` for `chatId`. */
function settingsFor(fake: FakeBotApi, chatId: number, file: string): Record<string, string> {
  return {
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(chatId),
    MESSENGER_API_URL: fake.url,
    MESSAGES_FILE: file,
    DELIVERY_WAIT_MS: "1500",
  };
}

/**
 * The kill -9 loop: `kills` rounds of a steady stream (one sender, some API failures scripted)
 * killed at a random moment, every third round killed during start-up instead as well; then a
 * last start that drains. Returns the numbers for the report.
 */
async function crashLoop(kills: number, file: string, fake: FakeBotApi) {
  const ledger: Ledger = { acknowledged: new Set(), other: new Map(), sent: 0 };
  const settings = settingsFor(fake, PRIVATE_CHAT, file);
  const services: Service[] = [];
  let startKills = 0;
  try {
    for (let round = 0; round < kills; round++) {
      if (round % 3 === 2) {
        await killDuringStart(settings, between(100, 1500));
        startKills++;
      }
      const service = await startService(settings);
      services.push(service);
      let dead = false;
      const senders = [
        stream(service, ledger, () => dead, 150),
        stream(service, ledger, () => dead, 250),
      ];
      const failures = setInterval(() => {
        if (Math.random() < 0.3) fake.script.push(apiError(500, "Internal Server Error"));
      }, 300);
      await sleep(between(300, 2500));
      service.process.kill("SIGKILL");
      await service.process.status;
      dead = true;
      clearInterval(failures);
      await Promise.all(senders);
    }
    fake.script.length = 0;
    const last = await startService(settings);
    services.push(last);
    await waitFor(
      () => [...deliveries(fake, ledger.acknowledged).values()].every((count) => count >= 1),
      240_000,
      "every acknowledged submission delivered",
    );
    assert.equal(await last.stop(), 0);
  } finally {
    for (const service of services) {
      await service.stop();
      await Deno.remove(service.dir, { recursive: true });
    }
  }
  const { records, torn } = await recordsOf(file);
  const byMessage = new Map<string, Set<string>>();
  const byId = new Map<string, number>();
  for (const record of records) {
    const id = String(record.id);
    byId.set(id, (byId.get(id) ?? 0) + 1);
    const message = String(record.message);
    byMessage.set(message, (byMessage.get(message) ?? new Set()).add(id));
  }
  const twice = [...byId].filter(([, count]) => count > 1).map(([id]) => id);
  const lost = [...ledger.acknowledged].filter((message) => !byMessage.has(message));
  const split = [...ledger.acknowledged].filter((message) =>
    (byMessage.get(message)?.size ?? 0) > 1
  );
  const counts = deliveries(fake, ledger.acknowledged);
  const undelivered = [...counts].filter(([, count]) => count === 0).map(([text]) => text);
  const duplicates = [...deliveries(fake, byMessage.keys()).values()]
    .reduce((sum, count) => sum + Math.max(0, count - 1), 0);
  return {
    kills: kills + startKills,
    sent: ledger.sent,
    acknowledged: ledger.acknowledged.size,
    other: [...ledger.other.values()],
    records: records.length,
    torn,
    twice,
    lost,
    split,
    undelivered,
    duplicates,
  };
}

const KILLS = Number(Deno.env.get("STORE_ATTACK_KILLS") ?? "3");

Deno.test("e2e: kill -9 at random moments under a steady stream (and while starting): every acknowledged submission recorded once by id and delivered, at most one duplicate notification per crash", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT });
  try {
    const result = await crashLoop(KILLS, `${dir}/messages.jsonl`, fake);
    console.log(JSON.stringify({ ...result, other: result.other.length }));
    assert.ok(result.acknowledged > KILLS, "the stream was acknowledged");
    assert.deepEqual(result.lost, [], "acknowledged and never recorded");
    assert.deepEqual(result.twice, [], "ids recorded twice");
    assert.deepEqual(result.split, [], "one submission recorded under two ids");
    assert.deepEqual(result.undelivered, [], "acknowledged and never delivered");
    assert.ok(result.torn.length <= result.kills, JSON.stringify(result.torn));
    assert.ok(result.duplicates <= result.kills, `${result.duplicates} duplicates`);
  } finally {
    await fake.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A backup record as the service writes it (for a large file written up front). */
function recordLine(n: number, contact: string, message: string): string {
  return JSON.stringify({
    ts: new Date(Date.now() - 3600_000).toISOString().slice(0, 19) + "Z",
    id: `p${String(n).padStart(7, "0")}`,
    name: `Person ${n}`,
    contact,
    message,
    ip: addressOf(n),
    messenger_ok: true,
  }) + "\n";
}

/** Every byte of the database and its -wal, as text (what an erasure must leave clean). */
async function databaseBytes(file: string): Promise<string> {
  const parts = [];
  for (const suffix of [".db", ".db-wal"]) {
    const bytes = await Deno.readFile(`${file}${suffix}`).catch(() => new Uint8Array());
    parts.push(new TextDecoder("latin1").decode(bytes));
  }
  return parts.join("\n");
}

const VICTIM = "victim@example.org";

/**
 * `rounds` times: a running service with a large backup file (victims among others) and a
 * stream of other submissions; `contactd forget --contact victim` started, the service killed
 * with SIGKILL at a random moment while it erases, restarted at once. The erasure must be all or
 * nothing, never tear the file, and a `removed` answer must mean gone (backup, database, -wal).
 */
async function forgetKills(rounds: number) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const file = `${dir}/messages.jsonl`;
  const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT, floodControl: false });
  const services: Service[] = [];
  const findings: string[] = [];
  const miscounts: string[] = [];
  let kept = 0;
  try {
    const lines: string[] = [];
    for (let n = 0; n < 40_000; n++) {
      const victim = n % 1000 === 7;
      lines.push(
        recordLine(
          n,
          victim ? VICTIM : `other${n}@example.org`,
          victim ? `ERASE-SECRET-${n}` : `kept ${n}`,
        ),
      );
      if (!victim) kept++;
    }
    await Deno.writeTextFile(file, lines.join(""), { mode: 0o600 });
    // Replies on: each submission's contact and text are kept for them in the database too.
    const settings = {
      ...settingsFor(fake, PRIVATE_CHAT, file),
      SMTP_URL: "smtp://127.0.0.1:9",
      REPLY_FROM: "site@example.org",
    };
    const ledger: Ledger = { acknowledged: new Set(), other: new Map(), sent: 100_000 };
    for (let round = 0; round < rounds; round++) {
      const service = await startService(settings);
      services.push(service);
      // Victims live too: in the outbox and the ledger, not only in the file.
      for (let i = 0; i < 3; i++) {
        const response = await service.post(
          { contact: VICTIM, message: `ERASE-SECRET-live-${round}-${i}` },
          `10.200.${round}.${i}`,
        );
        await response.body?.cancel();
        assert.ok(response.status === 200 || response.status === 502, `${response.status}`);
      }
      const present = (await recordsOf(file)).records.filter((r) => r.contact === VICTIM).length;
      let dead = false;
      const sender = stream(service, ledger, () => dead, 50);
      const forget = runContactdTask(["forget", "--contact", VICTIM], service.dir, {
        MESSAGES_FILE: file,
      });
      if (round % 2 === 0) {
        // Right after the rewrite: as soon as the backup file's path names the new file.
        const before = (await Deno.stat(file)).ino;
        const deadline = Date.now() + 10_000;
        while (Date.now() < deadline && (await Deno.stat(file)).ino === before) await sleep(1);
      } else await sleep(between(400, 2500));
      service.process.kill("SIGKILL");
      await service.process.status;
      dead = true;
      await sender;
      const again = await startService(settings);
      services.push(again);
      const answer = await forget;
      const forgets = [service, again].map((s) =>
        s.logs().filter((l) => /forget/.test(String(l.event))).map((l) => `${l.event}:${l.records}`)
      );
      const text = await Deno.readTextFile(file);
      const { records, torn } = await recordsOf(file);
      const victims = records.filter((record) => record.contact === VICTIM).length;
      const removed = /^removed \d+ record/m.test(answer.stdout);
      const said = Number(/^removed (\d+) record/m.exec(answer.stdout)?.[1] ?? -1);
      if (removed && said !== present) {
        miscounts.push(`round ${round}: ${present} removed, forget said ${said}`);
      }
      if (torn.length > 0) findings.push(`round ${round}: torn lines ${torn.length}`);
      if (removed && victims > 0) {
        findings.push(`round ${round}: forget said removed, ${victims} victim records remain`);
      }
      const others = records.filter((record) => record.contact !== VICTIM);
      const ids = new Set(others.map((record) => record.id));
      if (ids.size !== others.length) findings.push(`round ${round}: a record twice`);
      const keptNow = others.filter((record) => String(record.message).startsWith("kept ")).length;
      if (keptNow !== kept) findings.push(`round ${round}: ${kept - keptNow} old records lost`);
      const missing = [...ledger.acknowledged].filter((m) => !text.includes(JSON.stringify(m)));
      if (missing.length > 0) findings.push(`round ${round}: ${missing.length} acknowledged lost`);
      console.log(
        JSON.stringify({
          round,
          code: answer.code,
          out: answer.stdout.slice(0, 20),
          forgets,
          err: answer.stderr.slice(0, 200),
          victims,
        }),
      );
      if (removed) {
        const bytes = await databaseBytes(file);
        if (bytes.includes("ERASE-SECRET")) {
          findings.push(`round ${round}: erased text in the database`);
        }
        if (bytes.includes(VICTIM)) findings.push(`round ${round}: erased contact in the database`);
      }
      assert.equal(await again.stop(), 0);
    }
  } finally {
    for (const service of services) {
      await service.stop();
      await Deno.remove(service.dir, { recursive: true });
    }
    await fake.close();
    await Deno.remove(dir, { recursive: true });
  }
  return { findings, miscounts };
}

/** The rounds of {@linkcode forgetKills}, run once for the two tests that read them. */
let forgetRounds: ReturnType<typeof forgetKills> | undefined;
const forgetKillsOnce = () =>
  forgetRounds ??= forgetKills(Number(Deno.env.get("STORE_ATTACK_FORGETS") ?? "2"));

Deno.test("e2e: kill -9 while the running service erases (forget through the request): all or nothing, nothing else lost, a removed answer means gone", async () => {
  const { findings } = await forgetKillsOnce();
  assert.deepEqual(findings, []);
});

Deno.test({
  // Found by attack: killed after the backup file's rewrite, the request was done again at the
  // next start, found nothing, and `forget` printed "removed 0 record(s)".
  name: "e2e: forget interrupted by kill -9 after its rewrite tells how many records it removed",
  async fn() {
    const { miscounts } = await forgetKillsOnce();
    assert.deepEqual(miscounts, []);
  },
});

/** Posts `message` and returns [status, stored] (the answer read). */
async function submit(service: Service, message: string, ip: string) {
  const response = await service.post({ message }, ip);
  const body = await response.json();
  return [response.status, body.stored === true] as const;
}

/**
 * The database taken away under the running service (`remove` does it) while the API is down:
 * what was acknowledged before and after must be delivered once the API is back, and again after
 * a restart nothing acknowledged is missing, and the database opens (quick_check).
 */
async function databaseTakenAway(
  remove: (file: string) => Promise<void>,
  restore?: (file: string) => Promise<void>,
  /** The backup file goes too: the records written before are the operator's to lose. */
  backupGoes = false,
) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const file = `${dir}/data/messages.jsonl`;
  await Deno.mkdir(`${dir}/data`);
  const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT, floodControl: false });
  const settings = { ...settingsFor(fake, PRIVATE_CHAT, file), MESSENGER_TIMEOUT_MS: "1000" };
  const services: Service[] = [];
  const acknowledged: string[] = [];
  const answers: string[] = [];
  try {
    const service = await startService(settings);
    services.push(service);
    await fake.outage("html");
    let n = 0;
    const some = async (count: number) => {
      for (let i = 0; i < count; i++, n++) {
        const message = textOf(n);
        const [status, stored] = await submit(service, message, addressOf(n));
        answers.push(`${status}${stored ? "s" : ""}`);
        if (status === 200 || (status === 502 && stored)) acknowledged.push(message);
      }
    };
    await some(4);
    await remove(file);
    await some(4);
    await sleep(1500);
    await some(4);
    if (restore !== undefined) await restore(file);
    await sleep(1500);
    await some(4);
    await fake.outage(false);
    await waitFor(
      () => [...deliveries(fake, acknowledged).values()].every((count) => count >= 1),
      20_000,
      `every acknowledged delivered (answers ${answers.join(" ")})`,
    ).catch((error) => console.log(String(error)));
    const before = fake.delivered.length;
    service.process.kill("SIGKILL");
    await service.process.status;
    const again = await startService(settings);
    services.push(again);
    // Recovery wrote the missing records before the restarted service listened; what was not
    // delivered before the kill is delivered now (waited for at most 3 s, no more once it is).
    await waitFor(
      () => [...deliveries(fake, acknowledged).values()].every((count) => count >= 1),
      3000,
      "delivered after the restart",
    ).catch(() => {});
    const { records } = await recordsOf(file);
    const recorded = new Set(records.map((record) => String(record.message)));
    const counts = deliveries(fake, acknowledged);
    return {
      answers,
      lost: acknowledged.slice(backupGoes ? 4 : 0).filter((message) => !recorded.has(message)),
      undelivered: [...counts].filter(([, c]) => c === 0).map(([m]) => m),
      duplicates: [...counts.values()].reduce((sum, c) => sum + Math.max(0, c - 1), 0),
      afterRestart: fake.delivered.length - before,
      health: await (await fetch(`${again.url}/api/health`)).json(),
      logs: service.logs().map((line) => String(line.event)).filter((e) =>
        /fail|database|store/.test(e)
      ),
    };
  } finally {
    for (const service of services) {
      await service.stop();
      await Deno.remove(service.dir, { recursive: true });
    }
    await fake.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test({
  // Was a finding (issue 28 point 6): the file alone removed lost what waited in it at the next
  // restart. The worker now writes it anew from its open connection (lib/storage/sqlite/worker.ts).
  name:
    "e2e: the database file alone removed under the running service (its -wal left): nothing acknowledged lost, delivered after a restart",
  async fn() {
    const result = await databaseTakenAway((file) => Deno.remove(`${file}.db`));
    console.log(JSON.stringify({ ...result, logs: result.logs.length }));
    assert.deepEqual(result.lost, []);
    assert.deepEqual(result.undelivered, []);
  },
});

Deno.test("e2e: the database's directory removed and re-created under the running service: fails honestly, heals, nothing acknowledged lost", async () => {
  const result = await databaseTakenAway(
    (file) => Deno.remove(file.slice(0, file.lastIndexOf("/")), { recursive: true }),
    (file) => Deno.mkdir(file.slice(0, file.lastIndexOf("/"))),
    true,
  );
  // While the directory is gone nothing can keep a message: 500, never a false promise.
  assert.ok(result.answers.slice(4, 12).every((answer) => answer === "500"), result.answers.join());
  assert.deepEqual(result.answers.slice(12), ["502s", "502s", "502s", "502s"]);
  console.log(JSON.stringify(result));
  assert.deepEqual(result.lost, []);
  assert.deepEqual(result.undelivered, []);
});

/**
 * A link put at the database's `-wal` or `-shm` (SQLite opens those itself, outside Deno's
 * checks): the service must refuse it or never write through it.
 */
async function linkAt(suffix: string) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const file = `${dir}/messages.jsonl`;
  const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT, floodControl: false });
  const settings = settingsFor(fake, PRIVATE_CHAT, file);
  try {
    const first = await startService(settings);
    assert.deepEqual(await submit(first, "first run", "10.201.0.1"), [200, false]);
    assert.equal(await first.stop(), 0);
    await Deno.remove(first.dir, { recursive: true });
    await Deno.remove(`${file}.db${suffix}`).catch(() => {});
    const target = `${dir}/elsewhere${suffix}`;
    await Deno.writeTextFile(target, "not contactd's\n");
    await Deno.symlink(target, `${file}.db${suffix}`);
    const outcome = await startService(settings).then(
      async (service) => {
        const answer = await submit(service, "through a link?", "10.201.0.2");
        await service.stop();
        await Deno.remove(service.dir, { recursive: true });
        return `started, answered ${answer.join(" ")}`;
      },
      (error: Error) => `refused: ${error.message.slice(0, 300)}`,
    );
    return { outcome, target: await Deno.readTextFile(target) };
  } finally {
    await fake.close();
    await Deno.remove(dir, { recursive: true });
  }
}

for (const suffix of ["-wal", "-shm"]) {
  Deno.test(`e2e: a symbolic link at the database's ${suffix} is never written through`, async () => {
    const { outcome, target } = await linkAt(suffix);
    assert.match(outcome, /^refused: .*database_open_failed/s);
    assert.equal(target, "not contactd's\n", "the link's target was written");
  });
}

/** Sets the service's file size limit (`prlimit --fsize`): a full disk for every file it writes. */
async function fileSizeLimit(service: Service, limit: string) {
  const result = await new Deno.Command(requireTool("prlimit"), {
    args: [`--pid=${service.process.pid}`, `--fsize=${limit}`],
  }).output();
  assert.ok(result.success, new TextDecoder().decode(result.stderr));
}

/** The bot's message in `chatId` whose text holds `text` (a notification): its id. */
function notificationOf(fake: FakeBotApi, chatId: number, text: string): number {
  for (const [key, message] of fake.messages) {
    const [chat, id] = key.split(":").map(Number);
    if (chat === chatId && message.from === undefined && message.text.includes(text)) return id!;
  }
  throw new Error(`no notification holds ${text}`);
}

/** Every text the bot sent (notifications and answers alike). */
function botTexts(fake: FakeBotApi): string[] {
  return fake.calls.filter((call) => call.method === "sendMessage").map((call) =>
    String(call.body.text)
  );
}

Deno.test({
  name:
    "e2e: a full disk while submissions, a Spam press and a reply arrive: honest answers, the press answered not saved and handled again once there is room, nothing acknowledged lost after a restart",
  ignore: skipWithout("prlimit") || skipWithoutMailServer(),
  async fn() {
    const mail = await startMailServer();
    const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
    const file = `${dir}/messages.jsonl`;
    const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT, floodControl: false });
    const settings = {
      ...settingsFor(fake, PRIVATE_CHAT, file),
      SMTP_URL: `smtp://${mail.host}:${mail.port}`,
      REPLY_FROM: "site@example.org",
    };
    const services: Service[] = [];
    try {
      const service = await startService(settings);
      services.push(service);
      const spammer = { contact: "spam@example.net", ip: "10.203.0.1" };
      const spam = await service.post({ ...spammer, message: "buy now <spam>" }, spammer.ip);
      assert.equal(spam.status, 200, await spam.text());
      const carla = await service.post(
        { contact: "carla@example.org", message: "a question <carla>" },
        "10.203.0.2",
      );
      assert.equal(carla.status, 200, await carla.text());
      const records = await recordsOf(file);
      const spamId = String(records.records.find((r) => r.message === "buy now <spam>")!.id);
      const spamMessage = notificationOf(fake, PRIVATE_CHAT, "buy now <spam>");
      const carlaMessage = notificationOf(fake, PRIVATE_CHAT, "a question <carla>");
      await waitFor(() => fake.polls.length > 0, 15_000, "the first poll");

      await fileSizeLimit(service, "1:unlimited");
      const answers: string[] = [];
      const acknowledged: string[] = [];
      const toasts = fake.toasts.length;
      fake.pushUpdate(fake.replyUpdate({
        chatId: PRIVATE_CHAT,
        replyTo: carlaMessage,
        text: "Our answer, Carla",
      }));
      fake.pushUpdate(fake.pressUpdate({
        chatId: PRIVATE_CHAT,
        messageId: spamMessage,
        data: `s:${spamId}`,
      }));
      for (let n = 0; n < 6; n++) {
        const message = `full disk <${n}>`;
        const [status, stored] = await submit(service, message, `10.204.0.${n}`);
        answers.push(`${status}${stored ? "s" : ""}`);
        if (status === 200 || stored) acknowledged.push(message);
      }
      await waitFor(() => fake.toasts.length > toasts, 15_000, "the press's toast");
      const toast = fake.toasts[toasts]!.text;
      const health = await (await fetch(`${service.url}/api/health`)).json();
      // The reply is answered in turn with the press (on a busy machine, seconds later).
      await waitFor(
        () => botTexts(fake).some((text) => REPLY_ANSWER.test(text)),
        15_000,
        "the reply's answer",
      ).catch(() => {});
      const deskAnswer = botTexts(fake).filter((text) => REPLY_ANSWER.test(text));

      await fileSizeLimit(service, "unlimited:unlimited");
      await waitFor(
        () => service.logs().some((line) => line.event === "marked_spam"),
        20_000,
        "the press handled again once there is room",
      ).catch(() => {});
      const markedSpam = service.logs().some((line) => line.event === "marked_spam");
      await sleep(500);
      const before = fake.delivered.length;
      const again = await service.post({ ...spammer, message: "spam again <1>" }, spammer.ip);
      await again.body?.cancel();
      await sleep(1500);
      const heldLive = !fake.delivered.slice(before).some((text) => text.includes("spam again"));

      service.process.kill("SIGKILL");
      await service.process.status;
      const restarted = await startService(settings);
      services.push(restarted);
      const third = await restarted.post({ ...spammer, message: "spam again <2>" }, "10.203.0.9");
      await third.body?.cancel();
      await sleep(2000);
      const heldAfterRestart = !fake.delivered.some((text) => text.includes("spam again <2>"));
      const recorded = new Set((await recordsOf(file)).records.map((r) => String(r.message)));
      const result = {
        answers,
        toast,
        health,
        deskAnswer,
        markedSpam,
        heldLive,
        heldAfterRestart,
        unrecorded: acknowledged.filter((message) => !recorded.has(message)),
        undelivered: acknowledged.filter((m) => !fake.delivered.some((t) => t.includes(m))),
        mails: (await mail.messages()).length,
        deskAfter: botTexts(fake).filter((text) => REPLY_ANSWER.test(text)),
      };
      console.log(JSON.stringify(result));
      assert.ok(answers.every((answer) => answer === "200" || answer === "500"), answers.join());
      assert.match(toast, /not saved/i);
      assert.equal(health.ok, false);
      assert.ok(markedSpam, "the press was handled again once there was room");
      assert.ok(heldLive, "the spammer is held after the press");
      assert.ok(heldAfterRestart, "the spammer is held after a restart");
      assert.deepEqual(result.undelivered, []);
      // The reply: refused honestly ("reply again") and never mailed, or mailed once and said so.
      assert.ok(result.mails <= 1);
      assert.equal(result.deskAnswer.length, 1, "the reply answered while the disk is full");
      if (result.deskAfter.some((text) => /Not (sent|posted)/.test(text))) {
        assert.equal(result.mails, 0);
      }
      if (result.mails === 1) assert.ok(result.deskAfter.some((text) => /Sent to/.test(text)));
    } finally {
      for (const service of services) {
        await service.stop();
        await Deno.remove(service.dir, { recursive: true });
      }
      await fake.close();
      await mail.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/** Presses 🚫 Spam on the notification holding `text`; waits until the service blocked it. */
async function pressSpam(service: Service, fake: FakeBotApi, chatId: number, text: string) {
  const records = (await recordsOf(service.file)).records;
  const id = String(records.find((record) => record.message === text)!.id);
  fake.pushUpdate(fake.pressUpdate({
    chatId,
    messageId: notificationOf(fake, chatId, text),
    data: `s:${id}`,
  }));
  await waitFor(
    () => service.logs().some((line) => line.event === "marked_spam" && line.id === id),
    15_000,
    "the spam press",
  );
}

Deno.test("e2e: blocked, pending, export, forget and unblock while a flood of submissions arrives: no database is locked, the unblock seen within a second, the erased text gone from the database and its -wal", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const file = `${dir}/messages.jsonl`;
  const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT, floodControl: false });
  const service = await startService({
    ...settingsFor(fake, PRIVATE_CHAT, file),
    DELIVERY_WAIT_MS: "1000",
  });
  try {
    const spammer = { contact: "spam@example.net", message: "buy now <spam>" };
    assert.equal((await service.post(spammer, "10.205.0.1")).status, 200);
    const secret = { contact: "erase@example.org", message: "FORGET-ME-TEXT 4711" };
    assert.equal((await service.post(secret, "10.205.0.2")).status, 200);
    await waitFor(() => fake.polls.length > 0, 15_000, "the first poll");
    await pressSpam(service, fake, PRIVATE_CHAT, spammer.message);

    const ledger: Ledger = { acknowledged: new Set(), other: new Map(), sent: 200_000 };
    let flooding = true;
    const senders = Array.from({ length: 12 }, () => stream(service, ledger, () => !flooding, 0));
    const env = { MESSAGES_FILE: file };
    const commands = await Promise.all([
      ...Array.from({ length: 3 }, () => runBlockCommand(file, "blocked")),
      ...Array.from({ length: 3 }, () => runPending(file)),
      ...Array.from({ length: 2 }, () => runContactdTask(["export"], dir, env)),
      runContactdTask(["forget", "--contact", secret.contact], dir, env),
      runContactdTask(["forget", "--contact", "nobody@example.org", "--dry-run"], dir, env),
    ]);
    const unblock = await runBlockCommand(file, "unblock", spammer.contact);
    const unblocked = Date.now();
    // The spammer's contact again, from fresh addresses, until one is no longer held.
    let seenAfter = -1;
    for (let k = 0; k < 40 && seenAfter < 0; k++) {
      const logged = service.logs().length;
      const response = await service.post(
        { contact: spammer.contact, message: `after unblock <${k}>` },
        `10.206.0.${k}`,
      );
      await response.body?.cancel();
      const line = service.logs().slice(logged).find((log) => log.event === "contact");
      if (line !== undefined && line.result !== "held_spam") seenAfter = Date.now() - unblocked;
      else await sleep(50);
    }
    flooding = false;
    await Promise.all(senders);
    const outputs = [...commands, unblock];
    const failures = outputs.filter((output) => output.code !== 0);
    const locked = outputs.filter((output) =>
      /database is locked|SQLITE_BUSY|database is busy/i.test(output.stderr + output.stdout)
    );
    const bytes = await databaseBytes(file);
    console.log(JSON.stringify({
      sent: ledger.sent - 200_000,
      acknowledged: ledger.acknowledged.size,
      other: [...ledger.other.values()],
      failures: failures.map((output) => output.stderr.slice(0, 200)),
      locked: locked.length,
      seenAfter,
      forget: commands[8]!.stdout.split("\n")[0],
    }));
    assert.deepEqual(failures.map((output) => output.stderr), []);
    assert.equal(locked.length, 0);
    assert.deepEqual([...ledger.other.values()], [], "every submission of the flood acknowledged");
    assert.ok(seenAfter >= 0 && seenAfter < 1500, `the unblock seen after ${seenAfter} ms`);
    assert.match(commands[8]!.stdout, /^removed 1 record/m);
    assert.ok(!bytes.includes("FORGET-ME-TEXT"), "erased text in the database or its -wal");
    assert.ok(!(await Deno.readTextFile(file)).includes("FORGET-ME-TEXT"));
    assert.equal(await service.stop(), 0);
  } finally {
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

/** Submissions during a group's flood, 4 s apart. */
const SUBMISSIONS = Number(Deno.env.get("STORE_ATTACK_GROUP_SUBMISSIONS") ?? "5");

/** The group of the flood tests (negative: Telegram's 20 messages a minute apply). */
const GROUP = -1009876543210;
/** The group's one administrator (the members who flood are not). */
const ADMIN = 7_770_001;

/**
 * A group chat flooded by a member (`flood` pushes the updates) while 6 submissions arrive 4 s
 * apart: each must be answered 200 (delivered within DELIVERY_WAIT_MS) under the fake's flood
 * control. Returns the answers, the bot's messages to the group besides notifications, and the
 * 429s the fake gave.
 */
async function groupFlood(
  settings: Record<string, string>,
  flood: (fake: FakeBotApi, notification: number) => void,
) {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const file = `${dir}/messages.jsonl`;
  const fake = startFakeBotApi({ token: TOKEN, chatId: GROUP });
  fake.admins.set(GROUP, [ADMIN]);
  const base = settingsFor(fake, GROUP, file);
  const { DELIVERY_WAIT_MS: _, ...rest } = base;
  const service = await startService({ ...rest, ...settings });
  let watch: ReturnType<typeof setInterval> | undefined;
  try {
    const [status] = await submit(service, "first <group>", "10.207.0.1");
    assert.equal(status, 200);
    await waitFor(() => fake.polls.length > 0, 15_000, "the first poll");
    const first = notificationOf(fake, GROUP, "first <group>");
    flood(fake, first);
    // The owner (the group's administrator) presses Handled right after the flood began.
    const firstId = String((await recordsOf(file)).records[0]!.id);
    const pressed = Date.now();
    fake.pushUpdate(
      fake.pressUpdate({ chatId: GROUP, messageId: first, data: `h:${firstId}`, fromId: ADMIN }),
    );
    let toastAfter = -1;
    watch = setInterval(() => {
      if (toastAfter < 0 && fake.toasts.length > 0) {
        toastAfter = Math.round((Date.now() - pressed) / 100) / 10;
      }
    }, 50);
    const answers: number[] = [];
    const late: number[] = [];
    for (let n = 0; n < SUBMISSIONS; n++) {
      const started = Date.now();
      const message = `during the flood <${n}>`;
      const [status] = await submit(service, message, `10.207.1.${n}`);
      answers.push(status);
      await waitFor(() => fake.delivered.some((text) => text.includes(message)), 60_000, message)
        .catch(() => {});
      const at = fake.deliveredAt[fake.delivered.findIndex((text) => text.includes(message))];
      late.push(at === undefined ? -1 : Math.round((at - started) / 100) / 10);
      await sleep(Math.max(0, 4000 - (Date.now() - started)));
    }
    const answered = fake.calls.filter((call) =>
      call.method === "sendMessage" && !String(call.body.text).includes("<")
    ).length;
    const end = Date.now() + Number(Deno.env.get("STORE_ATTACK_TOAST_WAIT_MS") ?? "1000");
    while (toastAfter < 0 && Date.now() < end) {
      await sleep(100);
    }
    return {
      answers,
      late,
      answered,
      floods: fake.floods,
      pendingUpdates: fake.updates.length,
      toastAfter,
    };
  } finally {
    clearInterval(watch);
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
}

/** 200 replies to a notification: 100 from one member, then one each from 100 others. */
function memberReplies(fake: FakeBotApi, notification: number) {
  for (let i = 0; i < 200; i++) {
    const fromId = i < 100 ? 6_660_001 : 6_660_100 + i;
    fake.pushUpdate(
      fake.replyUpdate({ chatId: GROUP, replyTo: notification, text: `reply ${i}`, fromId }),
    );
  }
}

/** 300 `/status`: 100 from one member, then one each from 200 others. */
function memberStatuses(fake: FakeBotApi) {
  for (let i = 0; i < 300; i++) {
    const fromId = i < 100 ? 6_660_001 : 6_660_100 + i;
    fake.pushUpdate(fake.commandUpdate({ chatId: GROUP, text: "/status", fromId }));
  }
}

/** The admins' group flooded by a member's replies, run once for the two tests that read it. */
let adminsFlood: ReturnType<typeof groupFlood> | undefined;
const adminsFloodOnce = () =>
  adminsFlood ??= groupFlood({ CHAT_ACTIONS_BY: "admins" }, memberReplies);

Deno.test("e2e: in a group, a member's 200 refused replies (admins) and 300 /status (members) never cost submissions their delivery: every one answered 200 and delivered at once", async () => {
  const [admins, members] = await Promise.all([
    adminsFloodOnce(),
    groupFlood({ CHAT_ACTIONS_BY: "members" }, memberStatuses),
  ]);
  console.log(JSON.stringify({ admins, members }));
  for (const result of [admins, members]) {
    assert.deepEqual(result.answers, Array(SUBMISSIONS).fill(200));
    assert.ok(result.late.every((s) => s >= 0 && s < 5), `delivered after ${result.late.join()} s`);
  }
});

Deno.test({
  // Was a finding (issue 30 points 2 and 3): the poller waited for each answer, which the queue
  // lets out at the calls' share of a group's budget. Answers are no longer waited for, and the
  // inbox's chat budget is below that share (lib/inbox/answer_budget.ts).
  name:
    "e2e: in a group (admins), the owner's press right after 200 refused members' replies is answered within 5 s",
  async fn() {
    const result = await adminsFloodOnce();
    console.log(JSON.stringify(result));
    assert.ok(
      result.toastAfter >= 0 && result.toastAfter < 5,
      `toast after ${result.toastAfter} s`,
    );
  },
});

Deno.test("e2e: kill -9 during the start-up that imports the old release's files, again and again: then every pending message delivered once, every record once, the block kept", async () => {
  const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
  const file = await copyFixtures(dir, Date.now() - 3600_000);
  const fake = startFakeBotApi({ token: TOKEN, chatId: FIXTURE_CHAT });
  const settings = settingsFor(fake, FIXTURE_CHAT, file);
  const kills = Number(Deno.env.get("STORE_ATTACK_IMPORT_KILLS") ?? "4");
  let service: Service | undefined;
  try {
    // At random moments, and right as the import is committed (before the old files go).
    for (let k = 0; k < kills; k++) {
      await killDuringStart(settings, between(150, 1200), k % 2 === 0 ? "import_done" : undefined);
    }
    service = await startService(settings);
    const pending = [FIXTURE.pendingRecorded, FIXTURE.pendingUnrecorded, FIXTURE.pendingFields];
    const sent = (id: string) => fake.delivered.filter((text) => text.includes(`#${id}`)).length;
    await waitFor(() => pending.every((id) => sent(id) >= 1), 30_000, "the pending messages");
    const held = await service.post(
      { name: "Again", contact: BLOCKED_SENDER.contact, message: "Spam again" },
      BLOCKED_SENDER.ip,
    );
    assert.equal(held.status, 200, await held.text());
    await sleep(500);
    assert.equal(await service.stop(), 0);
    const { records, torn } = await recordsOf(file);
    const count = (id: string) => records.filter((record) => record.id === id).length;
    const result = {
      kills,
      delivered: pending.map(sent),
      never: [FIXTURE.deliveredUnrecorded, FIXTURE.finished].map(sent),
      records: [...pending, FIXTURE.deliveredUnrecorded, FIXTURE.finished].map(count),
      torn: torn.length,
      spamDelivered: fake.delivered.some((text) => text.includes("Spam again")),
      leftOver: (await Promise.all(OLD_SUFFIXES.map((suffix) =>
        Deno.lstat(`${file}${suffix}`).then(() =>
          suffix, () => "")
      ))).filter((suffix) => suffix !== ""),
    };
    console.log(JSON.stringify(result));
    // Delivered at least once; a kill after a delivery may repeat it (at most one per crash).
    assert.ok(result.delivered.every((n) => n >= 1), "each pending message delivered");
    assert.ok(result.delivered.reduce((sum, n) => sum + n - 1, 0) <= kills, "duplicates");
    assert.deepEqual(result.never, [0, 0], "nothing delivered before delivered again");
    assert.deepEqual(result.records, [1, 1, 1, 1, 1], "every record once");
    assert.equal(result.torn, 0);
    assert.equal(result.spamDelivered, false, "the blocked sender is still held");
    assert.deepEqual(result.leftOver, []);
  } finally {
    await service?.stop();
    await fake.close();
    if (service !== undefined) await Deno.remove(service.dir, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  // Found by attack: the lock is an advisory lock on MESSAGES_FILE.lock's inode; once that file
  // was removed (a "stale lock" cleanup, tmpfiles), a second service took a new one and ran on
  // the same backup file and database as the first. The service now also holds the database
  // file itself (lib/storage/sqlite/database.ts `hold`).
  name: "e2e: a second service is refused even after the lock file was removed under the first",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "contactd-attack-" });
    const file = `${dir}/messages.jsonl`;
    const fake = startFakeBotApi({ token: TOKEN, chatId: PRIVATE_CHAT, floodControl: false });
    const settings = settingsFor(fake, PRIVATE_CHAT, file);
    const first = await startService(settings);
    const started: Service[] = [first];
    try {
      await Deno.remove(`${file}.lock`);
      const second = await startService(settings).then(
        (service) => (started.push(service), "started"),
        () => "refused",
      );
      if (second === "started") {
        // What two services on one database do with one backlog.
        await fake.outage("html");
        for (let n = 0; n < 10; n++) {
          await submit(started[n % 2]!, textOf(300_000 + n), addressOf(300_000 + n));
        }
        await fake.outage(false);
        await sleep(15_000);
        const counts = deliveries(fake, Array.from({ length: 10 }, (_, n) => textOf(300_000 + n)));
        const { records } = await recordsOf(file);
        console.log(JSON.stringify({
          deliveries: [...counts.values()],
          records: records.length,
          conflicts: started.flatMap((s) =>
            s.logs()
          ).filter((l) => /conflict/.test(String(l.event))).length,
        }));
      }
      assert.equal(second, "refused", "two services on one MESSAGES_FILE");
    } finally {
      for (const service of started) {
        await service.stop();
        await Deno.remove(service.dir, { recursive: true });
      }
      await fake.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
