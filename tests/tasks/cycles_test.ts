import assert from "node:assert/strict";
import { findCycles, LAYERS, layerViolations } from "../../tasks/cycles.ts";

const graph = (edges: Record<string, string[]>) => new Map(Object.entries(edges));

Deno.test("the layer check accepts imports of the same folder and of lower layers", () => {
  assert.deepEqual(
    layerViolations(graph({
      "lib/http/contact.ts": ["lib/http/body.ts", "lib/common/json.ts", "lib/delivery/queue.ts"],
      "lib/service/service.ts": ["lib/http/handler.ts", "lib/config/config.ts"],
      "lib/delivery/queue.ts": ["lib/delivery/_waiter.ts", "lib/storage/outbox.ts"],
      "main.ts": ["lib/service/service.ts", "lib/cli/cli.ts"],
    })),
    [],
  );
});

Deno.test("the layer check refuses a module that imports a higher layer", () => {
  const found = layerViolations(graph({
    "lib/config/permissions.ts": ["lib/storage/outbox.ts"],
    "lib/common/json.ts": ["lib/log/logger.ts"],
  }));
  assert.deepEqual(found, [
    "lib/common/json.ts imports lib/log/logger.ts: lib/log/ is a higher layer",
    "lib/config/permissions.ts imports lib/storage/outbox.ts: lib/storage/ is a higher layer",
  ]);
});

Deno.test("the layer check refuses an import between two folders of one layer", () => {
  assert.deepEqual(layerViolations(graph({ "lib/form/form_post.ts": ["lib/net/ip.ts"] })), [
    "lib/form/form_post.ts imports lib/net/ip.ts: lib/net/ is of the same layer",
  ]);
});

Deno.test("the layer check refuses another folder's private _ file, even of a lower layer", () => {
  assert.deepEqual(
    layerViolations(graph({ "lib/http/contact.ts": ["lib/delivery/_waiter.ts"] })),
    ["lib/http/contact.ts imports lib/delivery/_waiter.ts: a private file of lib/delivery/"],
  );
});

Deno.test("the layer check refuses lib/ importing main.ts, and a lib/ file outside the table", () => {
  assert.deepEqual(
    layerViolations(graph({
      "lib/cli/cli.ts": ["main.ts"],
      "lib/stray.ts": [],
      "lib/extras/thing.ts": ["lib/common/json.ts"],
    })),
    [
      "lib/cli/cli.ts imports main.ts: nothing in lib/ imports main.ts",
      "lib/extras/thing.ts: lib/extras is not a topic folder of LAYERS (tasks/cycles.ts)",
      "lib/stray.ts: lib/ is not a topic folder of LAYERS (tasks/cycles.ts)",
    ],
  );
});

Deno.test("the layer check leaves tests, tasks and bench free to import any layer", () => {
  assert.deepEqual(
    layerViolations(graph({
      "tests/service/service_test.ts": ["lib/service/service.ts", "lib/delivery/_waiter.ts"],
      "tasks/launch.ts": ["lib/config/config.ts"],
      "bench/run.ts": ["lib/http/handler.ts"],
    })),
    [],
  );
});

Deno.test("every topic folder of lib/ has a layer in tasks/cycles.ts, and no layer names a missing one", () => {
  const folders = [...Deno.readDirSync(new URL("../../lib/", import.meta.url))]
    .filter((entry) => entry.isDirectory).map((entry) => entry.name).sort();
  assert.deepEqual(LAYERS.flat().sort(), folders);
});

Deno.test("the cycle check finds a cycle of two modules and a self-import, and nothing in a tree", () => {
  assert.deepEqual(findCycles(graph({ a: ["b"], b: ["a"], c: ["c"], d: ["a"] })), [
    ["a", "b"],
    ["c"],
  ]);
  assert.deepEqual(findCycles(graph({ a: ["b", "c"], b: ["c"], c: [] })), []);
});
