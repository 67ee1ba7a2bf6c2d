import assert from "node:assert/strict";
import { serial } from "../../lib/common/serial.ts";

Deno.test("tasks run one after another in call order, a failure reaching its caller only", async () => {
  const run = serial();
  const order: string[] = [];
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const first = run(async () => {
    order.push("first starts");
    await held;
    order.push("first ends");
    return 1;
  });
  const second = run(() => Promise.reject(new Error("second fails")));
  const third = run(() => {
    order.push("third");
    return Promise.resolve(3);
  });
  await Promise.resolve();
  assert.deepEqual(order, ["first starts"], "nothing overtakes a task under way");
  release();
  assert.equal(await first, 1);
  await assert.rejects(second, /second fails/);
  assert.equal(await third, 3);
  assert.deepEqual(order, ["first starts", "first ends", "third"]);
});
