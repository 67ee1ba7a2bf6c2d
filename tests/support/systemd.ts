/**
 * A throwaway systemd for live tests of the unit: systemd as PID 1 of a fresh PID, mount and UTS
 * namespace (root only), driven with `nsenter … systemctl`, ended by killing that PID 1.
 *
 * @module
 */

/** The host's systemd, started as the namespace's PID 1. */
export const SYSTEMD = "/lib/systemd/systemd";

/** Targets whose wanted units are masked in the namespace: a boot that starts nothing else. */
const PULLED_TARGETS = [
  "sysinit",
  "basic",
  "sockets",
  "timers",
  "paths",
  "slices",
  "local-fs",
  "local-fs-pre",
  "remote-fs",
  "swap",
  "cryptsetup",
  "veritysetup",
  "integritysetup",
  "network",
  "network-pre",
  "network-online",
];

/** Kept: the journal (volatile, on the namespace's /run) holds the service's log lines. */
const KEPT = [
  "systemd-journald.service",
  "systemd-journald.socket",
  "systemd-journald-dev-log.socket",
];

/**
 * The shell script the namespace's first process runs before it becomes systemd. Before
 * anything else it makes every mount private and puts fresh tmpfs on /run, /tmp and /var/tmp
 * (systemd-tmpfiles would otherwise empty the host's), refusing to go on unless /tmp is an empty
 * tmpfs; then tmpfs on /var/lib and /var/log and overlays on /etc and /usr/local/bin, so
 * StateDirectory, the journal, /etc/contactd/env and /usr/local/bin/contactd never reach the
 * host. Generators and every unit the early targets pull in (udev, sysctl, tmpfiles, timers, …)
 * are masked; the boot target is an empty target. `set -e`: a failed step never reaches systemd.
 */
export function bootScript(): string {
  const dirs = ["/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"];
  return `set -eu
mount --make-rprivate /
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=1777 tmpfs /var/tmp
[ "$(findmnt -n -o FSTYPE /tmp)" = tmpfs ] && [ -z "$(ls -A /tmp)" ] || exit 91
[ "$(findmnt -n -o FSTYPE /var/tmp)" = tmpfs ] && [ -z "$(ls -A /var/tmp)" ] || exit 92
mount -t tmpfs -o mode=0755 tmpfs /var/lib
mount -t tmpfs -o mode=0755 tmpfs /var/log
for d in etc usr/local/bin; do
  mkdir -p /run/overlay/$d/upper /run/overlay/$d/work
  mount -t overlay overlay -o lowerdir=/$d,upperdir=/run/overlay/$d/upper,workdir=/run/overlay/$d/work /$d
done
: > /run/console
mount --bind /run/console /dev/console
mkdir -p /run/systemd/system /run/systemd/system-generators
for g in /lib/systemd/system-generators/* /usr/lib/systemd/system-generators/*; do
  [ -e "$g" ] && ln -sf /dev/null "/run/systemd/system-generators/$(basename "$g")"
done
for t in ${PULLED_TARGETS.join(" ")}; do
  for d in ${dirs.join(" ")}; do
    for u in "$d/$t.target.wants/"* "$d/$t.target.requires/"*; do
      [ -e "$u" ] || [ -L "$u" ] || continue
      case "$(basename "$u")" in ${KEPT.join("|")}) continue ;; esac
      ln -sf /dev/null "/run/systemd/system/$(basename "$u")"
    done
  done
done
printf '[Unit]\\nDescription=contactd test boot\\nDefaultDependencies=no\\n' \\
  > /run/systemd/system/contactd-test.target
exec env -i container=other ${SYSTEMD} --system --unit=contactd-test.target
`;
}

/** A command's outcome, decoded. */
export interface Output {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running namespace; see {@linkcode bootSystemd}. */
export interface BootedSystemd {
  /** The host's id of the namespace's PID 1 (systemd). */
  readonly pid: number;
  /** Runs a command in all of systemd's namespaces (as PID 1's children see the machine). */
  run(command: string, ...args: string[]): Promise<Output>;
  /** Like {@linkcode BootedSystemd.run}, throwing with the output unless it exits 0. */
  check(command: string, ...args: string[]): Promise<string>;
  /** Kills PID 1, which ends every process and mount of the namespace. */
  shutdown(): Promise<void>;
}

const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** A /proc file through `cat` (Deno reads /proc only under --allow-all); "" when unreadable. */
async function readProc(path: string): Promise<string> {
  const output = await new Deno.Command("cat", { args: [path], stdin: "null", stderr: "null" })
    .output();
  return output.success ? decode(output.stdout) : "";
}

/**
 * Boots systemd in a new namespace (the script of {@linkcode bootScript}, written to `dir`) and
 * waits until it reports its boot finished. `tools` names the util-linux programs.
 */
export async function bootSystemd(
  dir: string,
  tools: { unshare: string; nsenter: string },
): Promise<BootedSystemd> {
  await Deno.writeTextFile(`${dir}/boot.sh`, bootScript());
  const child = new Deno.Command(tools.unshare, {
    args: [
      "--pid",
      "--fork",
      "--mount",
      "--uts",
      "--mount-proc",
      "--kill-child",
      "sh",
      `${dir}/boot.sh`,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = child.output();
  let pid: number | undefined;
  const run = async (command: string, ...args: string[]): Promise<Output> => {
    const result = await new Deno.Command(tools.nsenter, {
      args: ["-t", String(pid), "-a", command, ...args],
      env: { SYSTEMD_COLORS: "0", SYSTEMD_PAGER: "", PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      stdin: "null",
    }).output();
    return { code: result.code, stdout: decode(result.stdout), stderr: decode(result.stderr) };
  };
  const booted: BootedSystemd = {
    get pid() {
      return pid!;
    },
    run,
    async check(command, ...args) {
      const result = await run(command, ...args);
      if (result.code !== 0) {
        throw new Error(
          `${command} ${args.join(" ")}: exit ${result.code}\n${result.stdout}${result.stderr}`,
        );
      }
      return result.stdout;
    },
    async shutdown() {
      try {
        if (pid !== undefined) Deno.kill(pid, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await output;
    },
  };
  try {
    const deadline = Date.now() + 30_000;
    while (pid === undefined) {
      const children = await readProc(`/proc/${child.pid}/task/${child.pid}/children`);
      const first = Number(children.trim().split(" ")[0]);
      if (first > 0 && (await readProc(`/proc/${first}/comm`)).trim() === "systemd") {
        pid = first;
      } else if (Date.now() > deadline) {
        child.kill("SIGKILL");
        const { stdout, stderr } = await output;
        throw new Error(
          `systemd did not start in the namespace:\n${decode(stdout)}${decode(stderr)}`,
        );
      } else {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    // The manager answers once its private socket exists; --wait then waits for the boot.
    let state = await run("systemctl", "is-system-running", "--wait");
    while (state.stdout.trim() === "" && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      state = await run("systemctl", "is-system-running", "--wait");
    }
    if (!["running", "degraded"].includes(state.stdout.trim())) {
      const failed = await run("systemctl", "--failed", "--no-legend");
      throw new Error(
        `systemd in the namespace is "${state.stdout.trim()}": ${state.stderr}${failed.stdout}`,
      );
    }
    return booted;
  } catch (error) {
    await booted.shutdown();
    throw error;
  }
}

/**
 * `deno task compile --print`'s arguments turned into a `deno run` of `main`: the same flags,
 * without the build-only ones (`--output`, `--target`), and the arguments baked in after the
 * script (a compiled binary puts them before its command line's). Throws when the shape is not
 * the one known, so a change to the compile task cannot silently weaken the test.
 */
export function runArgs(compileArgs: readonly string[], main: string): string[] {
  if (compileArgs[0] !== "compile") {
    throw new Error(`unexpected compile arguments: ${JSON.stringify(compileArgs)}`);
  }
  const flags: string[] = [];
  let i = 1;
  for (; i < compileArgs.length && compileArgs[i]!.startsWith("--"); i++) {
    const arg = compileArgs[i]!;
    if (arg === "--output" || arg === "--target") i++;
    else if (!arg.startsWith("--output=") && !arg.startsWith("--target=")) flags.push(arg);
  }
  if (compileArgs[i] !== "main.ts") {
    throw new Error(`unexpected compile arguments: ${JSON.stringify(compileArgs)}`);
  }
  return ["run", ...flags, main, ...compileArgs.slice(i + 1)];
}

/**
 * The unit's main process as `systemctl show -p MainPID` gives it, checked before anything is
 * signalled: `0` (no main process: the unit failed to start or has stopped) would make
 * `kill -9 0` kill the test run's own process group, and `1` is the namespace's systemd. Throws
 * a message naming the unit's state instead.
 */
export function mainPid(show: Readonly<Record<string, string | undefined>>): string {
  const value = show.MainPID ?? "";
  if (!/^\d+$/.test(value) || Number(value) <= 1) {
    throw new Error(
      `contactd has no main process to signal (MainPID=${JSON.stringify(value)}, ` +
        `ActiveState=${show.ActiveState}, Result=${show.Result}): the unit did not start or ` +
        "has stopped; its journal says why",
    );
  }
  return value;
}
