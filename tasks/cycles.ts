/**
 * `deno task cycles`: fails when the project's modules import each other in a cycle (as
 * denoland/std's `lint:circular` does), or against the direction of the architecture: a module
 * of `lib/` importing a topic folder of a higher layer, or one of the same layer, or another
 * folder's private `_` file (see {@linkcode LAYERS}). The graph comes from `deno info --json`
 * over every TypeScript file of the project, type-only imports included.
 *
 * @module
 */

/** A module's local imports, by file URL. */
export type Graph = ReadonlyMap<string, readonly string[]>;

/** Every cycle of `graph` (Tarjan's strongly connected components of two or more, or a self-import). */
export function findCycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;

  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) {
      cycles.push(component.reverse());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return cycles;
}

/**
 * The layers of `lib/`, lowest first: a module may import its own folder and the folders of
 * lower layers only. Folders of one layer are independent of each other. `main.ts` is above
 * them all; `tests/`, `tasks/` and `bench/` are outside the layering.
 */
export const LAYERS: readonly (readonly string[])[] = [
  ["common"],
  ["log", "learn", "files"],
  ["config"],
  ["net", "form", "bot", "challenge", "storage"],
  ["delivery", "spam", "mail", "cases"],
  ["http", "inbox"],
  ["upgrade"],
  ["cli"],
  ["service"],
];

/** Where a project file sits: its `lib/` folder and layer, or `main.ts`, or outside. */
type Place =
  | { readonly kind: "lib"; readonly folder: string; readonly layer: number; readonly file: string }
  | { readonly kind: "main" }
  | { readonly kind: "outside" }
  | { readonly kind: "unknown"; readonly folder: string };

function _placeOf(path: string): Place {
  if (path === "main.ts") return { kind: "main" };
  // A topic's subfolder (lib/storage/sqlite/) belongs to its topic.
  const match = /^lib\/(?:([^/]+)\/(?:[^/]+\/)*)?([^/]+)$/.exec(path);
  if (match === null) {
    return path.startsWith("lib/") ? { kind: "unknown", folder: path } : {
      kind: "outside",
    };
  }
  const folder = match[1] ?? "";
  const layer = LAYERS.findIndex((layer) => layer.includes(folder));
  if (layer < 0) return { kind: "unknown", folder: `lib/${folder}` };
  return { kind: "lib", folder, layer, file: match[2]! };
}

/**
 * Every import of `graph` (keys and targets are paths relative to the project's root) that runs
 * against {@linkcode LAYERS}, one sentence each: upward, sideways (another folder of the same
 * layer), into another folder's private `_` file, from `lib/` to `main.ts`, or from a file of
 * `lib/` outside the table's folders.
 */
export function layerViolations(graph: Graph): string[] {
  const found: string[] = [];
  for (const [from, targets] of [...graph].sort(([a], [b]) => a.localeCompare(b))) {
    const source = _placeOf(from);
    if (source.kind === "unknown") {
      found.push(`${from}: ${source.folder} is not a topic folder of LAYERS (tasks/cycles.ts)`);
      continue;
    }
    if (source.kind !== "lib") continue;
    for (const to of targets) {
      const target = _placeOf(to);
      if (target.kind === "main") {
        found.push(`${from} imports ${to}: nothing in lib/ imports main.ts`);
      }
      if (target.kind !== "lib" || target.folder === source.folder) continue;
      if (target.file.startsWith("_")) {
        found.push(`${from} imports ${to}: a private file of lib/${target.folder}/`);
      } else if (target.layer > source.layer) {
        found.push(`${from} imports ${to}: lib/${target.folder}/ is a higher layer`);
      } else if (target.layer === source.layer) {
        found.push(`${from} imports ${to}: lib/${target.folder}/ is of the same layer`);
      }
    }
  }
  return found;
}

interface InfoModule {
  readonly specifier: string;
  readonly dependencies?: ReadonlyArray<{
    readonly code?: { readonly specifier: string };
    readonly type?: { readonly specifier: string };
  }>;
}

/** The local import graph of `deno info --json` output. */
export function graphOf(info: { readonly modules: readonly InfoModule[] }): Graph {
  const graph = new Map<string, string[]>();
  for (const module of info.modules) {
    if (!module.specifier.startsWith("file:")) continue;
    const targets = new Set<string>();
    for (const dependency of module.dependencies ?? []) {
      for (const target of [dependency.code?.specifier, dependency.type?.specifier]) {
        if (target?.startsWith("file:") && !target.endsWith(".json")) targets.add(target);
      }
    }
    graph.set(module.specifier, [...targets]);
  }
  return graph;
}

async function sources(root: URL): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: URL) => {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.name.startsWith(".") || entry.name === "node_modules" || entry.name === "dist") {
        continue;
      }
      const url = new URL(entry.isDirectory ? `${entry.name}/` : entry.name, dir);
      if (entry.isDirectory) await walk(url);
      else if (entry.name.endsWith(".ts")) found.push(url.href);
    }
  };
  await walk(root);
  return found.sort();
}

async function main(): Promise<number> {
  const root = new URL("../", import.meta.url);
  const files = await sources(root);
  // One graph for every file: a data: module importing them all is the root.
  const entry = `data:application/typescript,${files.map((f) => `import "${f}";`).join("")}`;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!output.success) return 1;
  const graph = graphOf(JSON.parse(new TextDecoder().decode(output.stdout)));
  const cycles = findCycles(graph);
  const relative = (url: string) => url.slice(root.href.length);
  for (const cycle of cycles) {
    console.error(`import cycle: ${[...cycle, cycle[0]!].map(relative).join(" -> ")}`);
  }
  const local = new Map(
    [...graph].filter(([from]) => from.startsWith(root.href))
      .map(([from, targets]) => [relative(from), targets.map(relative)]),
  );
  const violations = layerViolations(local);
  for (const violation of violations) console.error(`import against the layers: ${violation}`);
  if (cycles.length === 0 && violations.length === 0) {
    console.log(
      `no import cycles, and every import follows the layers, among ${files.length} modules`,
    );
  }
  return cycles.length === 0 && violations.length === 0 ? 0 : 1;
}

if (import.meta.main) Deno.exit(await main());
