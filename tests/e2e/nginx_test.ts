/**
 * examples/nginx.conf with a real nginx on loopback, the service behind it and the fake Bot API,
 * in each documented client-address setup (REAL_IP_HEADER, TRUSTED_PROXIES), with headers the
 * client forged. Clients connect from 127.0.0.2 and 127.0.0.3 (the test task may use these) so
 * the address nginx saw can be told apart from nginx's own, 127.0.0.1.
 */
import assert from "node:assert/strict";
import { ERRORS } from "../../lib/http/errors.ts";
import { solvedAltcha } from "../support/altcha.ts";
import { startFakeBotApi } from "../support/fake_bot_api.ts";
import { type RawResponse, request } from "../support/raw_http.ts";
import { CHAT_ID, freePort, type Service, startService, TOKEN } from "../support/service.ts";
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

/** Runs nginx with `site` (one rewritten copy of the example) until `stop` is called. */
async function startNginx(site: string) {
  const nginxBin = requireTool("nginx");
  const dir = await Deno.makeTempDir({ prefix: "contactd-nginx-" });
  await Deno.chmod(dir, 0o755); // nginx workers may run as another user when we are root
  await Deno.mkdir(`${dir}/www`);
  await Deno.writeTextFile(`${dir}/contactd.conf`, site.replaceAll("@DIR@", dir));
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
  return {
    dir,
    async stop() {
      nginx.kill("SIGTERM");
      const output = await nginx.output();
      const errorLog = await Deno.readTextFile(`${dir}/error.log`).catch(() => "");
      await Deno.remove(dir, { recursive: true });
      assert.ok(!/\[(emerg|alert|crit)\]/.test(errorLog), errorLog);
      assert.equal(output.code, 0, new TextDecoder().decode(output.stderr) + errorLog);
    },
  };
}

/** Health through `port`, retried while nginx starts. */
async function healthVia(port: number): Promise<RawResponse> {
  for (let i = 0; i < 100; i++) {
    const health = await request(port, "127.0.0.2", "GET", "/api/health").catch(() => undefined);
    if (health !== undefined && health.status !== 502) return health;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no answer through nginx on ${port}`);
}

const post = (port: number, from: string, body: unknown, headers: Record<string, string> = {}) =>
  request(port, from, "POST", "/api/contact", {
    "Content-Type": "application/json",
    ...headers,
  }, JSON.stringify(body));

/**
 * From `from`, 5 POSTs forging X-Forwarded-For and X-Real-IP (each time another address), then
 * a 6th: it must be refused (one bucket) and every record must carry `from`.
 */
async function assertForgeryFails(service: Service, port: number, from: string) {
  const before = (await service.records()).length;
  for (let i = 1; i <= 5; i++) {
    const response = await post(port, from, { message: `forged ${i}` }, {
      "X-Forwarded-For": `203.0.113.${i}, 198.51.100.${i}`,
      "X-Real-IP": `192.0.2.${i}`,
    });
    assert.equal(response.status, 200, response.body);
  }
  const sixth = await post(port, from, { message: "forged 6" }, {
    "X-Forwarded-For": "192.0.2.99",
    "X-Real-IP": "192.0.2.99",
  });
  assert.equal(sixth.status, 429, sixth.body);
  assert.equal(JSON.parse(sixth.body).error, "rate_limited");
  const records = (await service.records()).slice(before);
  assert.deepEqual(records.map((record) => record.ip), Array(5).fill(from));
}

/** The example for one setup: the service (and nginx) it proxies to, minus `drop` lines. */
async function exampleFor(nginxPort: number, upstreamPort: number, drop: string[] = []) {
  const dropped = drop.reduce((config, line) => {
    assert.equal(config.split(line).length, 2, `examples/nginx.conf: "${line.trim()}" once`);
    return config.replace(line, "");
  }, await Deno.readTextFile(EXAMPLE));
  return substitute(dropped, nginxPort, upstreamPort, "@DIR@");
}

/** A configured service on loopback with `settings` and the fake Bot API, for `run`. */
async function withConfiguredService(
  settings: Record<string, string>,
  run: (service: Service, fake: ReturnType<typeof startFakeBotApi>) => Promise<void>,
) {
  const fake = startFakeBotApi({ token: TOKEN, chatId: CHAT_ID });
  const service = await startService({
    MESSENGER_BOT_TOKEN: TOKEN,
    MESSENGER_CHAT_ID: String(CHAT_ID),
    MESSENGER_API_URL: fake.url,
    ...settings,
  });
  try {
    await run(service, fake);
  } finally {
    await service.stop();
    await fake.close();
    await Deno.remove(service.dir, { recursive: true });
  }
}

const portOf = (service: Service) => Number(new URL(service.url).port);

Deno.test({
  name:
    "examples/nginx.conf as shipped: real address recorded, forged X-Forwarded-For/X-Real-IP ignored, 20 KiB refused with 413, health answers",
  ignore: skipWithout("nginx"),
  fn: async () => {
    await withConfiguredService({ TRUSTED_PROXIES: "127.0.0.1" }, async (service, fake) => {
      const port = freePort();
      const nginx = await startNginx(await exampleFor(port, portOf(service)));
      try {
        // 4. Health answers through the proxy (also: wait for nginx to listen).
        const health = await healthVia(port);
        assert.equal(health.status, 200);
        assert.deepEqual(JSON.parse(health.body), {
          ok: true,
          configured: true,
          delivery: "ok",
          pending: 0,
        });
        assert.equal(health.headers.get("cache-control"), "no-store");
        assert.equal(health.headers.get("x-content-type-options"), "nosniff");

        // 1. A submission through nginx records the client's address as nginx saw it.
        const first = await post(port, "127.0.0.2", { name: "Ann", message: "via nginx" });
        assert.equal(first.status, 200, first.body);
        assert.match(first.body, /^\{"ok":true,"case_url":"\/api\/case\/[A-Za-z0-9_-]{32}"\}$/); // with its case page
        // The proxy adds the security header contactd leaves to it.
        assert.equal(first.headers.get("x-content-type-options"), "nosniff");
        assert.equal((await service.records())[0]!.ip, "127.0.0.2");
        assert.match(fake.delivered[0]!, /^IP: 127\.0\.0\.2$/m);

        // 2. Forged X-Forwarded-For / X-Real-IP cannot move the client to another bucket.
        await assertForgeryFails(service, port, "127.0.0.3");
        // Another real client still has its own bucket.
        assert.equal((await post(port, "127.0.0.2", { message: "neighbour" })).status, 200);

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
        assert.equal((await post(port, "127.0.0.2", { message: "small" })).status, 200);

        // Nothing outside /api/ reaches the service: dot segments are resolved first.
        for (const path of ["/api/../health", "/api/contact/../../x", "/apix/contact"]) {
          const other = await request(port, "127.0.0.2", "GET", path);
          assert.equal(other.status, 404, path);
          assert.ok(!other.body.startsWith("{"), `${path}: ${other.body}`);
        }
      } finally {
        await nginx.stop();
      }
      assert.ok(!service.logs().some((log) => log.level === "error"), service.stderr.join("\n"));
    });
  },
});

// The example with one of its two forwarding lines left out, and the setting that goes with it.
const ONE_HEADER_SETUPS = [
  {
    name:
      "nginx with only $proxy_add_x_forwarded_for (no X-Real-IP set): a client's forged X-Real-IP passes through and is ignored",
    settings: { TRUSTED_PROXIES: "127.0.0.1" },
    dropped: "    proxy_set_header X-Real-IP $remote_addr;\n",
  },
  {
    name:
      "nginx setting X-Real-IP with REAL_IP_HEADER=X-Real-IP: the client's forged X-Forwarded-For is ignored",
    settings: { TRUSTED_PROXIES: "127.0.0.1", REAL_IP_HEADER: "X-Real-IP" },
    dropped: "    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n",
  },
];

for (const setup of ONE_HEADER_SETUPS) {
  Deno.test({
    name: setup.name,
    ignore: skipWithout("nginx"),
    fn: async () => {
      await withConfiguredService(setup.settings, async (service) => {
        const port = freePort();
        const nginx = await startNginx(await exampleFor(port, portOf(service), [setup.dropped]));
        try {
          await healthVia(port);
          await assertForgeryFails(service, port, "127.0.0.3");
        } finally {
          await nginx.stop();
        }
      });
    },
  });
}

Deno.test({
  name:
    "two nginx in a chain, both in TRUSTED_PROXIES: the client as the outer one saw it, forged entries ignored",
  ignore: skipWithout("nginx"),
  fn: async () => {
    await withConfiguredService({ TRUSTED_PROXIES: "127.0.0.1" }, async (service) => {
      const [outerPort, innerPort] = [freePort(), freePort()];
      const inner = await startNginx(await exampleFor(innerPort, portOf(service)));
      const outer = await startNginx(await exampleFor(outerPort, innerPort));
      try {
        await healthVia(outerPort);
        await assertForgeryFails(service, outerPort, "127.0.0.2");
      } finally {
        await outer.stop();
        await inner.stop();
      }
    });
  },
});

Deno.test("direct exposure with TRUSTED_PROXIES=none: forged headers are never read, in either mode", async () => {
  for (const mode of ["X-Forwarded-For", "X-Real-IP"]) {
    await withConfiguredService(
      { TRUSTED_PROXIES: "none", REAL_IP_HEADER: mode },
      async (service) => {
        // Clients straight from 127.0.0.2 and 127.0.0.3: no proxy in between.
        await assertForgeryFails(service, portOf(service), "127.0.0.3");
        const other = await post(portOf(service), "127.0.0.2", { message: "m" }, {
          "X-Forwarded-For": "127.0.0.3",
          "X-Real-IP": "127.0.0.3",
        });
        assert.equal(other.status, 200, other.body);
        assert.equal((await service.records()).at(-1)!.ip, "127.0.0.2");
      },
    );
  }
});

Deno.test("examples/nginx.conf proxies /api/ in one prefix block with the client's address, scheme and limits, and the case pages alike without the access log", async () => {
  const config = await Deno.readTextFile(EXAMPLE);
  const directives = config.split("\n").map((line) => line.replace(/#.*/, "").trim()).filter(
    Boolean,
  );
  const locations = directives.filter((line) => line.startsWith("location "));
  assert.deepEqual(locations, [
    "location ^~ /api/ {",
    "location ^~ /api/case/ {",
    "location @contactd_too_large {",
  ]);
  // The case pages' block is the /api/ block's, plus `access_log off;` (the token is the path).
  const block = (start: string) => {
    const from = directives.indexOf(start);
    return directives.slice(from + 1, directives.indexOf("}", from));
  };
  assert.deepEqual(block("location ^~ /api/case/ {"), [
    "access_log off;",
    ...block("location ^~ /api/ {"),
  ]);
  for (
    const line of [
      "client_max_body_size 16k;",
      "proxy_set_header X-Real-IP $remote_addr;",
      "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
      "proxy_set_header X-Forwarded-Proto $scheme;",
      "proxy_connect_timeout 5s;",
      "proxy_read_timeout 60s;",
      "client_body_timeout 10s;",
    ]
  ) assert.ok(directives.includes(line), `missing ${line}`);
  // Connections per client are capped on every route.
  assert.ok(directives.includes("limit_conn_zone $binary_remote_addr zone=contactd_conn:1m;"));
  assert.equal(directives.filter((line) => line === "limit_conn contactd_conn 10;").length, 2);
  // X-Real-IP is set by nginx, never passed through from the client.
  assert.ok(!directives.some((line) => /X-Real-IP \$http_/i.test(line)));
  assert.equal(directives.filter((line) => line === "proxy_pass http://contactd;").length, 2);
});

Deno.test({
  name:
    "examples/nginx.conf reaches every route contactd serves: /api/contact, /api/contact/<id>, /api/f/<id> and its preflight, /api/challenge, /api/health; other /api/ paths get contactd's 404",
  ignore: skipWithout("nginx"),
  fn: async () => {
    const site = "https://site.example";
    await withConfiguredService({
      TRUSTED_PROXIES: "127.0.0.1",
      FORMS: "support",
      ALLOWED_ORIGINS: site,
      CHALLENGE: "altcha",
      CHALLENGE_SECRET: "bmdpbngtdGVzdC1hbHRjaGEtc2VjcmV0LWtleS0wMTIzNDU2Nzg5",
    }, async (service, fake) => {
      const port = freePort();
      const nginx = await startNginx(await exampleFor(port, portOf(service)));
      try {
        assert.equal((await healthVia(port)).status, 200);
        const paths = ["/api/contact", "/api/contact/support", "/api/f/default", "/api/f/support"];
        for (const [i, path] of paths.entries()) {
          const challenge = await request(port, "127.0.0.2", "GET", "/api/challenge");
          assert.equal(challenge.status, 200, challenge.body);
          assert.equal(challenge.headers.get("cache-control"), "no-store");
          const altcha = await solvedAltcha(JSON.parse(challenge.body));
          const sent = await request(port, "127.0.0.2", "POST", path, {
            "Content-Type": "application/json",
            Accept: "application/json",
          }, JSON.stringify({ message: `via ${path}`, altcha }));
          assert.equal(sent.status, 200, `${path}: ${sent.body}`);
          assert.equal(JSON.parse(sent.body).ok, true);
          assert.equal(fake.delivered.length, i + 1);
        }
        const records = await service.records();
        assert.deepEqual(records.map((record) => record.form), [
          undefined,
          "support",
          undefined,
          "support",
        ]);
        // Formspree's shape on its path, through nginx.
        const refused = await request(port, "127.0.0.2", "POST", "/api/f/support", {
          "Content-Type": "application/json",
        }, JSON.stringify({ message: "no proof" }));
        assert.equal(refused.status, 403);
        assert.equal(JSON.parse(refused.body).errors[0].code, "challenge_required");
        const preflight = await request(port, "127.0.0.2", "OPTIONS", "/api/f/default", {
          Origin: site,
          "Access-Control-Request-Method": "POST",
          "Access-Control-Request-Headers": "content-type,formspree-client",
        });
        assert.equal(preflight.status, 204);
        assert.equal(preflight.headers.get("access-control-allow-origin"), site);
        // A 20 KiB body to any form path: nginx's 413, the service's JSON.
        const big = await request(port, "127.0.0.2", "POST", "/api/f/default", {
          "Content-Type": "application/json",
        }, JSON.stringify({ message: "x".repeat(20 * 1024) }));
        assert.equal(big.status, 413);
        assert.equal(JSON.parse(big.body).error, "payload_too_large");
        // A path under /api/ that contactd does not serve (yet) is contactd's own 404.
        const unknown = await request(port, "127.0.0.2", "GET", "/api/case/abc");
        assert.equal(unknown.status, 404);
        assert.equal(JSON.parse(unknown.body).error, "not_found");
      } finally {
        await nginx.stop();
      }
      assert.ok(!service.logs().some((log) => log.level === "error"), service.stderr.join("\n"));
    });
  },
});
