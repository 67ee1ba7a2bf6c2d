/**
 * End to end: the spam challenge in the real service. ALTCHA challenges fetched over HTTP and
 * solved here with altcha-lib's own solver; Turnstile against a fake siteverify on loopback.
 */
import assert from "node:assert/strict";
import { solvedAltcha } from "../support/altcha.ts";
import { freePort, runToExit, type Service, withService } from "../support/service.ts";

const ALTCHA_SECRET = "c2VjcmV0LWtleS1mb3ItdGhlLWUyZS10ZXN0cy1vbmx5LTAxMjM0";
const TURNSTILE_SECRET = "0x4AAAAAAAe2eTurnstileSecretKey";

async function solvedPayload(service: Service, ip = "198.51.100.1"): Promise<string> {
  const response = await fetch(`${service.url}/api/challenge`, {
    headers: { "x-forwarded-for": ip },
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("cache-control"), "no-store");
  return solvedAltcha(await response.json());
}

/** Nothing in the logs or the backup file holds `secret`. */
async function assertSecretKept(service: Service, secret: string) {
  const stored = await Deno.readTextFile(service.file).catch(() => "");
  for (const text of [...service.stdout, ...service.stderr, stored]) {
    assert.ok(!text.includes(secret), `secret leaked in: ${text.slice(0, 200)}`);
  }
}

Deno.test("e2e: CHALLENGE=altcha: a solved challenge is accepted once and refused the second time", async () => {
  await withService(
    { CHALLENGE: "altcha", CHALLENGE_SECRET: ALTCHA_SECRET },
    async (service, fake) => {
      const altcha = await solvedPayload(service);
      const first = await service.post({ name: "Ann", message: "Solved it", altcha });
      assert.equal(first.status, 200);
      assert.deepEqual(Object.keys(await first.json()), ["ok", "case_url"]);
      const again = await service.post({ name: "Ann", message: "Solved it", altcha });
      assert.equal(again.status, 403);
      assert.equal((await again.json()).error, "challenge_failed");
      const records = await service.records();
      assert.equal(records.length, 1);
      assert.equal(records[0]!.message, "Solved it");
      assert.equal(records[0]!.altcha, undefined);
      assert.equal(fake.delivered.length, 1);
      assert.ok(!fake.delivered[0]!.includes(altcha.slice(0, 16)));
      await assertSecretKept(service, ALTCHA_SECRET);
    },
  );
});

Deno.test("e2e: CHALLENGE=altcha: missing or invalid is 403, nothing stored or sent; the honeypot is still a silent 200", async () => {
  await withService(
    { CHALLENGE: "altcha", CHALLENGE_SECRET: ALTCHA_SECRET },
    async (service, fake) => {
      const missing = await service.post({ message: "no proof" });
      assert.equal(missing.status, 403);
      assert.equal((await missing.json()).error, "challenge_required");
      const invalid = await service.post({ message: "bad proof", altcha: btoa('{"number":1}') });
      assert.equal(invalid.status, 403);
      assert.equal((await invalid.json()).error, "challenge_failed");
      const honeypot = await service.post({ message: "spam", website: "http://spam.example" });
      assert.equal(honeypot.status, 200);
      // Like a success, a case page's path included (of no case).
      assert.deepEqual(Object.keys(await honeypot.json()), ["ok", "case_url"]);
      // A no-JavaScript form post is refused with a sentence saying why.
      const form = await fetch(`${service.url}/api/contact`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "message=plain+form",
      });
      assert.equal(form.status, 403);
      assert.match(await form.text(), /needs JavaScript/);
      assert.deepEqual(await service.records(), []);
      assert.equal(fake.calls.filter((call) => call.method === "sendMessage").length, 0);
    },
  );
});

Deno.test("e2e: CHALLENGE=altcha: GET /api/challenge has its own budget (31st in 60 s is 429), POSTs keep theirs", async () => {
  await withService({ CHALLENGE: "altcha", CHALLENGE_SECRET: ALTCHA_SECRET }, async (service) => {
    const get = () =>
      fetch(`${service.url}/api/challenge`, { headers: { "x-forwarded-for": "203.0.113.50" } });
    for (let i = 0; i < 29; i++) assert.equal((await (await get()).json()).algorithm, "SHA-256");
    const altcha = await solvedPayload(service, "203.0.113.50"); // the 30th
    const limited = await get();
    assert.equal(limited.status, 429);
    await limited.body?.cancel();
    const posted = await service.post({ message: "still allowed", altcha }, "203.0.113.50");
    assert.equal(posted.status, 200);
  });
});

Deno.test("e2e: without CHALLENGE, GET /api/challenge is 404 and posts need no proof", async () => {
  await withService({}, async (service) => {
    const response = await fetch(`${service.url}/api/challenge`);
    assert.equal(response.status, 404);
    await response.body?.cancel();
    assert.equal((await service.post({ message: "as today" })).status, 200);
  });
});

Deno.test("e2e: a missing or short CHALLENGE_SECRET stops start-up with one line naming it, never echoing it", async () => {
  for (const secret of [undefined, "short-secret-value"]) {
    const { code, stderr } = await runToExit({
      PORT: String(freePort()),
      CHALLENGE: "altcha",
      ...(secret === undefined ? {} : { CHALLENGE_SECRET: secret }),
    });
    assert.equal(code, 1);
    const lines = stderr.trim().split("\n");
    assert.equal(lines.length, 1, stderr);
    assert.equal(JSON.parse(lines[0]!).setting, "CHALLENGE_SECRET");
    if (secret !== undefined) assert.ok(!stderr.includes(secret));
  }
  const { code, stderr } = await runToExit({ PORT: String(freePort()), CHALLENGE: "hcaptcha" });
  assert.equal(code, 1);
  assert.equal(JSON.parse(stderr.trim()).setting, "CHALLENGE");
});

// Turnstile against a fake siteverify on loopback.

type Mode = "success" | "failure" | "bad-secret" | "hang" | "html" | "500";

interface FakeSiteverify {
  readonly url: string;
  mode: Mode;
  readonly calls: URLSearchParams[];
  close(): Promise<void>;
}

function startFakeSiteverify(): FakeSiteverify {
  const hung: Array<() => void> = [];
  const fake = {
    url: "",
    mode: "success" as Mode,
    calls: [] as URLSearchParams[],
    close: async () => {},
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    fake.calls.push(new URLSearchParams(await request.text()));
    switch (fake.mode) {
      case "success":
        return Response.json({ success: true, "error-codes": [] });
      case "failure":
        return Response.json({ success: false, "error-codes": ["invalid-input-response"] });
      case "bad-secret":
        return Response.json({ success: false, "error-codes": ["invalid-input-secret"] });
      case "html":
        return new Response("<html>Bad gateway</html>", {
          headers: { "content-type": "text/html" },
        });
      case "500":
        return new Response("oops", { status: 500 });
      case "hang":
        // Answers only when the test ends: longer than the service's 5 s limit.
        await new Promise<void>((resolve) => hung.push(resolve));
        return Response.json({ success: true });
    }
  });
  fake.url = `http://127.0.0.1:${server.addr.port}/turnstile/v0/siteverify`;
  fake.close = async () => {
    for (const resolve of hung) resolve();
    await server.shutdown();
  };
  return fake;
}

Deno.test("e2e: CHALLENGE=turnstile: verdicts of a fake siteverify: success, failure codes, timeout, non-JSON, outage", async () => {
  const siteverify = startFakeSiteverify();
  try {
    await withService({
      CHALLENGE: "turnstile",
      CHALLENGE_SECRET: TURNSTILE_SECRET,
      TURNSTILE_VERIFY_URL: siteverify.url,
    }, async (service, fake) => {
      const send = async (ip: string, body: Record<string, unknown>) => {
        const response = await service.post({ message: "via turnstile", ...body }, ip);
        return [response.status, (await response.json()).error ?? "ok"];
      };
      const token = { "cf-turnstile-response": "XXXX.DUMMY.TOKEN" };
      assert.deepEqual(await send("198.51.100.21", token), [200, "ok"]);
      const call = siteverify.calls[0]!;
      assert.equal(call.get("secret"), TURNSTILE_SECRET);
      assert.equal(call.get("response"), "XXXX.DUMMY.TOKEN");
      assert.equal(call.get("remoteip"), "198.51.100.21");
      assert.deepEqual(await send("198.51.100.22", {}), [403, "challenge_required"]);
      siteverify.mode = "failure";
      assert.deepEqual(await send("198.51.100.23", token), [403, "challenge_failed"]);
      siteverify.mode = "bad-secret";
      assert.deepEqual(await send("198.51.100.24", token), [503, "challenge_unavailable"]);
      siteverify.mode = "html";
      assert.deepEqual(await send("198.51.100.25", token), [503, "challenge_unavailable"]);
      siteverify.mode = "500";
      assert.deepEqual(await send("198.51.100.26", token), [503, "challenge_unavailable"]);
      siteverify.mode = "hang";
      const started = performance.now();
      assert.deepEqual(await send("198.51.100.27", token), [503, "challenge_unavailable"]);
      assert.ok(performance.now() - started >= 4_500);
      siteverify.mode = "success";
      // The honeypot is answered before any verification is asked for.
      const asked = siteverify.calls.length;
      assert.deepEqual(await send("198.51.100.28", { website: "x" }), [200, "ok"]);
      assert.equal(siteverify.calls.length, asked);
      assert.equal((await service.records()).length, 1);
      assert.equal(fake.delivered.length, 1);
      const outages = service.logs().filter((line) => line.event === "challenge_unavailable");
      assert.deepEqual(outages.map((line) => line.reason), [
        "invalid-input-secret",
        "answer not JSON",
        "status 500",
        "timeout",
      ]);
      await assertSecretKept(service, TURNSTILE_SECRET);
    });
  } finally {
    await siteverify.close();
  }
});

Deno.test("e2e: CHALLENGE=turnstile: a siteverify that is down is 503 challenge_unavailable, and the service keeps serving", async () => {
  const down = `http://127.0.0.1:${freePort()}/siteverify`;
  await withService({
    CHALLENGE: "turnstile",
    CHALLENGE_SECRET: TURNSTILE_SECRET,
    TURNSTILE_VERIFY_URL: down,
  }, async (service) => {
    const response = await service.post({ message: "hi", "cf-turnstile-response": "tok" });
    assert.equal(response.status, 503);
    assert.equal((await response.json()).error, "challenge_unavailable");
    assert.equal((await fetch(`${service.url}/api/health`)).status, 200);
    const challenge = await fetch(`${service.url}/api/challenge`);
    assert.equal(challenge.status, 404); // Turnstile has no challenge endpoint
    await challenge.body?.cancel();
  });
});

Deno.test("e2e: CHALLENGE=turnstile with a Cloudflare test secret key starts with one warning", async () => {
  const testKey = "1x0000000000000000000000000000000AA";
  const down = `http://127.0.0.1:${freePort()}/siteverify`;
  for (const [secret, warned] of [[testKey, 1], [TURNSTILE_SECRET, 0]] as const) {
    await withService({
      CHALLENGE: "turnstile",
      CHALLENGE_SECRET: secret,
      TURNSTILE_VERIFY_URL: down,
    }, async (service) => {
      // Serving (and its signal handlers installed) before it is stopped.
      const health = await fetch(`${service.url}/api/health`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
      const warnings = service.logs().filter((line) => line.event === "challenge_test_secret");
      assert.equal(warnings.length, warned, secret);
      // (Its `setting` field is not compared: the fake bot token "…AAE_secret…" redacts part.)
      if (warned) assert.equal(warnings[0]!.level, "warn");
      await assertSecretKept(service, secret);
    });
  }
});

Deno.test("e2e: the module graph of main.ts imports altcha-lib statically (what deno compile bundles)", async () => {
  const pinned = /npm:(altcha-lib@[^/"]+)/.exec(await Deno.readTextFile("deno.json"))?.[1];
  assert.ok(pinned !== undefined, "deno.json pins altcha-lib");
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "main.ts"],
    env: { NO_COLOR: "1" },
  }).output();
  assert.equal(code, 0, new TextDecoder().decode(stderr));
  interface Dependency {
    code?: { specifier?: string };
    isDynamic?: boolean;
  }
  const graph = JSON.parse(new TextDecoder().decode(stdout)) as {
    roots: string[];
    modules: Array<{ specifier: string; dependencies?: Dependency[] }>;
    npmPackages: Record<string, unknown>;
  };
  assert.ok(Object.hasOwn(graph.npmPackages, pinned), Object.keys(graph.npmPackages).join());
  // Only static imports from main.ts: a dynamic import() would not be bundled by deno compile.
  const modules = new Map(graph.modules.map((module) => [module.specifier, module]));
  const reached = new Set<string>();
  const queue = [...graph.roots];
  while (queue.length > 0) {
    const specifier = queue.pop()!;
    if (reached.has(specifier)) continue;
    reached.add(specifier);
    for (const dependency of modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (target !== undefined && dependency.isDynamic !== true) queue.push(target);
    }
  }
  assert.ok(
    [...reached].some((specifier) => specifier.startsWith(`npm:${pinned}`)),
    `npm:${pinned} not statically reached from main.ts`,
  );
});

Deno.test("e2e: CHALLENGE=altcha: GET /api/challenge serves the origins of every form, with CORS for the matching one", async () => {
  await withService(
    {
      CHALLENGE: "altcha",
      CHALLENGE_SECRET: ALTCHA_SECRET,
      ALLOWED_ORIGINS: "https://example.org",
      FORMS: "sales",
      FORM_SALES_ALLOWED_ORIGINS: "https://shop.example",
    },
    async (service) => {
      for (const origin of ["https://example.org", "https://shop.example"]) {
        const response = await fetch(`${service.url}/api/challenge`, {
          headers: { origin, "x-forwarded-for": "198.51.100.3" },
        });
        assert.equal(response.status, 200, origin);
        assert.equal(response.headers.get("access-control-allow-origin"), origin);
        assert.equal((await response.json()).algorithm, "SHA-256");
      }
      const refused = await fetch(`${service.url}/api/challenge`, {
        headers: { origin: "https://evil.example", "x-forwarded-for": "198.51.100.3" },
      });
      assert.equal(refused.status, 403);
      await refused.body?.cancel();
    },
  );
});
