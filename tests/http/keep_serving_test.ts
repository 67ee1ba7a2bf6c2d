import assert from "node:assert/strict";
import {
  keepServing,
  LOG_EVERY_MS,
  RETRY_MAX_MS,
  RETRY_MIN_MS,
  type Serving,
} from "../../lib/http/keep_serving.ts";
import type { LogFields, LogLevel } from "../../lib/log/logger.ts";

const EMFILE = new Error("Too many open files (os error 24)");

/** A server whose accept loop the test ends (`fail`) or that shuts down on request. */
function fakeServer() {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const finished = new Promise<void>((yes, no) => [resolve, reject] = [yes, no]);
  let shutdowns = 0;
  const server: Serving & { fail(error: unknown): void; readonly shutdowns: number } = {
    finished,
    shutdown() {
      shutdowns++;
      resolve();
      return finished;
    },
    fail: (error) => reject(error),
    get shutdowns() {
      return shutdowns;
    },
  };
  return server;
}

/** keepServing with a fake clock, fake servers and a sleep that only records its pauses. */
function harness(listenFails: (attempt: number) => boolean = () => false) {
  const state = {
    now: 0,
    pauses: [] as number[],
    servers: [fakeServer()],
    attempts: 0,
    logs: [] as Array<{ level: LogLevel } & LogFields>,
  };
  const kept = keepServing({
    first: state.servers[0]!,
    start: () => {
      state.attempts++;
      if (listenFails(state.attempts)) throw EMFILE;
      const server = fakeServer();
      state.servers.push(server);
      return server;
    },
    log: (level, fields) => state.logs.push({ level, ...fields }),
    now: () => state.now,
    sleep: (ms, signal) => {
      state.pauses.push(ms);
      state.now += ms;
      return signal.aborted ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, 0));
    },
  });
  return { state, kept };
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));

Deno.test("keepServing listens again when the accept loop fails (out of descriptors) instead of rejecting", async () => {
  const { state, kept } = harness();
  state.servers[0]!.fail(EMFILE);
  await settle();
  assert.equal(state.servers.length, 2, "a second server listens");
  assert.deepEqual(state.pauses, [RETRY_MIN_MS]);
  assert.equal(state.logs.length, 1);
  assert.equal(state.logs[0]!.level, "error");
  assert.equal(state.logs[0]!.event, "serve_failed");
  assert.equal(state.logs[0]!.stage, "accept");
  assert.match(String(state.logs[0]!.error), /Too many open files/);
  kept.shutdown();
  await kept.finished; // resolves: no rejection reaches `await server.finished`
  assert.equal(state.servers[1]!.shutdowns, 1);
});

Deno.test("keepServing retries a failing listen with pauses doubling up to 5 s", async () => {
  const { state, kept } = harness((attempt) => attempt <= 8);
  state.servers[0]!.fail(EMFILE);
  for (let i = 0; i < 30 && state.servers.length < 2; i++) await settle();
  assert.equal(state.servers.length, 2);
  assert.equal(state.attempts, 9);
  assert.deepEqual(state.pauses, [100, 200, 400, 800, 1600, 3200, RETRY_MAX_MS, 5000, 5000]);
  kept.shutdown();
  await kept.finished;
});

Deno.test("keepServing logs at most one serve_failed line a minute and counts the rest", async () => {
  const { state, kept } = harness((attempt) => attempt <= 40);
  state.servers[0]!.fail(EMFILE);
  for (let i = 0; i < 100 && state.servers.length < 2; i++) await settle();
  const failed = state.logs.filter((log) => log.event === "serve_failed");
  // 41 failures (one accept, 40 listens) over 181.3 s of pauses: at 0 s, 61.3 s and 121.3 s.
  assert.equal(LOG_EVERY_MS, 60_000);
  assert.equal(state.now, 181_300);
  assert.deepEqual(failed.map((log) => log.repeats), [undefined, 16, 11]);
  assert.deepEqual(failed.map((log) => log.stage), ["accept", "listen", "listen"]);
  kept.shutdown();
  await kept.finished;
});

Deno.test("keepServing shut down during a pause never listens again, and finishes", async () => {
  const { state, kept } = harness(() => true);
  state.servers[0]!.fail(EMFILE);
  await settle();
  kept.shutdown();
  const attempts = state.attempts;
  await kept.finished;
  await settle();
  assert.equal(state.attempts, attempts);
  assert.equal(state.servers.length, 1);
});

Deno.test("keepServing's shutdown drains the current server and resolves finished", async () => {
  const { state, kept } = harness();
  kept.shutdown();
  await kept.finished;
  assert.equal(state.servers[0]!.shutdowns, 1);
  assert.deepEqual(state.pauses, []);
  assert.deepEqual(state.logs, []);
});

Deno.test("keepServing logs a shutdown whose accept loop fails as serve_shutdown_failed, once", async () => {
  const { state, kept } = harness();
  const server = state.servers[0]!;
  server.shutdown = () => {
    server.fail(EMFILE);
    return server.finished;
  };
  kept.shutdown();
  await kept.finished;
  await settle();
  assert.deepEqual(
    state.logs.map((log) => [log.level, log.event, log.error]),
    [["error", "serve_shutdown_failed", `Error: ${EMFILE.message}`]],
  );
});
