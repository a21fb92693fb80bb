/**
 * Reads the settings of server/settings/schema.ts from their three sources, later winning: the
 * config file (`--config FILE` or `SLIPWAY_CONFIG`; YAML for `.yaml`/`.yml`, TOML for `.toml`),
 * then the environment, then the flags. Every value is checked against its kind; an unknown key
 * or a bad value is refused with the key's path (`config file F: registry.port: expected an
 * integer 0-65535, got "x"`), and every problem of a run is reported at once (ConfigError).
 * Relative paths in a config file are relative to the file's directory.
 */
import { readFileSync } from 'node:fs';
import { dirname, extname, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { parse as parseToml } from 'smol-toml';
import { Invalid, quote, type Origin } from './kinds.js';
import { BY_PATH, flagOf, SETTINGS, type Setting } from './schema.js';

/** One setting's value and where it came from (`environment variable SLIPWAY_X`, `flag --x`, `config file F: a.b`). */
export interface Value {
  value: unknown;
  where: string;
}

/** The values given, by setting path (unset settings are absent). */
export type Values = Map<string, Value>;

/** Settings that are wrong; `problems` has one line per bad key or value. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.length === 1 ? problems[0] : `${problems.length} problems in the settings:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

type Source = Record<string, string | undefined>;

/** Every flag name a setting answers to (primary and earlier spellings), without `--`; plus `config`. */
export const SETTING_FLAGS: readonly string[] = ['config', ...SETTINGS.flatMap((s) => [flagOf(s), ...(s.aliases ?? [])].filter((f): f is string => f !== undefined))];

/** The config file named by the flags or the environment, resolved; undefined when none. */
export function configFileOf(env: Source, flags: Source): string | undefined {
  const f = flags.config ?? (env.SLIPWAY_CONFIG === '' ? undefined : env.SLIPWAY_CONFIG);
  return f === undefined ? undefined : resolve(f);
}

/**
 * Reads every setting from the config file, `env` and `flags` (flag names as in SETTING_FLAGS).
 * @returns the values given and the config file read, if any
 * @throws ConfigError listing every unknown key, bad value, and unreadable or malformed file.
 */
export function readSettings(env: Source, flags: Source): { values: Values; file?: string } {
  const values: Values = new Map();
  const problems: string[] = [];
  const take = (s: Setting, raw: unknown, where: string, origin: Origin) => {
    try {
      values.set(s.path, { value: s.kind.parse(raw, origin), where });
    } catch (e) {
      if (!(e instanceof Invalid)) throw e;
      problems.push(s.kind.secret
        ? `${where}: expected ${s.kind.expects}; the value given (not shown) ${e.detail ?? 'is not'}`
        : `${where}: expected ${s.kind.expects}, got ${quote(s.kind, raw)}${e.detail ? ` (${e.detail})` : ''}`);
    }
  };
  const file = configFileOf(env, flags);
  if (file !== undefined) {
    const tree = parseFile(file);
    const origin: Origin = { source: 'file', baseDir: dirname(file) };
    walk(tree, '', (s, raw, path) => {
      if (s.envOnly) {
        problems.push(`config file ${file}: ${path}: a secret is not taken from a config file; give it in the environment (${s.env})${s.path.endsWith('value') ? ` or as a file (${s.path.replace(/value$/, 'file')})` : ''}`);
      } else {
        take(s, raw, `config file ${file}: ${path}`, origin);
        const shown = values.get(s.path);
        if (s.path === 'database.url' && shown && new URL(shown.value as string).password !== '') {
          problems.push(`config file ${file}: database.url: holds a password; a config file must not: give it in database.password_file, or the whole URL in SLIPWAY_DATABASE_URL`);
        }
      }
    }, (p) => problems.push(`config file ${file}: ${p}`));
  }
  const cwd: Origin = { source: 'env', baseDir: process.cwd() };
  for (const s of SETTINGS) {
    const v = env[s.env];
    if (v !== undefined && v !== '') take(s, v, `environment variable ${s.env}`, cwd);
  }
  for (const s of SETTINGS) {
    const name = [flagOf(s), ...(s.aliases ?? [])].find((f) => f !== undefined && flags[f] !== undefined);
    if (name !== undefined) take(s, flags[name], `flag --${name}`, { source: 'flag', baseDir: process.cwd() });
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { values, ...(file === undefined ? {} : { file }) };
}

/** Section names (`registry`, `s3`) with the keys under each. */
const SECTIONS: ReadonlyMap<string, string[]> = (() => {
  const m = new Map<string, string[]>();
  for (const s of SETTINGS) {
    const parts = s.path.split('.');
    for (let i = 1; i < parts.length; i++) {
      const sec = parts.slice(0, i).join('.');
      if (!m.has(sec)) m.set(sec, []);
      if (!m.get(sec)!.includes(parts[i]!)) m.get(sec)!.push(parts[i]!);
    }
  }
  return m;
})();
const TOP = [...new Set(SETTINGS.map((s) => s.path.split('.')[0]!))];

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

/** Visits each leaf of the tree that names a setting; `problem` gets each unknown key or misplaced value. */
function walk(tree: Record<string, unknown>, prefix: string, leaf: (s: Setting, raw: unknown, path: string) => void, problem: (p: string) => void): void {
  for (const [k, v] of Object.entries(tree)) {
    const p = prefix === '' ? k : `${prefix}.${k}`;
    const s = BY_PATH.get(p);
    const section = SECTIONS.get(p);
    if (s) leaf(s, v, p);
    else if (section) {
      if (isTable(v)) walk(v, p, leaf, problem);
      else problem(`${p}: expected a table of settings (${section.join(', ')}), got ${JSON.stringify(v)}`);
    } else {
      const known = prefix === '' ? TOP : SECTIONS.get(prefix)!;
      problem(`${p}: unknown setting (known${prefix === '' ? '' : ` in ${prefix}`}: ${known.join(', ')})`);
    }
  }
}

/**
 * Reads and parses a config file: TOML for `.toml`, YAML (1.2, duplicate keys refused) for
 * `.yaml`/`.yml`.
 * @throws ConfigError naming the file (and the line and column of a syntax error).
 */
function parseFile(file: string): Record<string, unknown> {
  const fail = (why: string): never => {
    throw new ConfigError([`config file ${file}: ${why}`]);
  };
  const ext = extname(file).toLowerCase();
  if (ext !== '.toml' && ext !== '.yaml' && ext !== '.yml') fail('name it *.yaml, *.yml (YAML) or *.toml (TOML)');
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    fail(`cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let tree: unknown;
  if (ext === '.toml') {
    try {
      tree = parseToml(text);
    } catch (e) {
      fail(`TOML syntax error: ${(e as Error).message.split('\n')[0]}${lineOf(e)}`);
    }
  } else {
    const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
    const err = doc.errors[0];
    if (err) fail(`YAML syntax error at line ${err.linePos?.[0].line ?? '?'}, column ${err.linePos?.[0].col ?? '?'}: ${err.message.split('\n')[0]}`);
    tree = doc.toJS() ?? {};
  }
  if (!isTable(tree)) fail('expected a table of settings at the top');
  return tree as Record<string, unknown>;
}

function lineOf(e: unknown): string {
  const { line, column } = e as { line?: number; column?: number };
  return line === undefined ? '' : ` (line ${line}, column ${column ?? '?'})`;
}

/** The name of a setting for a message: where its value came from, or its key and variable when unset. */
export function nameOf(values: Values, path: string): string {
  return values.get(path)?.where ?? `${path} (${BY_PATH.get(path)!.env})`;
}

/**
 * The first line of the file a `…_file` setting names: a secret (password, access key), never shown.
 * @throws Error naming the setting when the file cannot be read or is empty.
 */
export function readSecretFile(values: Values, path: string): string {
  const file = values.get(path)!.value as string;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${nameOf(values, path)}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const line = text.split(/\r?\n/)[0]!;
  if (line === '') throw new Error(`${nameOf(values, path)}: ${file} is empty; it must hold the secret on its first line`);
  return line;
}
