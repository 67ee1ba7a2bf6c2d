import assert from "node:assert/strict";
import {
  call,
  databaseHeld,
  followUpRefusal,
  openLocalStore,
  openWorkerStore,
  type Store,
  StoreError,
} from "../../lib/storage/store.ts";
import { crash, keepingWorkers } from "../support/workers.ts";
import { DatabaseRefused, openDatabase } from "../../lib/storage/sqlite/database.ts";
import { runBatch } from "../../lib/storage/sqlite/operations.ts";
import { SCHEMA_VERSION } from "../../lib/storage/sqlite/schema.ts";

/** The error `promise` rejects with, checked to be a StoreError. */
async function rejection(
  make: () => Promise<unknown>,
  _type: typeof StoreError,
): Promise<StoreError> {
  try {
    await make();
  } catch (error) {
    assert.ok(error instanceof StoreError, String(error));
    return error;
  }
  throw new assert.AssertionError({ message: "did not reject" });
}

const submission = (id: string) => ({
  id,
  ts: "2026-11-27T10:00:00Z",
  submission: JSON.stringify({
    name: "Ann",
    contact: "",
    message: `secret-${id}`,
    ip: "192.0.2.1",
  }),
});

Deno.test("the database is created 0600 (SQLite alone makes 0644 under umask 022), in WAL mode, at the schema's version", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await openWorkerStore(`${dir}/m.jsonl.db`, { create: true });
    assert.deepEqual(store.opened, { mode: 0o600, created: true, fromVersion: 0 });
    await store.run("outbox.add", submission("a1"));
    await store.close();
    assert.deepEqual((await Deno.stat(`${dir}/m.jsonl.db`)).mode! & 0o777, 0o600);
    const { db } = openDatabase(`${dir}/m.jsonl.db`, { create: false });
    assert.deepEqual(db.prepare("PRAGMA journal_mode").get()?.journal_mode, "wal");
    assert.deepEqual(db.prepare("PRAGMA user_version").get()?.user_version, SCHEMA_VERSION);
    db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a symbolic link at the database's path is refused, even a dangling one, and nothing is created", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.symlink(`${dir}/elsewhere.db`, `${dir}/m.jsonl.db`);
    const error = await rejection(
      () => openWorkerStore(`${dir}/m.jsonl.db`, { create: true }),
      StoreError,
    );
    assert.deepEqual(error.reason, "link");
    await assert.rejects(() => Deno.lstat(`${dir}/elsewhere.db`), Deno.errors.NotFound);
    assert.throws(() => openDatabase(`${dir}/m.jsonl.db`, { create: true }), DatabaseRefused);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a database of a newer schema is refused: downgrading is not supported", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { db } = openDatabase(`${dir}/m.db`, { create: true });
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    const error = await rejection(
      () => openWorkerStore(`${dir}/m.db`, { create: true }),
      StoreError,
    );
    assert.deepEqual(error.reason, "newer");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a damaged database is refused at start by quick_check", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/m.db`;
    const store = openLocalStore(path, { create: true });
    for (let i = 0; i < 200; i++) await store.run("outbox.add", submission(`id${i}`));
    await store.checkpoint();
    await store.close();
    const bytes = await Deno.readFile(path);
    // Scribble over the pages after the first (the header stays readable).
    for (let i = 4096; i < bytes.length; i += 7) bytes[i] = 0x5a;
    await Deno.writeFile(path, bytes);
    const error = await rejection(
      () => openWorkerStore(path, { create: false }),
      StoreError,
    );
    assert.ok(
      error.reason === "damaged" || /malformed|corrupt/i.test(error.message),
      error.message,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("concurrent requests to the worker are each answered with their own result", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await openWorkerStore(`${dir}/m.db`, { create: true });
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.run("outbox.add", submission(`c${i}`))),
    );
    assert.deepEqual(await store.run("outbox.waiting", undefined), 50);
    const text = await store.run("outbox.read", { id: "c7" });
    assert.deepEqual(JSON.parse(text!).message, "secret-c7");
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a transaction's calls succeed or fail together; a failing request leaves the others of its batch", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await openWorkerStore(`${dir}/m.db`, { create: true });
    const bad = store.transaction([
      call("outbox.add", submission("t1")),
      call("meta.set", { key: "k", value: null as unknown as string }), // NOT NULL: fails
    ]);
    const good = store.run("outbox.add", submission("t2"));
    await assert.rejects(() => bad, StoreError);
    await good;
    assert.deepEqual(await store.run("outbox.read", { id: "t1" }), undefined);
    assert.ok((await store.run("outbox.read", { id: "t2" })) !== undefined);
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a deleted row's text is gone from the database and its log after a checkpoint", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/m.db`;
    const store = await openWorkerStore(path, { create: true });
    await store.run("outbox.add", submission("gone1"));
    await store.run("outbox.forget", { ids: ["gone1"] });
    await store.checkpoint();
    for (const file of [path, `${path}-wal`]) {
      const bytes = await Deno.readFile(file).catch(() => new Uint8Array());
      assert.ok(!new TextDecoder("latin1").decode(bytes).includes("secret-gone1"), file);
    }
    await store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("after close, calls reject and close again does nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const store = await openWorkerStore(`${dir}/m.db`, { create: true });
    await store.close();
    await store.close();
    await assert.rejects(() => store.run("outbox.waiting", undefined), StoreError);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a symbolic link at the database's -wal or -shm is refused, its target untouched", async () => {
  for (const companion of ["-wal", "-shm"]) {
    const dir = await Deno.makeTempDir();
    try {
      const path = `${dir}/m.db`;
      const made = openLocalStore(path, { create: true });
      await made.close();
      await Deno.writeTextFile(`${dir}/target`, "untouched");
      await Deno.symlink(`${dir}/target`, `${path}${companion}`);
      const error = await rejection(() => openWorkerStore(path, { create: true }), StoreError);
      assert.equal(error.reason, "link", companion);
      assert.equal(await Deno.readTextFile(`${dir}/target`), "untouched");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("a database removed under the worker (the file alone, or its directory) is written anew at its path from the open connection: nothing lost, 0600; while the path cannot take a file, writes fail", async () => {
  for (const what of ["file", "directory"]) {
    const dir = await Deno.makeTempDir();
    try {
      const data = `${dir}/data`;
      await Deno.mkdir(data);
      const path = `${data}/m.db`;
      const store = await openWorkerStore(path, { create: true });
      for (let i = 0; i < 20; i++) await store.run("outbox.add", submission(`${what}${i}`));
      if (what === "file") {
        await Deno.remove(path); // its -wal and -shm stay
      } else {
        await Deno.remove(data, { recursive: true });
        await assert.rejects(() => store.run("outbox.add", submission("lost")), StoreError);
        await Deno.mkdir(data);
      }
      await store.run("outbox.add", submission(`${what}-after`));
      assert.equal((await Deno.stat(path)).mode! & 0o777, 0o600, what);
      await store.close();
      const reopened = openLocalStore(path, { create: false });
      assert.equal(await reopened.run("outbox.waiting", undefined), 21, what);
      await reopened.close();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("runBatch runs a batch's requests in one transaction, each in its savepoint: a request that fails is rolled back alone, its calls all or none", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { db } = openDatabase(`${dir}/m.db`, { create: true });
    const add = (id: string) => ({ op: "outbox.add", args: submission(id) });
    const outcomes = runBatch(db, [
      [add("r1")],
      [add("r2"), { op: "no.such", args: undefined }],
      [add("r3")],
    ]);
    assert.deepEqual(outcomes.map((outcome) => outcome.ok), [true, false, true]);
    const ids = db.prepare("SELECT id FROM outbox ORDER BY seq").all().map((row) => row.id);
    assert.deepEqual(ids, ["r1", "r3"], "r2 went with its request's failing call");
    assert.equal(db.isTransaction, false);
    db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a service's hold on the database refuses a second holder, and a command's connection still writes beside it", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/m.jsonl.db`;
  try {
    const service = await openWorkerStore(path, { create: true, hold: true });
    // Asked from another process, as a command asks (never from one with the database open).
    assert.equal(await _heldFromAnotherProcess(path), true);
    const second = await rejection(
      () => openWorkerStore(path, { create: true, hold: true }),
      StoreError,
    );
    assert.equal(second.reason, "held");
    // A command (no hold) works alongside, in WAL mode: the hold is not SQLite's lock.
    const command = openLocalStore(path, { create: false });
    await command.run("outbox.add", submission("c1"));
    await command.close();
    assert.equal(await service.run("outbox.waiting", undefined), 1);
    await service.close();
    assert.equal(databaseHeld(path), false, "released with the service");
    const next = await openWorkerStore(path, { create: false, hold: true });
    await next.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** `databaseHeld(path)` as another process sees it. */
async function _heldFromAnotherProcess(path: string): Promise<boolean> {
  const store = new URL("../../lib/storage/store.ts", import.meta.url).href;
  const { stdout } = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { databaseHeld } from ${JSON.stringify(store)}; ` +
      `console.log(databaseHeld(${JSON.stringify(path)}));`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return new TextDecoder().decode(stdout).trim() === "true";
}

Deno.test("a worker that ends unasked (a defect) fails what waits and what comes, and the store says it is lost", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const { started: store, workers } = await keepingWorkers(() =>
      openWorkerStore(`${dir}/m.db`, { create: true })
    );
    assert.equal(store.isLost(), false);
    const waiting = store.run("outbox.add", submission("w1"));
    crash(workers[0]!);
    const lost = await store.lost;
    assert.ok(lost instanceof StoreError);
    assert.match(lost.message, /Cannot read properties of null/);
    assert.equal(store.isLost(), true);
    assert.equal(await waiting.catch((error) => error), lost);
    assert.equal(await store.run("outbox.waiting", undefined).catch((error) => error), lost);
    await store.close(); // nothing left to close: at once
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a follow-up the database refuses keeps its reason across the worker and in a command's store", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/m.db`;
    const worker = await openWorkerStore(path, { create: true });
    const local = openLocalStore(path, { create: false });
    const open = { id: "a1", hash: new Uint8Array(32), ts: "2026-11-27T10:00:00Z", form: null };
    await worker.run("cases.open", { ...open, message: "first" });
    const followUp = (store: Store, caseId: string, ref: string) =>
      store.run("cases.followUp", {
        caseId,
        ref,
        ts: "2026-11-27T10:01:00Z",
        author: "sender",
        text: ref,
        max: 1,
      }).then(() => undefined, followUpRefusal);
    for (const store of [worker, local]) {
      assert.equal(await followUp(store, "a1", "f1"), "case_waiting");
      assert.equal(await followUp(store, "gone", "f2"), "case_gone");
    }
    assert.equal(followUpRefusal(new Error("the case is gone")), undefined);
    await local.close();
    await worker.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
