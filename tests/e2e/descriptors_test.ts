/**
 * End to end: running out of file descriptors (more idle connections than RLIMIT_NOFILE) must
 * not end the service; it serves again once the connections close, its memory intact.
 */
import assert from "node:assert/strict";
import { withService } from "../support/service.ts";
import { skipWithout } from "../support/tools.ts";

const prlimitTest = skipWithout("prlimit") ? Deno.test.ignore : Deno.test;

prlimitTest(
  "e2e: 300 idle connections under --nofile=128 do not end the process; health answers once they close",
  async () => {
    await withService({}, async (service) => {
      const port = Number(new URL(service.url).port);
      // A rate-limit entry that must survive: 5 POSTs from one address, the 6th is refused.
      for (let i = 0; i < 5; i++) {
        const response = await service.post({ message: `m${i}` }, "198.51.100.44");
        assert.equal(response.status, 200);
        await response.body?.cancel();
      }
      const limit = await new Deno.Command("prlimit", {
        args: [`--pid=${service.process.pid}`, "--nofile=128:128"],
      }).output();
      assert.ok(limit.success, new TextDecoder().decode(limit.stderr));

      let exited = false;
      service.process.status.then(() => (exited = true));
      const idle: Deno.TcpConn[] = [];
      for (let i = 0; i < 300; i++) {
        // Some connects are refused while the service is between two listeners.
        const conn = await Deno.connect({ hostname: "127.0.0.1", port }).catch(() => undefined);
        if (conn !== undefined) idle.push(conn);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.ok(!exited, `the service ended:\n${service.stderr.join("\n")}`);
      assert.ok(
        service.logs().some((log) => log.event === "serve_failed" && log.stage === "accept"),
        "the descriptor shortage is logged",
      );
      for (const conn of idle) conn.close();

      let health: Response | undefined;
      for (let i = 0; i < 100 && health?.status !== 200; i++) {
        await health?.body?.cancel();
        health = await fetch(`${service.url}/api/health`).catch(() => undefined);
        if (health?.status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal(health?.status, 200, service.stderr.join("\n"));
      assert.deepEqual(await health!.json(), {
        ok: true,
        configured: true,
        delivery: "ok",
        pending: 0,
      });
      const sixth = await service.post({ message: "sixth" }, "198.51.100.44");
      assert.equal(sixth.status, 429, "the rate limit's memory was kept");
      await sixth.body?.cancel();
      assert.ok(!exited);
      // Rate-limited: one line, however many accepts failed.
      const failed = service.logs().filter((log) => log.event === "serve_failed");
      assert.equal(failed.length, 1, JSON.stringify(failed));
    });
  },
);
