/**
 * Kinds of setting value: how one value is read from a string (an environment variable, a flag)
 * or from a config file's own types (YAML/TOML numbers, booleans, strings, lists), and the words
 * that describe what it takes. Those words appear in three places from this one source: the
 * error for a bad value (`registry.port: expected an integer 0-65535, got "x"`), `slipway --help`
 * and docs/settings.md (server/settings/schema.ts holds the settings themselves).
 */
import { isAbsolute, resolve } from 'node:path';

/** A bad value; `detail` (optional) adds the reason to the standard message. */
export class Invalid extends Error {
  constructor(readonly detail?: string) {
    super(detail ?? 'invalid');
  }
}

/** Where a value came from: a config file (with its directory, for relative paths), the environment or a flag. */
export interface Origin {
  source: 'file' | 'env' | 'flag';
  /** Directory that relative paths are resolved against (the config file's, else the working directory). */
  baseDir: string;
}

/** A kind of value. */
export interface Kind<T> {
  /** What the setting takes, for errors, help and docs: "an integer 0-65535". */
  expects: string;
  /** Placeholder in `--help`: `N`, `URL`, `on|off`. */
  placeholder: string;
  /** Never echoed back (keys, passwords): errors say what is wrong without the value. */
  secret?: boolean;
  /**
   * Parses one value. Strings come from every source; numbers, booleans and arrays only from a file.
   * @throws Invalid when the value is not of this kind.
   */
  parse(value: unknown, origin: Origin): T;
  /** The value as shown by `slipway config print` (default: String). */
  show?(value: T): string;
  /** A shown form of a raw value that may hold a secret part (a password in a URL). */
  redact?(raw: string): string;
}

const text = (v: unknown): string => {
  if (typeof v === 'string') return v;
  throw new Invalid();
};

/** An integer from `min` to `max` (default: no bound but the safe integers); strings of digits or file integers. */
export function integer(min: number, max = Number.MAX_SAFE_INTEGER, unit = ''): Kind<number> {
  return {
    expects: `an integer ${max === Number.MAX_SAFE_INTEGER ? `${min} or more` : `${min}-${max}`}${unit ? ` (${unit})` : ''}`,
    placeholder: 'N',
    parse(v) {
      const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : NaN;
      if (!Number.isInteger(n) || n < min || n > max) throw new Invalid();
      return n;
    },
  };
}

/** A TCP port, 0 (any free port) to 65535. */
export const port = (): Kind<number> => integer(0, 65535);

/** A non-negative number (decimals allowed), strictly above 0 when `aboveZero`. */
export function decimal(unit: string, aboveZero: boolean): Kind<number> {
  return {
    expects: `a number of ${unit}${aboveZero ? ' above 0' : ', 0 or more'} (decimals allowed)`,
    placeholder: unit === 'seconds' ? 'SECONDS' : 'N',
    parse(v) {
      const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d+(\.\d+)?$/.test(v) ? Number(v) : NaN;
      if (!Number.isFinite(n) || n < 0 || (aboveZero && n === 0)) throw new Invalid();
      return n;
    },
  };
}

/** On or off: on/true/1, off/false/0, or a file boolean. */
export function onOff(): Kind<boolean> {
  return {
    expects: 'on or off',
    placeholder: 'on|off',
    parse(v) {
      if (typeof v === 'boolean') return v;
      const s = text(v);
      if (/^(on|true|1)$/.test(s)) return true;
      if (/^(off|false|0)$/.test(s)) return false;
      throw new Invalid();
    },
    show: (b) => (b ? 'on' : 'off'),
  };
}

/** One of a fixed list of words. */
export function oneOf<T extends string>(values: readonly T[]): Kind<T> {
  return {
    expects: `one of ${values.join(', ')}`,
    placeholder: values.join('|'),
    parse(v) {
      const s = text(v);
      if (!(values as readonly string[]).includes(s)) throw new Invalid();
      return s as T;
    },
  };
}

/** A string matching `pattern`, or checked by `check` (which throws Invalid with a reason). */
export function word(expects: string, placeholder: string, pattern: RegExp, check?: (s: string) => void): Kind<string> {
  return {
    expects, placeholder,
    parse(v) {
      const s = text(v);
      if (!pattern.test(s)) throw new Invalid();
      check?.(s);
      return s;
    },
  };
}

/**
 * Parses a URL whose scheme is one of `protocols` (`'http:'`, with the colon).
 * @throws Invalid when `s` is not a URL or has another scheme.
 */
export function urlOf(s: string, protocols: readonly string[]): URL {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new Invalid();
  }
  if (!protocols.includes(u.protocol)) throw new Invalid();
  return u;
}

/** An http or https URL; trailing slashes dropped. */
export function httpUrl(): Kind<string> {
  return {
    expects: 'an http or https URL',
    placeholder: 'URL',
    parse(v) {
      const s = text(v);
      urlOf(s, ['http:', 'https:']);
      return s.replace(/\/+$/, '');
    },
  };
}

/** A file or directory path; relative paths resolve against the origin's directory. */
export function path(placeholder = 'FILE'): Kind<string> {
  return {
    expects: 'a path',
    placeholder,
    parse(v, origin) {
      const s = text(v);
      if (s === '' || s.includes('\0')) throw new Invalid();
      return isAbsolute(s) ? s : resolve(origin.baseDir, s);
    },
  };
}

/**
 * A list of words: a comma-separated string (`none` = the empty list) or a file array.
 * @param item pattern of one element
 */
export function wordList(expects: string, item: RegExp): Kind<string[]> {
  return {
    expects,
    placeholder: 'LIST',
    parse(v) {
      const names = Array.isArray(v) ? v : text(v) === 'none' ? [] : text(v).split(',').map((s) => s.trim()).filter((s) => s !== '');
      for (const n of names) if (typeof n !== 'string' || !item.test(n)) throw new Invalid(`${JSON.stringify(n)} is not one`);
      return names as string[];
    },
    show: (l) => (l.length === 0 ? 'none' : l.join(',')),
  };
}

/** A secret string (never echoed); `check` throws Invalid with a reason that does not contain it. */
export function secret(expects: string, check: (s: string) => void): Kind<string> {
  return {
    expects, placeholder: 'SECRET', secret: true,
    parse(v) {
      const s = text(v);
      check(s);
      return s;
    },
    show: () => '(set; not shown)',
  };
}

/**
 * How a bad value is quoted in a message: JSON for strings and numbers (the secret part of a
 * value redacted), cut to 80 characters. Never called for a secret kind.
 */
export function quote(kind: Kind<unknown>, value: unknown): string {
  const s = JSON.stringify(kind.redact && typeof value === 'string' ? kind.redact(value) : value) ?? String(value);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
