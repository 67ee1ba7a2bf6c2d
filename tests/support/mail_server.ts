/**
 * A real mail server for the end-to-end tests: Debian's Exim (`exim4`, from
 * `exim4-daemon-light`) in the foreground on 127.0.0.1 at a free port, with a private
 * configuration, spool and log under a temporary directory, accepting mail for anyone and
 * delivering it to a Maildir the tests read. The local part `refused` is refused with `550 5.1.1`
 * (a recipient refused for good); AUTH PLAIN accepts {@linkcode MAIL_SERVER_USER} with
 * {@linkcode MAIL_SERVER_PASSWORD}, and mail without a login too. With `tls`, it offers STARTTLS
 * and listens for TLS from the first byte on a second port, with a certificate from a private CA
 * (the client trusts it through `DENO_CERT`). It can be stopped and started again on the same port (the mail
 * server down for a while, then up). Outside CI a machine without Exim skips the tests
 * (tests/support/tools.ts).
 *
 * @module
 */
import { findTool, skipBecause } from "./tools.ts";

/** How to install the mail server (what `.ci/run` does). */
export const MAIL_SERVER_INSTALL = "apt-get install -y exim4-daemon-light";

/** The one login the server accepts (AUTH PLAIN, offered without TLS: loopback only). */
export const MAIL_SERVER_USER = "site";
/** {@linkcode MAIL_SERVER_USER}'s password. */
export const MAIL_SERVER_PASSWORD = "right-password";

/** Whether the mail server tests should be skipped (only outside CI, when Exim is missing). */
export function skipWithoutMailServer(): boolean {
  if (findTool("exim4") !== undefined) return false;
  return skipBecause(`exim4 (${MAIL_SERVER_INSTALL})`);
}

/** Whether the TLS tests should be skipped (only outside CI, when openssl is missing). */
export function skipWithoutOpenssl(): boolean {
  if (findTool("openssl") !== undefined) return false;
  return skipBecause("openssl (apt-get install -y openssl)");
}

/** What {@linkcode startMailServer} sets up. */
export interface MailServerOptions {
  /**
   * TLS with a certificate for `localhost` and 127.0.0.1 from a private CA (made with openssl):
   * STARTTLS offered on `port`, TLS from the first byte on `tlsPort`.
   */
  readonly tls?: boolean;
}

/** A running (or stopped) test mail server. */
export interface MailServer {
  readonly host: "127.0.0.1";
  readonly port: number;
  /** With `tls`: the port that is TLS from the first byte (smtps). */
  readonly tlsPort?: number;
  /** With `tls`: the CA certificate (PEM file) that signed the server's certificate. */
  readonly caFile?: string;
  /** The messages delivered so far, raw (RFC 5322, CRLF or LF as Exim wrote them). */
  messages(): Promise<string[]>;
  /** Waits until at least `count` messages were delivered (at most `timeoutMs`), and returns them. */
  waitForMessages(count: number, timeoutMs?: number): Promise<string[]>;
  /** Waits until Exim's main log has a line matching `pattern` (at most `timeoutMs`). */
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Stops the server (new connections are refused until `start`). */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  dispose(): Promise<void>;
}

/** Starts Exim on a free loopback port; see the module documentation. */
export async function startMailServer(options: MailServerOptions = {}): Promise<MailServer> {
  const exim = findTool("exim4");
  if (exim === undefined) throw new Error(`exim4 is missing: ${MAIL_SERVER_INSTALL}`);
  const dir = await Deno.makeTempDir({ prefix: "contactd-mail-" });
  const port = _freePort();
  // Whose this process is, without --allow-sys: the owner of the directory it just made.
  const uid = (await Deno.stat(dir)).uid;
  const root = uid === 0;
  const maildir = `${dir}/Maildir`;
  for (const sub of ["spool", "log", "Maildir"]) await Deno.mkdir(`${dir}/${sub}`);
  const tlsPort = options.tls === true ? _freePort() : undefined;
  if (tlsPort !== undefined) await _certificates(dir);
  const config = `${dir}/exim.conf`;
  await Deno.writeTextFile(config, _config(dir, port, root ? "Debian-exim" : `${uid}`, tlsPort), {
    mode: 0o644,
  });
  if (root) {
    // Exim runs as root with a configuration root owns, and receives and delivers as its own
    // user, which must write the spool and the Maildir.
    const exim = await _user("Debian-exim");
    const keys = tlsPort === undefined ? [] : ["/server.pem", "/server.key"];
    for (const sub of ["", "/spool", "/log", "/Maildir", ...keys]) {
      await Deno.chown(`${dir}${sub}`, exim.uid, exim.gid);
    }
  }
  let child: Deno.ChildProcess | undefined;
  const start = async () => {
    if (child !== undefined) return;
    child = new Deno.Command(exim, {
      args: ["-C", config, "-bdf"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    await _waitForGreeting(port, child, dir);
  };
  const stop = async () => {
    const running = child;
    if (running === undefined) return;
    child = undefined;
    try {
      running.kill("SIGTERM");
    } catch {
      // exited already
    }
    await running.status;
  };
  const messages = async () => {
    const texts: string[] = [];
    for (const sub of ["new", "cur"]) {
      let entries: Deno.DirEntry[] = [];
      try {
        entries = [...Deno.readDirSync(`${maildir}/${sub}`)];
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      }
      for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
        texts.push(await Deno.readTextFile(`${maildir}/${sub}/${entry.name}`));
      }
    }
    return texts;
  };
  await start();
  return {
    host: "127.0.0.1",
    port,
    ...(tlsPort === undefined ? {} : { tlsPort, caFile: `${dir}/ca.pem` }),
    messages,
    async waitForMessages(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (true) {
        const found = await messages();
        if (found.length >= count) return found;
        if (Date.now() > deadline) {
          const log = await Deno.readTextFile(`${dir}/log/mainlog`).catch(() => "(no log)");
          throw new Error(`${found.length} of ${count} messages delivered; Exim's log:\n${log}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    async waitForLog(pattern, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (true) {
        const log = await Deno.readTextFile(`${dir}/log/mainlog`).catch(() => "");
        const line = log.split("\n").find((entry) => pattern.test(entry));
        if (line !== undefined) return line;
        if (Date.now() > deadline) throw new Error(`no line ${pattern} in Exim's log:\n${log}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    stop,
    start,
    async dispose() {
      await stop();
      // A session's or a delivery's own Exim process may still be ending, and writes its log
      // line even into a removed directory (making it again): remove until it stays removed.
      const deadline = Date.now() + 5000;
      let quietSince = Date.now();
      while (Date.now() - quietSince < 300 && Date.now() < deadline) {
        try {
          await Deno.remove(dir, { recursive: true });
          quietSince = Date.now();
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound) && Date.now() > deadline) throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
  };
}

function _config(dir: string, port: number, user: string, tlsPort?: number): string {
  const tls = tlsPort === undefined ? "tls_advertise_hosts =" : `tls_advertise_hosts = *
tls_on_connect_ports = ${tlsPort}
tls_certificate = ${dir}/server.pem
tls_privatekey = ${dir}/server.key`;
  return `# contactd's test mail server (tests/support/mail_server.ts)
primary_hostname = mail.contactd.test
daemon_smtp_ports = ${port}${tlsPort === undefined ? "" : ` : ${tlsPort}`}
${tls}
local_interfaces = 127.0.0.1
spool_directory = ${dir}/spool
log_file_path = ${dir}/log/%slog
pid_file_path = ${dir}/exim.pid
keep_environment =
domainlist local_domains = *
host_lookup =
rfc1413_hosts =
acl_smtp_rcpt = acl_rcpt

begin acl
acl_rcpt:
  deny local_parts = refused
       message = 5.1.1 no such user here
  accept

begin routers
everyone:
  driver = accept
  transport = maildir

begin transports
maildir:
  driver = appendfile
  directory = ${dir}/Maildir
  maildir_format
  create_directory
  user = ${user}
  mode = 0644
  envelope_to_add
  return_path_add

begin authenticators
plain:
  driver = plaintext
  public_name = PLAIN
  server_prompts = :
  server_condition = \${if and{{eq{$auth2}{${MAIL_SERVER_USER}}}{eq{$auth3}{${MAIL_SERVER_PASSWORD}}}}}
  server_set_id = $auth2
`;
}

/** A private CA (`ca.pem`) and the server's key and certificate for localhost and 127.0.0.1. */
async function _certificates(dir: string): Promise<void> {
  const openssl = findTool("openssl");
  if (openssl === undefined) throw new Error("openssl is missing: apt-get install -y openssl");
  const run = async (...args: string[]) => {
    const output = await new Deno.Command(openssl, { args, cwd: dir, stdin: "null" }).output();
    if (!output.success) {
      throw new Error(`openssl ${args[0]}: ${new TextDecoder().decode(output.stderr)}`);
    }
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  await run(
    "req",
    "-x509",
    ...ec,
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
    "-days",
    "2",
    "-subj",
    "/CN=contactd test CA",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign",
  );
  await run("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost");
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n" +
      "extendedKeyUsage=serverAuth\n",
  );
  await run(
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-out",
    "server.pem",
    "-days",
    "2",
    "-extfile",
    "server.ext",
  );
}

function _freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function _user(name: string): Promise<{ uid: number; gid: number }> {
  const line = (await Deno.readTextFile("/etc/passwd")).split("\n")
    .find((entry) => entry.startsWith(`${name}:`));
  const [, , uid, gid] = line?.split(":") ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error(`no user ${name}: is Exim installed?`);
  }
  return { uid: Number(uid), gid: Number(gid) };
}

/** Waits until the server answers with its `220` greeting (at most 10 s). */
async function _waitForGreeting(port: number, child: Deno.ChildProcess, dir: string) {
  const deadline = Date.now() + 10_000;
  let exited = false;
  child.status.then(() => (exited = true));
  while (true) {
    try {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      try {
        const buffer = new Uint8Array(512);
        const n = await conn.read(buffer);
        const greeting = new TextDecoder().decode(buffer.subarray(0, n ?? 0));
        if (greeting.startsWith("220")) {
          await conn.write(new TextEncoder().encode("QUIT\r\n"));
          return;
        }
      } finally {
        conn.close();
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.ConnectionRefused)) throw error;
    }
    if (exited || Date.now() > deadline) {
      const log = await Deno.readTextFile(`${dir}/log/paniclog`).catch(() => "");
      throw new Error(
        `Exim did not start on 127.0.0.1:${port}${exited ? " (it exited)" : ""}: ${log}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
