/**
 * A file system in memory for the storage tests (lib/storage/file_system.ts's `StorageFs`):
 * files, symbolic links, modes, advisory locks and directories that can be synced, with no real
 * I/O, so every call completes in microtasks and {@linkcode idle} means "everything that could
 * run has run". {@linkcode hookFs} wraps any `StorageFs` to hold or fail chosen calls, which is
 * how the tests stop the outbox at one exact await.
 *
 * @module
 */
import type {
  StorageFile,
  StorageFileInfo,
  StorageFs,
  StorageOpenOptions,
} from "../../lib/storage/file_system.ts";

interface Inode {
  readonly ino: number;
  data: Uint8Array;
  size: number;
  mode: number;
  lock: object | undefined;
  readonly directory: boolean;
}

type Entry = { readonly kind: "file"; readonly inode: Inode } | {
  readonly kind: "link";
  readonly target: string;
  readonly ino: number;
};

/** What `stat` says of a file. */
function _info(inode: Inode): StorageFileInfo {
  return {
    size: inode.size,
    mode: inode.mode,
    dev: 1,
    ino: inode.ino,
    isFile: !inode.directory,
    isSymlink: false,
  };
}

/** Resolves once every pending microtask has run (no time passes: the memory fs does no I/O). */
export function idle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A file system in memory; see the module documentation. */
export class MemoryFs implements StorageFs {
  readonly #entries = new Map<string, Entry>();
  #nextIno = 1;
  /** How many times a directory was synced, by path. */
  readonly directorySyncs: Map<string, number> = new Map();

  /** Makes `path` a directory (it can be opened for reading and synced). */
  mkdir(path: string): void {
    this.#entries.set(path, { kind: "file", inode: this.#inode(0o700, true) });
  }

  /** Creates a symbolic link at `path` to `target`. */
  symlink(target: string, path: string): void {
    this.#entries.set(path, { kind: "link", target, ino: this.#nextIno++ });
  }

  /** The text of the file at `path` (links followed); throws NotFound. */
  readText(path: string): string {
    const inode = this.#resolve(path);
    if (inode === undefined) throw new Deno.errors.NotFound(path);
    return new TextDecoder().decode(inode.data.subarray(0, inode.size));
  }

  /** Writes `text` to the file at `path` (created 0600, or replaced). */
  writeText(path: string, text: string): void {
    const inode = this.#resolve(path) ?? this.#create(path, 0o600);
    const bytes = new TextEncoder().encode(text);
    inode.data = bytes;
    inode.size = bytes.byteLength;
  }

  /** Whether something (a file or a link) is at `path`. */
  exists(path: string): boolean {
    return this.#entries.has(path);
  }

  #inode(mode: number, directory = false): Inode {
    return {
      ino: this.#nextIno++,
      data: new Uint8Array(0),
      size: 0,
      mode,
      lock: undefined,
      directory,
    };
  }

  #create(path: string, mode: number): Inode {
    const inode = this.#inode(mode);
    this.#entries.set(path, { kind: "file", inode });
    return inode;
  }

  #resolve(path: string, depth = 0): Inode | undefined {
    const entry = this.#entries.get(path);
    if (entry === undefined) return undefined;
    if (entry.kind === "file") return entry.inode;
    if (depth > 8) throw new Error(`too many links: ${path}`);
    return this.#resolve(entry.target, depth + 1);
  }

  open(path: string, options: StorageOpenOptions): Promise<StorageFile> {
    const entry = this.#entries.get(path);
    if (options.createNew === true && entry !== undefined) {
      return Promise.reject(new Deno.errors.AlreadyExists(`file exists: ${path}`));
    }
    let inode = this.#resolve(path);
    if (inode === undefined) {
      if (options.create !== true && options.createNew !== true) {
        return Promise.reject(new Deno.errors.NotFound(`no such file: ${path}`));
      }
      // A dangling link is created through, as the system does (but never with createNew).
      const target = entry?.kind === "link" ? entry.target : path;
      inode = this.#create(target, options.mode ?? 0o644);
    }
    if (options.truncate === true) inode.size = 0;
    return Promise.resolve(this.#handle(path, inode, options));
  }

  #handle(path: string, inode: Inode, options: StorageOpenOptions): StorageFile {
    let position = 0;
    let closed = false;
    const owner = {};
    const open = () => {
      if (closed) throw new Deno.errors.BadResource(`closed: ${path}`);
    };
    return {
      read: (into) => {
        open();
        if (options.read !== true) throw new Deno.errors.PermissionDenied(path);
        if (position >= inode.size) return Promise.resolve(null);
        const n = Math.min(into.byteLength, inode.size - position);
        into.set(inode.data.subarray(position, position + n));
        position += n;
        return Promise.resolve(n);
      },
      write: (bytes) => {
        open();
        if (options.write !== true && options.append !== true) {
          throw new Deno.errors.PermissionDenied(path);
        }
        if (options.append === true) position = inode.size;
        const end = position + bytes.byteLength;
        if (end > inode.data.byteLength) {
          const grown = new Uint8Array(Math.max(end, inode.data.byteLength * 2));
          grown.set(inode.data.subarray(0, inode.size));
          inode.data = grown;
        }
        inode.data.set(bytes, position);
        position = end;
        inode.size = Math.max(inode.size, end);
        return Promise.resolve(bytes.byteLength);
      },
      seek: (offset, whence) => {
        open();
        position = whence === Deno.SeekMode.Start
          ? offset
          : whence === Deno.SeekMode.Current
          ? position + offset
          : inode.size + offset;
        return Promise.resolve(position);
      },
      syncData: () => {
        open();
        if (inode.directory) {
          this.directorySyncs.set(path, (this.directorySyncs.get(path) ?? 0) + 1);
        }
        return Promise.resolve();
      },
      stat: () => Promise.resolve(_info(inode)),
      tryLock: () => {
        open();
        if (inode.lock !== undefined && inode.lock !== owner) return Promise.resolve(false);
        inode.lock = owner;
        return Promise.resolve(true);
      },
      truncate: (length = 0) => {
        open();
        inode.size = Math.min(inode.size, length);
        return Promise.resolve();
      },
      close: () => {
        open();
        closed = true;
        if (inode.lock === owner) inode.lock = undefined;
      },
    };
  }

  lstat(path: string): Promise<StorageFileInfo> {
    const entry = this.#entries.get(path);
    if (entry === undefined) return Promise.reject(new Deno.errors.NotFound(path));
    if (entry.kind === "link") {
      return Promise.resolve({
        size: 0,
        mode: 0o777,
        dev: 1,
        ino: entry.ino,
        isFile: false,
        isSymlink: true,
      });
    }
    return Promise.resolve(_info(entry.inode));
  }

  rename(from: string, to: string): Promise<void> {
    const entry = this.#entries.get(from);
    if (entry === undefined) return Promise.reject(new Deno.errors.NotFound(from));
    this.#entries.delete(from);
    this.#entries.set(to, entry);
    return Promise.resolve();
  }

  remove(path: string): Promise<void> {
    if (!this.#entries.delete(path)) return Promise.reject(new Deno.errors.NotFound(path));
    return Promise.resolve();
  }
}

/** One call of a {@linkcode StorageFs} or of a file it opened. */
export interface FsCall {
  readonly op:
    | "open"
    | "lstat"
    | "rename"
    | "remove"
    | "read"
    | "write"
    | "seek"
    | "sync"
    | "stat"
    | "lock"
    | "truncate";
  /** The path opened (for a file's calls, the path it was opened at). */
  readonly path: string;
  /** `open`'s options. */
  readonly options?: StorageOpenOptions;
  /** `read`'s result, for `after` (`null` at the end of the file). */
  readonly result?: unknown;
}

/** What {@linkcode hookFs} calls around each call. */
export interface FsHooks {
  /** Before the call: may wait (holding it) or throw (failing it). */
  before?(call: FsCall): void | Promise<void>;
  /** After the call, before its caller sees the result (or its error): may wait or throw. */
  after?(call: FsCall): void | Promise<void>;
}

/** `base` with `hooks` around every call; see {@linkcode FsHooks}. */
export function hookFs(base: StorageFs, hooks: FsHooks): StorageFs {
  const around = async <T>(call: FsCall, run: () => Promise<T>): Promise<T> => {
    await hooks.before?.(call);
    let result: T;
    try {
      result = await run();
    } catch (error) {
      await hooks.after?.(call);
      throw error;
    }
    await hooks.after?.({ ...call, result });
    return result;
  };
  const file = (path: string, inner: StorageFile): StorageFile => ({
    read: (into) => around({ op: "read", path }, () => inner.read(into)),
    write: (bytes) => around({ op: "write", path }, () => inner.write(bytes)),
    seek: (offset, whence) => around({ op: "seek", path }, () => inner.seek(offset, whence)),
    syncData: () => around({ op: "sync", path }, () => inner.syncData()),
    stat: () => around({ op: "stat", path }, () => inner.stat()),
    tryLock: (exclusive) => around({ op: "lock", path }, () => inner.tryLock(exclusive)),
    truncate: (length) => around({ op: "truncate", path }, () => inner.truncate(length)),
    close: () => inner.close(),
  });
  return {
    open: (path, options) =>
      around({ op: "open", path, options }, async () => file(path, await base.open(path, options))),
    lstat: (path) => around({ op: "lstat", path }, () => base.lstat(path)),
    rename: (from, to) => around({ op: "rename", path: from }, () => base.rename(from, to)),
    remove: (path) => around({ op: "remove", path }, () => base.remove(path)),
  };
}

/**
 * Holds one call: the first {@linkcode Latch.pass} while armed waits until `release()`; `at`
 * resolves once a call is held. The tests use it in {@linkcode FsHooks} to stop the outbox at one
 * exact await and run something else there.
 */
export interface Latch {
  readonly at: Promise<void>;
  release(): void;
  arm(): void;
  pass(when?: boolean): Promise<void>;
}

/** A {@linkcode Latch}, armed unless `armed` is false. */
export function latch(armed = true): Latch {
  let release = () => {};
  let reached = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  const at = new Promise<void>((resolve) => (reached = resolve));
  return {
    at,
    release: () => release(),
    arm: () => void (armed = true),
    async pass(when = true) {
      if (!armed || !when) return;
      armed = false;
      reached();
      await held;
    },
  };
}
