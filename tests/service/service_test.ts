import assert from "node:assert/strict";
import { type ServiceIO, startService } from "../../lib/service/service.ts";
import { BLOCK_REFRESH_MS, CHECKPOINT_MS } from "../../lib/service/upkeep.ts";
import type { Serving } from "../../lib/http/keep_serving.ts";
import type { LogFields } from "../../lib/log/logger.ts";
import type { Settings } from "../../lib/config/settings.ts";
import { type FakeClock, fakeClock } from "../support/fake_clock.ts";
import { DRAIN_GRACE_MS } from "../../lib/http/drain.ts";
import { crash, keepingWorkers } from "../support/workers.ts";
import { SUMMARY_INTERVAL_MS } from "../../lib/log/tally.ts";
import { FORGET_POLL_MS } from "../../lib/storage/forget_request.ts";
import { RETENTION_INTERVAL_MS } from "../../lib/storage/retention.ts";

/** A fake world: what the service did, in order, and the signal handlers it holds. */
function fakeWorld(
  options: {
    listen?: "ok" | "fails";
    onServe?: () => void;
    /** The server's shutdown never ends: a client holds its connection open. */
    heldOpen?: boolean;
  } = {},
) {
  const events: string[] = [];
  const logs: LogFields[] = [];
  const handlers = new Map<Deno.Signal, Set<() => void>>();
  const servers: Array<{ shutdowns: number; handler: Parameters<ServiceIO["serve"]>[1] }> = [];
  let cancelled = 0;
  const intervals: number[] = [];
  const io: ServiceIO = {
    log: (_level, fields) => {
      logs.push(fields);
      events.push(`log ${fields.event}`);
    },
    granted: () => true,
    fetch: () => Promise.reject(new Error("no network in this test")),
    clock: fakeClock(),
    every: (_fn, ms) => (intervals.push(ms), () => {
      cancelled++;
      events.push("cancel summaries");
    }),
    random: () => 0.5,
    readFile: () => Promise.resolve(new TextEncoder().encode("<p>example</p>")),
    serve: (_options, handler) => {
      events.push("serve");
      options.onServe?.();
      if (options.listen === "fails") throw new Deno.errors.AddrInUse("address in use");
      const { promise, resolve } = Promise.withResolvers<void>();
      const server = { shutdowns: 0, handler };
      servers.push(server);
      const serving: Serving = {
        finished: promise,
        shutdown: () => (server.shutdowns++, options.heldOpen === true ? 0 : resolve(), promise),
      };
      return serving;
    },
    pid: 4242,
    os: "linux",
    addSignalListener: (signal, handler) => {
      events.push(`listen ${signal}`);
      if (!handlers.has(signal)) handlers.set(signal, new Set());
      handlers.get(signal)!.add(handler);
    },
    removeSignalListener: (signal, handler) => {
      events.push(`unlisten ${signal}`);
      handlers.get(signal)?.delete(handler);
    },
  };
  const held = () => [...handlers.values()].reduce((sum, set) => sum + set.size, 0);
  const send = (signal: Deno.Signal) => handlers.get(signal)?.forEach((handler) => handler());
  return { io, events, logs, servers, held, send, intervals, cancelled: () => cancelled };
}

/** Runs `test` with a new temporary directory, removed afterwards (the service closed first). */
async function inTempDir(test: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  try {
    await test(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function settingsIn(dir: string, extra: Settings = {}): Settings {
  return { MESSAGES_FILE: `${dir}/messages.jsonl`, ...extra };
}

Deno.test("startService listens for the stop signals before it listens on the port", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const service = await startService(settingsIn(dir), world.io);
    assert.ok(service);
    const serveAt = world.events.indexOf("serve");
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
      const at = world.events.indexOf(`listen ${signal}`);
      assert.ok(at >= 0 && at < serveAt, `${signal} before serve: ${world.events.join(", ")}`);
    }
    // SIGXFSZ is handled before any file is opened: a file-size limit fails the write, even in
    // a compaction at start.
    const loaded = world.events.indexOf("log outbox_loaded");
    assert.ok(loaded > 0 && world.events.indexOf("listen SIGXFSZ") < loaded);
    await service[Symbol.asyncDispose]();
  }));

Deno.test("a stop signal ends the service: stopping, the server drained, everything closed, stopped", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    {
      await using service = await startService(settingsIn(dir), world.io);
      assert.ok(service);
      world.send("SIGTERM");
      world.send("SIGINT"); // a second stop does nothing more
      await service.finished;
      assert.equal(world.servers[0]!.shutdowns, 1);
    }
    const events = world.logs.map((fields) => fields.event);
    assert.deepEqual(events.slice(-2), ["stopping", "stopped"]);
    assert.equal(world.logs.at(-2)!.signal, "SIGTERM");
    assert.equal(world.held(), 0, "every signal listener is removed");
    // ...last: a second SIGTERM while the queue drains must not find the default action.
    const firstUnlisten = world.events.findIndex((event) => event.startsWith("unlisten"));
    assert.ok(firstUnlisten > world.events.indexOf("cancel summaries"), world.events.join(", "));
    assert.equal(world.cancelled(), world.intervals.length, "every timer is cancelled");
  }));

Deno.test("a stop signal that comes while the port is being listened on stops the service at once", () =>
  inTempDir(async (dir) => {
    let send = (_signal: Deno.Signal) => {};
    const world = fakeWorld({ onServe: () => send("SIGTERM") });
    send = world.send;
    await using service = await startService(settingsIn(dir), world.io);
    assert.ok(service);
    await service.finished;
    assert.equal(world.servers[0]!.shutdowns, 1);
  }));

Deno.test("standard input's end stops the service when it is watched", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const stdin = Promise.withResolvers<void>();
    await using service = await startService(settingsIn(dir), {
      ...world.io,
      stdinEnded: () => stdin.promise,
    });
    assert.ok(service);
    assert.equal(world.servers[0]!.shutdowns, 0);
    stdin.resolve();
    await service.finished;
    assert.equal(world.logs.find((fields) => fields.event === "stopping")?.signal, "stdin_eof");
  }));

Deno.test("a failed listen is logged as listen_failed, and everything opened is closed again", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld({ listen: "fails" });
    const service = await startService(settingsIn(dir), world.io);
    assert.equal(service, undefined);
    assert.equal(world.logs.at(-1)!.event, "listen_failed");
    assert.match(String(world.logs.at(-1)!.error), /address in use/);
    assert.equal(world.held(), 0, "no signal listener is left behind");
    assert.equal(world.cancelled(), world.intervals.length, "every timer is cancelled");
    // The files were closed: a second start on them opens them again and serves.
    const again = fakeWorld();
    await using second = await startService(settingsIn(dir), again.io);
    assert.ok(second);
  }));

Deno.test("a malformed setting stops start-up with config_invalid before any file is created", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const service = await startService(settingsIn(dir, { PORT: "eighty" }), world.io);
    assert.equal(service, undefined);
    assert.deepEqual(world.logs.map((fields) => [fields.event, fields.setting]), [
      ["config_invalid", "PORT"],
    ]);
    assert.deepEqual([...Deno.readDirSync(dir)], []);
    assert.ok(!world.events.includes("serve"));
  }));

Deno.test("a setting beyond the granted permissions stops start-up, naming the setting", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const service = await startService(settingsIn(dir), { ...world.io, granted: () => false });
    assert.equal(service, undefined);
    assert.ok(world.logs.length > 0);
    assert.ok(world.logs.every((fields) => fields.event === "config_invalid"), world.events.join());
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  }));

Deno.test("an unreadable example page stops start-up with example_read_failed, files closed", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const service = await startService(settingsIn(dir, { SERVE_EXAMPLE: "1" }), {
      ...world.io,
      readFile: () => Promise.reject(new Deno.errors.NotFound("no such file")),
    });
    assert.equal(service, undefined);
    assert.equal(world.logs.at(-1)!.event, "example_read_failed");
    assert.ok(!world.events.includes("serve"));
    const again = fakeWorld();
    await using second = await startService(settingsIn(dir), again.io);
    assert.ok(second);
  }));

Deno.test("the service flushes the refusal tally every SUMMARY_INTERVAL_MS, and cancels that at the stop", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    {
      await using service = await startService(settingsIn(dir), world.io);
      assert.ok(service);
      // The summaries, then the block list's refresh (contactd unblock), the spam filter's
      // (contactd train), the database's checkpoint and the forget poll
      // (lib/storage/forget_request.ts).
      assert.deepEqual(world.intervals, [
        SUMMARY_INTERVAL_MS,
        BLOCK_REFRESH_MS,
        BLOCK_REFRESH_MS,
        CHECKPOINT_MS,
        FORGET_POLL_MS,
      ]);
    }
    assert.equal(world.cancelled(), 5);
  }));

Deno.test("RETENTION runs at start, before the service listens, then daily; the stop cancels it", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const file = `${dir}/messages.jsonl`;
    const old = JSON.stringify({ ts: "2000-01-01T00:00:00Z", message: "old" }) + "\n";
    const young = JSON.stringify({ ts: "2999-01-01T00:00:00Z", message: "young" }) + "\n";
    await Deno.writeTextFile(file, old + young, { mode: 0o600 });
    {
      await using service = await startService(settingsIn(dir, { RETENTION: "30d" }), world.io);
      assert.ok(service);
      const retention = world.events.indexOf("log retention");
      assert.ok(retention > 0 && retention < world.events.indexOf("serve"), world.events.join());
      // What the database keeps is aged too: the chat ledger, the block list, the replies and
      // what replies need of a submission.
      assert.deepEqual(world.logs.find((line) => line.event === "retention"), {
        event: "retention",
        removed: 1,
        kept: 1,
        chat: 0,
        blocked: 0,
        replies: 0,
        reply_sources: 0,
        spam_filter: 0,
        cases: 0,
      });
      assert.equal(await Deno.readTextFile(file), young);
      assert.deepEqual(world.intervals, [
        SUMMARY_INTERVAL_MS,
        BLOCK_REFRESH_MS,
        BLOCK_REFRESH_MS,
        CHECKPOINT_MS,
        RETENTION_INTERVAL_MS,
        FORGET_POLL_MS,
      ]);
    }
    assert.equal(world.cancelled(), 6);
  }));

Deno.test("a stop signal while start-up waits for getMe is graceful: the stop signals are listened for first", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const asked = Promise.withResolvers<void>();
    const answer = Promise.withResolvers<Response>();
    const starting = startService(
      settingsIn(dir, {
        MESSENGER_BOT_TOKEN: "123456789:AAE_secret-token-value",
        MESSENGER_CHAT_ID: "-1001234567890",
      }),
      {
        ...world.io,
        fetch: () => {
          world.events.push("fetch");
          asked.resolve();
          return answer.promise;
        },
      },
    );
    await asked.promise;
    // getMe is in flight: a SIGTERM now must find contactd's listener, not the default action.
    assert.ok(world.events.includes("listen SIGTERM"), world.events.join(", "));
    world.send("SIGTERM");
    answer.resolve(Response.json({ ok: true, result: { id: 1, username: "held_bot" } }));
    await using service = await starting;
    assert.ok(service);
    await service.finished;
    assert.equal(world.servers[0]!.shutdowns, 1);
    assert.equal(world.logs.find((fields) => fields.event === "stopping")?.signal, "SIGTERM");
  }));

Deno.test("a database worker that dies stops the service: database_lost logged, health and answers say so meanwhile, stopped by database_lost (exit 1)", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld();
    const never = (signal: AbortSignal | null | undefined) =>
      new Promise<Response>((_, reject) =>
        signal?.addEventListener("abort", () => reject(signal.reason))
      );
    const { started, workers } = await keepingWorkers(() =>
      startService(
        settingsIn(dir, {
          MESSENGER_BOT_TOKEN: "123456789:AAE_secret-token-value",
          MESSENGER_CHAT_ID: "-1001234567890",
        }),
        {
          ...world.io,
          fetch: (input, init) =>
            String(input).endsWith("/getMe")
              ? Promise.resolve(Response.json({ ok: true, result: { id: 1, username: "a_bot" } }))
              : never(init?.signal),
        },
      )
    );
    await using service = started;
    assert.ok(service);
    assert.equal(workers.length, 1, "the store's worker");
    const { handler } = world.servers[0]!;
    const peer = { remoteAddr: { hostname: "127.0.0.1" } };
    const health = async () => {
      const response = await handler(new Request("http://localhost/api/health"), peer);
      return { status: response.status, ok: (await response.json()).ok };
    };
    assert.deepEqual(await health(), { status: 200, ok: true });

    crash(workers[0]!);
    await service.finished;
    assert.equal(service.stoppedBy(), "database_lost");
    const lost = world.logs.find((fields) => fields.event === "database_lost");
    assert.match(String(lost?.error), /Cannot read properties of null/);
    assert.equal(world.logs.find((fields) => fields.event === "stopping")?.signal, "database_lost");
    assert.equal(world.servers[0]!.shutdowns, 1);
    // A request still in flight (a kept-alive connection) is answered honestly meanwhile.
    assert.deepEqual(await health(), { status: 503, ok: false });
    const posted = await handler(
      new Request("http://localhost/api/contact", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "Ann", contact: "ann@example.com", message: "hello" }),
      }),
      peer,
    );
    assert.equal(posted.status, 500, "not accepted: nothing holds it");
    assert.ok(world.logs.some((fields) => fields.event === "outbox_write_failed"));
  }));

Deno.test("a stop whose server a client holds open goes on DRAIN_GRACE_MS after the last answer: connections_cut, then everything closed, stopped", () =>
  inTempDir(async (dir) => {
    const world = fakeWorld({ heldOpen: true });
    const clock = world.io.clock as FakeClock;
    {
      await using service = await startService(settingsIn(dir), world.io);
      assert.ok(service);
      let finished = false;
      void service.finished.then(() => finished = true);
      world.send("SIGTERM");
      await clock.advance(DRAIN_GRACE_MS - 1);
      assert.equal(finished, false);
      await clock.advance(1);
      assert.equal(finished, true);
      assert.equal(world.servers[0]!.shutdowns, 1);
    }
    const events = world.logs.map((fields) => fields.event);
    assert.deepEqual(
      events.slice(events.indexOf("stopping")).filter((event) =>
        ["stopping", "connections_cut", "stopped"].includes(event!)
      ),
      ["stopping", "connections_cut", "stopped"],
    );
    assert.equal(world.held(), 0, "every signal listener is removed");
  }));
