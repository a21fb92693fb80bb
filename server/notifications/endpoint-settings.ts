/**
 * The `notifications.endpoints` setting: a list of endpoints written as distribution writes them
 * (distribution docs "Configuration" `notifications.endpoints`; docs/notifications.md), in the
 * config file as a list of tables, in SLIPWAY_NOTIFICATIONS_ENDPOINTS or the flag as the same
 * list in JSON. Header values are secrets (an `Authorization` token): a bad value is reported
 * without the value, `slipway config print` never shows them, and a value may be read from a file
 * (`{ file: PATH }`, its first line; relative to the config file's directory) so the config file
 * need not hold it.
 */
import { isAbsolute, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { Invalid, urlOf, type Kind, type Origin } from '../settings/kinds.js';
import { ENDPOINT_DEFAULTS, type NotificationEndpoint } from '../../engine/notifications/endpoints.js';
import { EVENT_ACTIONS, type EventAction } from '../../engine/notifications/envelope.js';

const NAME = /^[A-Za-z0-9._-]{1,63}$/;
/** A header field name (RFC 9110 §5.1 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** A header value Slipway sends: visible ASCII and spaces, no line breaks (RFC 9110 §5.5). */
const HEADER_VALUE = /^[\x20-\x7e]{0,8192}$/;
const KEYS = ['name', 'disabled', 'url', 'headers', 'timeout', 'threshold', 'backoff', 'ignoredmediatypes', 'ignore'];
/** Headers Slipway sets itself on a notification request. */
const RESERVED = new Set(['content-type', 'content-length', 'host', 'transfer-encoding', 'connection']);
/** Most endpoints one node notifies. */
export const MAX_ENDPOINTS = 16;

const table = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A duration in ms: a number of seconds, or Go's notation as distribution takes it (`500ms`,
 * `1s`, `1m30s`, `2h`).
 * @throws Invalid when neither, or not above 0.
 */
export function durationMs(v: unknown): number {
  let ms = NaN;
  if (typeof v === 'number') ms = v * 1000;
  else if (typeof v === 'string' && /^(\d+(\.\d+)?(ms|s|m|h))+$/.test(v)) {
    const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
    ms = [...v.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)].reduce((sum, m) => sum + Number(m[1]) * unit[m[2] as keyof typeof unit], 0);
  }
  if (!Number.isFinite(ms) || ms <= 0) throw new Invalid('expected a duration such as 500ms, 2s or 1m (or a number of seconds) above 0');
  return Math.round(ms);
}

function strings(v: unknown, what: string): string[] {
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) throw new Invalid(`${what}: expected a list of strings`);
  return list as string[];
}

/** One header value: a string, or `{ file: PATH }` read now (its first line). Never quoted in errors. */
function headerValue(v: unknown, where: string, origin: Origin): string {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (table(v) && typeof v.file === 'string' && Object.keys(v).length === 1) {
    const file = isAbsolute(v.file) ? v.file : resolve(origin.baseDir, v.file);
    try {
      s = readFileSync(file, 'utf8').split(/\r?\n/)[0]!;
    } catch (e) {
      throw new Invalid(`${where}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  } else throw new Invalid(`${where}: expected a string, a list of them, or { file: PATH }`);
  if (!HEADER_VALUE.test(s)) throw new Invalid(`${where}: a header value holds a character other than visible ASCII and spaces (value not shown)`);
  return s;
}

function headersOf(v: unknown, where: string, origin: Origin): Record<string, string[]> {
  if (v === undefined) return {};
  if (!table(v)) throw new Invalid(`${where}: expected a table of header name → value(s)`);
  const out: Record<string, string[]> = {};
  for (const [name, raw] of Object.entries(v)) {
    if (!HEADER_NAME.test(name)) throw new Invalid(`${where}: ${JSON.stringify(name.slice(0, 64))} is not a header name`);
    if (RESERVED.has(name.toLowerCase())) throw new Invalid(`${where}: ${name} is set by Slipway`);
    const values = Array.isArray(raw) ? raw : [raw];
    out[name] = values.map((x, i) => headerValue(x, `${where}.${name}${Array.isArray(raw) ? `[${i}]` : ''}`, origin));
  }
  return out;
}

/** One endpoint table; `null` when `disabled: true` (kept out, as distribution does). */
function endpointOf(v: unknown, i: number, origin: Origin): NotificationEndpoint | null {
  const at = `endpoint ${i + 1}`;
  if (!table(v)) throw new Invalid(`${at}: expected a table (name, url, …)`);
  const where = typeof v.name === 'string' && NAME.test(v.name) ? `endpoint ${JSON.stringify(v.name)}` : at;
  for (const k of Object.keys(v)) if (!KEYS.includes(k)) throw new Invalid(`${where}: unknown key ${JSON.stringify(k.slice(0, 64))} (known: ${KEYS.join(', ')})`);
  if (typeof v.name !== 'string' || !NAME.test(v.name)) throw new Invalid(`${at}: name: expected 1-63 characters of A-Z a-z 0-9 . _ -`);
  if (v.disabled !== undefined && typeof v.disabled !== 'boolean') throw new Invalid(`${where}: disabled: expected true or false`);
  if (v.disabled === true) return null;
  if (typeof v.url !== 'string') throw new Invalid(`${where}: url: expected an http or https URL`);
  try {
    const u = urlOf(v.url, ['http:', 'https:']);
    if (u.username !== '' || u.password !== '') throw new Invalid();
  } catch {
    throw new Invalid(`${where}: url: expected an http or https URL without credentials (give them in headers)`);
  }
  const ignore = v.ignore === undefined ? {} : v.ignore;
  if (!table(ignore) || Object.keys(ignore).some((k) => k !== 'mediatypes' && k !== 'actions')) throw new Invalid(`${where}: ignore: expected a table of mediatypes and actions`);
  const actions = ignore.actions === undefined ? [] : strings(ignore.actions, `${where}: ignore.actions`);
  for (const a of actions) if (!(EVENT_ACTIONS as readonly string[]).includes(a)) throw new Invalid(`${where}: ignore.actions: ${JSON.stringify(a.slice(0, 64))} is not one of ${EVENT_ACTIONS.join(', ')}`);
  const count = (k: 'timeout' | 'backoff') => {
    try {
      return v[k] === undefined ? ENDPOINT_DEFAULTS[`${k}Ms`] : durationMs(v[k]);
    } catch (e) {
      throw new Invalid(`${where}: ${k}: ${(e as Invalid).detail}`);
    }
  };
  const threshold = v.threshold ?? ENDPOINT_DEFAULTS.threshold;
  if (typeof threshold !== 'number' || !Number.isInteger(threshold) || threshold < 1) throw new Invalid(`${where}: threshold: expected an integer 1 or more`);
  return {
    name: v.name, url: v.url, headers: headersOf(v.headers, `${where}: headers`, origin),
    timeoutMs: count('timeout'), threshold, backoffMs: count('backoff'),
    ignoredMediaTypes: [
      ...(v.ignoredmediatypes === undefined ? [] : strings(v.ignoredmediatypes, `${where}: ignoredmediatypes`)),
      ...(ignore.mediatypes === undefined ? [] : strings(ignore.mediatypes, `${where}: ignore.mediatypes`)),
    ],
    ignoredActions: actions as EventAction[],
  };
}

/**
 * The kind of `notifications.endpoints`: a list of endpoint tables (a file's list, or JSON text
 * from the environment or a flag); `none` or `[]` = no endpoint.
 * @throws Invalid naming the endpoint and key at fault, never a header value.
 */
export function notificationEndpoints(): Kind<NotificationEndpoint[]> {
  return {
    expects: 'a list of endpoints (name, url, headers, timeout, threshold, backoff, ignoredmediatypes, ignore; JSON outside a config file), or none',
    placeholder: 'JSON',
    secret: true,
    parse(v, origin) {
      let list = v;
      if (typeof v === 'string') {
        if (v.trim() === 'none') return [];
        try {
          list = JSON.parse(v);
        } catch {
          throw new Invalid('is not JSON');
        }
      }
      if (!Array.isArray(list)) throw new Invalid('is not a list');
      let out: NotificationEndpoint[];
      try {
        out = list.map((e, i) => endpointOf(e, i, origin)).filter((e): e is NotificationEndpoint => e !== null);
      } catch (e) {
        throw e instanceof Invalid ? new Invalid(`is wrong at ${e.detail}`) : e;
      }
      if (out.length > MAX_ENDPOINTS) throw new Invalid(`names ${out.length} endpoints; at most ${MAX_ENDPOINTS}`);
      const names = new Set<string>();
      for (const e of out) {
        if (names.has(e.name)) throw new Invalid(`names endpoint ${JSON.stringify(e.name)} twice`);
        names.add(e.name);
      }
      return out;
    },
    show: (l) => (l.length === 0 ? 'none' : l.map((e) => `${e.name} → ${e.url}${Object.keys(e.headers).length ? ` (headers ${Object.keys(e.headers).join(', ')}: values not shown)` : ''}`).join('; ')),
  };
}
