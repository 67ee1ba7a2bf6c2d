import assert from "node:assert/strict";
import { serviceSignals } from "../../lib/service/signals.ts";

Deno.test("on Linux and macOS SIGTERM, SIGINT and SIGHUP stop the service and SIGXFSZ is handled", () => {
  for (const os of ["linux", "darwin"] as const) {
    const signals = serviceSignals(os);
    assert.deepEqual([...signals.stop].sort(), ["SIGHUP", "SIGINT", "SIGTERM"]);
    assert.deepEqual(signals.ignore, ["SIGXFSZ"]);
  }
});

Deno.test("on Windows only SIGINT and SIGBREAK are listened for (Deno throws for any other there)", () => {
  const signals = serviceSignals("windows");
  assert.deepEqual([...signals.stop].sort(), ["SIGBREAK", "SIGINT"]);
  assert.deepEqual(signals.ignore, []);
});

Deno.test("every signal listed for this OS can be listened for here", () => {
  const { stop, ignore } = serviceSignals(Deno.build.os);
  for (const signal of [...stop, ...ignore]) {
    const listener = () => {};
    Deno.addSignalListener(signal, listener);
    Deno.removeSignalListener(signal, listener);
  }
});
