/**
 * Where settings come from: the process environment and, optionally, an env file
 * (`.env` for `deno task start`, `--env-file PATH` for the binary), read forgivingly (a
 * byte-order mark is dropped) and explained (lines it skips are named by number, never by
 * value). The environment wins.
 *
 * @module
 */
import { parseEnv } from "node:util";
import {
  FORM_ID,
  FORM_SETTINGS,
  type FormSettingName,
  formSettingName,
  formSettingNames,
  SETTING_NAMES,
  type SettingName,
} from "./config.ts";
import type { LogFields } from "../log/logger.ts";

/** Raw setting values by name (the forms' own `FORM_<ID>_*` too); absent when unset. */
export type Settings = Partial<Record<SettingName | FormSettingName, string>>;

/** Merges settings: a value in the process environment wins over the same key in the file. */
export function mergeSettings(
  fromFile: Readonly<Record<string, string | undefined>>,
  fromProcess: Readonly<Record<string, string | undefined>>,
): Settings {
  const merged: Settings = {};
  const take = (name: SettingName | FormSettingName) => {
    const value = fromProcess[name] ?? (Object.hasOwn(fromFile, name) ? fromFile[name] : undefined);
    if (value !== undefined) merged[name] = value;
  };
  for (const name of SETTING_NAMES) take(name);
  // The forms named in the merged FORMS bring their own settings, from either place.
  for (const name of formSettingNames(merged.FORMS)) take(name);
  return merged;
}

/**
 * Reads the named settings, and only those (the service may read no other variable): every
 * setting, and the `FORM_<ID>_*` settings of the forms `FORMS` names here or in `formsElsewhere`
 * (the env file's `FORMS`).
 */
export function readSettings(
  get: (name: SettingName | FormSettingName) => string | undefined,
  formsElsewhere?: string,
): Settings {
  const settings: Settings = {};
  for (const name of SETTING_NAMES) {
    const value = get(name);
    if (value !== undefined) settings[name] = value;
  }
  // FORM_<ID>_* of the forms named here or in the env file (formsElsewhere).
  const forms = [settings.FORMS, formsElsewhere].filter((text) => text !== undefined).join(",");
  for (const name of new Set(formSettingNames(forms))) {
    const value = get(name);
    if (value !== undefined) settings[name] = value;
  }
  return settings;
}

/**
 * Names an env file may hold besides the settings: `deno task compile` reads `.env` too, and
 * takes the env file path the binary may read from this one.
 */
export const ENV_FILE_EXTRA_NAMES: readonly string[] = ["CONTACTD_ENV_FILE"];

/** A line of an env file that is skipped, and why. Never carries a value. */
export type EnvFileWarning =
  | {
    /** 1-based line number. */
    readonly line: number;
    readonly problem: "unknown_name";
    /** The name as written (only a name: letters, digits, `_`). */
    readonly name: string;
    /** The known setting it is closest to. */
    readonly closest: string;
  }
  | { readonly line: number; readonly problem: "no_equals" };

/** What {@linkcode parseEnvFile} read: the values, and the lines it skipped. */
export interface EnvFile {
  readonly values: Record<string, string | undefined>;
  readonly warnings: readonly EnvFileWarning[];
  /**
   * The names starting `FORM_` (any case) and their lines: whether each is a setting of a form
   * depends on `FORMS`, known once the environment is read ({@linkcode formSettingWarnings}).
   */
  readonly formNames?: readonly { readonly line: number; readonly name: string }[];
}

/** `NAME=` (optionally after `export `), and whether the value opens a quote it does not close. */
const ASSIGNMENT = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$/;
/** Names that look like contactd's own: a known setting's first word, or `CONTACTD_`. */
const OWN_PREFIX = new RegExp(
  `^(?:CONTACTD|${[...new Set(SETTING_NAMES.map((name) => name.split("_")[0]))].join("|")})_`,
  "i",
);

/**
 * Names other Telegram relays use for the same settings (`TELEGRAM_BOT_TOKEN`, `BOT_TOKEN`,
 * `TOKEN`, `CHAT_ID`, `TELEGRAM_CHAT_ID`, ...), with the setting each means. `FORM_<ID>_...`
 * names are the forms' own and left out.
 */
const LOOKALIKES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^(?!FORM_)(?:[A-Z0-9]+_)*(?:BOT_)?TOKEN$/i, "MESSENGER_BOT_TOKEN"],
  [/^(?!FORM_)(?:[A-Z0-9]+_)*CHAT_?ID$/i, "MESSENGER_CHAT_ID"],
];

/**
 * Reads an env file's text as Node's `parseEnv` does (Deno's `--env-file` format), after
 * dropping a UTF-8 byte-order mark (editors on Windows write one: it would make the first name
 * unknown). Warns, by line number, about a line without `=` and about a name that is not a
 * setting but looks like one: misspelt (`MESSENGER_CHATID`, any case), with contactd's
 * prefixes, or another relay's name for a setting (`TELEGRAM_BOT_TOKEN`, `CHAT_ID`); the warning
 * names the closest setting, never the value.
 */
export function parseEnvFile(text: string): EnvFile {
  const clean = text.startsWith("\uFEFF") ? text.slice(1) : text;
  const known = [...SETTING_NAMES, ...ENV_FILE_EXTRA_NAMES];
  const warnings: EnvFileWarning[] = [];
  const formNames: { line: number; name: string }[] = [];
  let quote: string | undefined;
  for (const [index, raw] of clean.split(/\r?\n/).entries()) {
    const line = raw.trim();
    if (quote !== undefined) {
      // Inside a quoted value over several lines: its end is the first line holding the quote.
      if (line.includes(quote)) quote = undefined;
      continue;
    }
    if (line === "" || line.startsWith("#")) continue;
    const match = ASSIGNMENT.exec(line);
    if (match === null) {
      warnings.push({ line: index + 1, problem: "no_equals" });
      continue;
    }
    const [, name, value] = match as unknown as [string, string, string];
    const opening = /^["'`]/.exec(value)?.[0];
    if (opening !== undefined && !value.slice(1).includes(opening)) quote = opening;
    if (known.includes(name)) continue;
    if (/^FORM_/i.test(name)) {
      formNames.push({ line: index + 1, name });
      continue;
    }
    const lookalike = LOOKALIKES.find(([pattern]) => pattern.test(name))?.[1];
    if (lookalike !== undefined) {
      warnings.push({ line: index + 1, problem: "unknown_name", name, closest: lookalike });
      continue;
    }
    const closest = _closest(name.toUpperCase(), known);
    // A short name is a near miss at one edit (PORTS), a longer one at two or more.
    const near = name.length <= 5 ? 1 : Math.max(2, Math.floor(name.length / 6));
    if (closest.distance <= near || OWN_PREFIX.test(name)) {
      warnings.push({ line: index + 1, problem: "unknown_name", name, closest: closest.name });
    }
  }
  return { values: parseEnv(clean), warnings, formNames };
}

/**
 * The env file's `FORM_<X>_<SETTING>` lines that no form of `forms` (the `FORMS` in effect, the
 * environment's or the file's) reads: an `<X>` that is not a form's id as `FORM_<ID>_` spells it
 * (`FORM_CLIENTB_CHAT_ID` with `FORMS=client-b`), or a `<SETTING>` that is not a form's setting
 * (`FORM_SALES_CHATID`). Each names the closest setting of a form (else `FORMS`), never the
 * value. The process environment is read by name only: {@linkcode environmentLookalikes} asks it
 * for the likely misspellings.
 */
export function formSettingWarnings(file: EnvFile, forms: string | undefined): EnvFileWarning[] {
  const known: string[] = formSettingNames(forms);
  return (file.formNames ?? []).filter(({ name }) => !known.includes(name)).map((
    { line, name },
  ) => ({
    line,
    problem: "unknown_name",
    name,
    closest: known.length === 0 ? "FORMS" : _closest(name.toUpperCase(), known).name,
  }));
}

/** A variable of the process environment that means a form's setting but is spelt otherwise. */
export interface EnvironmentLookalike {
  /** The name as set (only a name, never the value). */
  readonly name: string;
  /** The form's setting it was meant to be. */
  readonly closest: FormSettingName;
}

/**
 * The variables of the process environment spelt as people spell a form's setting when they get
 * it wrong: the id's `-` dropped or kept (`FORM_SITEB_CHAT_ID`, `FORM_SITE-B_CHAT_ID` for
 * `site-b`), the id in lower case, or the setting's `_` dropped (`FORM_SALES_CHATID`). contactd
 * may read only the names it knows (`--allow-env=...,FORM_*`), so it cannot list the
 * environment: it asks for these names by `get`, each of a form of `forms`.
 */
export function environmentLookalikes(
  forms: string | undefined,
  get: (name: string) => string | undefined,
): EnvironmentLookalike[] {
  const ids = (forms ?? "").split(",").map((id) => id.trim()).filter((id) => FORM_ID.test(id));
  const found: EnvironmentLookalike[] = [];
  for (const id of new Set(ids)) {
    const spellings = [
      id.toUpperCase().replaceAll("-", ""),
      id.toUpperCase(),
      id.replaceAll("-", "_"),
    ];
    for (const setting of FORM_SETTINGS) {
      const closest = formSettingName(id, setting);
      const names = new Set(
        [...spellings, closest.slice("FORM_".length, -setting.length - 1)].flatMap((
          written,
        ) => [`FORM_${written}_${setting}`, `FORM_${written}_${setting.replaceAll("_", "")}`]),
      );
      names.delete(closest);
      for (const name of names) {
        if (get(name) !== undefined) found.push({ name, closest });
      }
    }
  }
  return found;
}

/** What to tell about {@linkcode environmentLookalikes}: never a value. */
export function environmentNotes(lookalikes: readonly EnvironmentLookalike[]): EnvFileNote[] {
  return lookalikes.map(({ name, closest }) => ({
    text: `the environment's ${name} is not a contactd setting (did you mean ${closest}?); ignored`,
    fields: { event: "env_setting_ignored", name, closest },
  }));
}

/** Something to tell about an env file: as a plain line, and as a log line's fields. */
export interface EnvFileNote {
  /** For a person at a terminal (the commands): no value, no secret. */
  readonly text: string;
  /** For the service's log (`serve`), at warn level. */
  readonly fields: LogFields;
}

/**
 * What to tell about the env file at `path`: each skipped line (`env_file_line_skipped`), and a
 * mode that lets group or others read it (`file_mode`, as the backup file's; `mode` is `null`
 * where the system has none).
 */
export function envFileNotes(
  path: string,
  file: Pick<EnvFile, "warnings">,
  mode: number | null,
): EnvFileNote[] {
  const notes: EnvFileNote[] = [];
  if (mode !== null && (mode & 0o077) !== 0) {
    const octal = (mode & 0o777).toString(8);
    notes.push({
      text:
        `${path} is readable by others (mode ${octal}): chmod 600 ${path}, it holds the bot token`,
      fields: {
        event: "file_mode",
        file: path,
        mode: octal,
        hint: "chmod 600 it: it holds the bot token",
      },
    });
  }
  for (const warning of file.warnings) {
    notes.push(
      warning.problem === "no_equals"
        ? {
          text: `${path} line ${warning.line}: no "=" (settings are NAME=value lines); skipped`,
          fields: { event: "env_file_line_skipped", file: path, ...warning },
        }
        : {
          text: `${path} line ${warning.line}: ${warning.name} is not a contactd setting ` +
            `(did you mean ${warning.closest}?); skipped`,
          fields: { event: "env_file_line_skipped", file: path, ...warning },
        },
    );
  }
  return notes;
}

/** The known name nearest to `name` (edit distance; `name` is compared in upper case). */
function _closest(name: string, known: readonly string[]): { name: string; distance: number } {
  let best = { name: known[0]!, distance: Infinity };
  for (const candidate of known) {
    const distance = _editDistance(name, candidate);
    if (distance < best.distance) best = { name: candidate, distance };
  }
  return best;
}

/**
 * Edit distance: insertions, deletions, substitutions and swaps of two neighbours (`PROT` is
 * one edit from `PORT`), each counted once (optimal string alignment).
 */
function _editDistance(a: string, b: string): number {
  const rows = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let cost = Math.min(
        rows[i - 1]![j]! + 1,
        row[j - 1]! + 1,
        rows[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        cost = Math.min(cost, rows[i - 2]![j - 2]! + 1);
      }
      row[j] = cost;
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
