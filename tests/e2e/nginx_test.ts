/**
 * examples/nginx.conf with a real nginx on loopback, the service behind it and the fake Bot API.
 * Clients connect from 127.0.0.2 and 127.0.0.3 (the test task may use these) so the address
 * nginx saw can be told apart from nginx's own, 127.0.0.1.
 */
import assert from "node:assert/strict";
import { ERRORS } from "../../lib/errors.ts";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { type RawResponse, request } from "../support/raw_http.ts";
import { CHAT_ID, freePort, startService, TOKEN } from "../support/service.ts";
import { requireTool, skipWithout } from "../support/tools.ts";

const EXAMPLE = new URL("../../examples/nginx.conf", import.meta.url).pathname;

/** examples/nginx.conf with the deployment's paths and ports replaced by the test's. */
function substitute(example: string, nginxPort: number, servicePort: number, dir: string) {
  const replacements: Array<[string, string]> = [
    ["listen 443 ssl;", `listen 127.0.0.1:${nginxPort};`],
    ["    listen [::]:443 ssl;\n", ""],
    ["    ssl_certificate /etc/letsencrypt/live/example.org/fullchain.pem;\n", ""],
    ["    ssl_certificate_key /etc/letsencrypt/live/example.org/privkey.pem;\n", ""],
    ["server 127.0.0.1:8787;", `server 127.0.0.1:${servicePort};`],
    ["root /var/www/example.org;", `root ${dir}/www;`],
  ];
  let config = example;
  for (const [from, to] of replacements) {
    // Each must match once: a changed example fails here rather than testing something else.
    assert.equal(config.split(from).length, 2, `examples/nginx.conf: "${from.trim()}" once`);
    config = config.replace(from, to);
  }
  return config;
}

Deno.test({
  name:
    "examples/nginx.conf: real address recorded, spoofed X-Forwarded-For ignored, 20 KiB refused with 413, health answers",
  ignore: skipWithout("nginx"),
  fn: async () => {
    const nginxBin = requireTool("nginx", "nginx");
    const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
    const service = await startService({
      MESSENGER_BOT_TOKEN: TOKEN,
      MESSENGER_CHAT_ID: String(CHAT_ID),
      MESSENGER_API_URL: fake.url,
    });
    const dir = await Deno.makeTempDir({ prefix: "contactd-nginx-" });
    await Deno.chmod(dir, 0o755); // nginx workers may run as another user when we are root
    await Deno.mkdir(`${dir}/www`);
    const port = freePort();
    await Deno.writeTextFile(
      `${dir}/contactd.conf`,
      substitute(await Deno.readTextFile(EXAMPLE), port, Number(new URL(service.url).port), dir),
    );
    // Everything nginx writes stays in the temp dir: pid, logs, temp paths.
    await Deno.writeTextFile(
      `${dir}/nginx.conf`,
      `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log notice;
events { worker_connections 64; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  include ${dir}/contactd.conf;
}
`,
    );
    const nginx = new Deno.Command(nginxBin, {
      args: ["-p", `${dir}/`, "-c", `${dir}/nginx.conf`, "-e", `${dir}/error.log`],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const post = (from: string, body: unknown, headers: Record<string, string> = {}) =>
      request(port, from, "POST", "/api/contact", {
        "Content-Type": "application/json",
        ...headers,
      }, JSON.stringify(body));
    try {
      // 4. Health answers through the proxy (also: wait for nginx to listen).
      let health: RawResponse | undefined;
      for (let i = 0; i < 100 && health === undefined; i++) {
        health = await request(port, "127.0.0.2", "GET", "/api/health").catch(() => undefined);
        if (health === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.ok(health, await Deno.readTextFile(`${dir}/error.log`).catch(() => ""));
      assert.equal(health.status, 200);
      assert.deepEqual(JSON.parse(health.body), { ok: true, configured: true });
      assert.equal(health.headers.get("cache-control"), "no-store");
      assert.equal(health.headers.get("x-content-type-options"), "nosniff");

      // 1. A submission through nginx records the client's address as nginx saw it.
      const first = await post("127.0.0.2", { name: "Ann", message: "via nginx" });
      assert.equal(first.status, 200, first.body);
      assert.equal(first.body, '{"ok":true}');
      // The proxy adds the security header contactd leaves to it.
      assert.equal(first.headers.get("x-content-type-options"), "nosniff");
      assert.equal((await service.records())[0]!.ip, "127.0.0.2");
      assert.match(fake.delivered[0]!, /^IP: 127\.0\.0\.2$/m);

      // 2. Spoofed X-Forwarded-For / X-Real-IP cannot move the client to another bucket.
      for (let i = 1; i <= 5; i++) {
        const spoofed = `203.0.113.${i}`;
        const response = await post("127.0.0.3", { message: `spoof ${i}` }, {
          "X-Forwarded-For": `${spoofed}, 198.51.100.${i}`,
          "X-Real-IP": spoofed,
        });
        assert.equal(response.status, 200, response.body);
      }
      const sixth = await post("127.0.0.3", { message: "spoof 6" }, {
        "X-Forwarded-For": "192.0.2.99",
        "X-Real-IP": "192.0.2.99",
      });
      assert.equal(sixth.status, 429);
      assert.equal(JSON.parse(sixth.body).error, "rate_limited");
      assert.match(sixth.headers.get("retry-after") ?? "", /^\d+$/);
      const records = await service.records();
      assert.deepEqual(records.slice(1).map((record) => record.ip), Array(5).fill("127.0.0.3"));
      // Another real client still has its own bucket.
      assert.equal((await post("127.0.0.2", { message: "neighbour" })).status, 200);

      // 3. A 20 KiB body is refused by nginx (413, the service's JSON) and never reaches it.
      const callsBefore = fake.calls.length;
      const recordsBefore = (await service.records()).length;
      const big = JSON.stringify({ message: "x".repeat(20 * 1024) });
      for (let i = 0; i < 3; i++) {
        for (const chunked of [false, true]) {
          const refused = await request(
            port,
            "127.0.0.2",
            "POST",
            "/api/contact",
            {
              "Content-Type": "application/json",
            },
            big,
            chunked,
          );
          assert.equal(refused.status, 413);
          assert.equal(refused.headers.get("content-type"), "application/json");
          assert.equal(refused.headers.get("x-content-type-options"), "nosniff");
          assert.deepEqual(JSON.parse(refused.body), {
            ok: false,
            error: "payload_too_large",
            message: ERRORS.payload_too_large.message,
          });
        }
      }
      assert.equal(fake.calls.length, callsBefore);
      assert.equal((await service.records()).length, recordsBefore);
      // 2 counted POSTs + 6 refused bodies: had the service seen them, this would be a 429.
      assert.equal((await post("127.0.0.2", { message: "small" })).status, 200);

      // Nothing but the two locations reaches the service.
      const other = await request(port, "127.0.0.2", "GET", "/api/contact/../health/x");
      assert.equal(other.status, 404);
      assert.ok(!other.body.startsWith("{"), other.body);
    } finally {
      nginx.kill("SIGTERM");
      const output = await nginx.output();
      const errorLog = await Deno.readTextFile(`${dir}/error.log`).catch(() => "");
      await service.stop();
      await fake.close();
      await Deno.remove(dir, { recursive: true });
      assert.ok(!/\[(emerg|alert|crit)\]/.test(errorLog), errorLog);
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr) + errorLog);
    }
  },
});

Deno.test("examples/nginx.conf proxies exactly the two API paths with the client's address, scheme and limits", async () => {
  const config = await Deno.readTextFile(EXAMPLE);
  const directives = config.split("\n").map((line) => line.replace(/#.*/, "").trim()).filter(
    Boolean,
  );
  const locations = directives.filter((line) => line.startsWith("location "));
  assert.deepEqual(locations, [
    "location = /api/contact {",
    "location = /api/health {",
    "location @contactd_too_large {",
  ]);
  for (
    const line of [
      "client_max_body_size 16k;",
      "proxy_set_header X-Real-IP $remote_addr;",
      "proxy_set_header X-Forwarded-For $remote_addr;",
      "proxy_set_header X-Forwarded-Proto $scheme;",
      "proxy_connect_timeout 5s;",
      "proxy_read_timeout 60s;",
      "client_body_timeout 10s;",
    ]
  ) assert.ok(directives.includes(line), `missing ${line}`);
  // Appending would keep what the client wrote in front of the real address.
  assert.ok(!config.includes("$proxy_add_x_forwarded_for;"));
  assert.equal(directives.filter((line) => line === "proxy_pass http://contactd;").length, 2);
});
