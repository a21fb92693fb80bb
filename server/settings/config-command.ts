/**
 * `slipway config check` and `slipway config print`: the settings a node would start with,
 * checked without starting it. Secrets never appear: a key or a secret file's content is shown
 * as "(set; not shown)", a password in a database URL as `***`.
 */
import { join } from 'node:path';
import type { Config } from '../config.js';
import { redactDatabaseUrl } from '../../engine/store.js';
import { defaultOf } from './describe.js';
import type { Values } from './load.js';
import { SETTINGS } from './schema.js';

/** What loadSettings returns (server/config.ts). */
export interface Loaded {
  config: Config;
  values: Values;
  file?: string;
}

/**
 * The summary `slipway config check` prints for settings that loaded; `env` is searched for
 * SLIPWAY_* variables that name no setting (a misspelt variable is otherwise silently unused).
 */
export function checkSummary({ config: c, values, file }: Loaded, env: Record<string, string | undefined>): string {
  const known = new Set(['SLIPWAY_CONFIG', ...SETTINGS.map((s) => s.env)]);
  const unknown = Object.keys(env).filter((k) => k.startsWith('SLIPWAY_') && !known.has(k) && env[k] !== '').sort();
  const count = (prefix: string) => [...values.values()].filter((v) => v.where.startsWith(prefix)).length;
  const scheme = (tls: boolean) => (tls ? 'https' : 'http');
  const b = c.blobStore;
  const key = values.get('server_key.value')?.where ?? values.get('server_key.file')?.where.concat(` (${c.keyFile})`) ?? `the default ${join(c.dataDir, 'keys', 'server.key')}`;
  return [
    `${file === undefined ? 'No config file' : `Config file ${file}`}: good. Settings given: ${count('config file')} in the file, ${count('environment')} in the environment, ${count('flag')} as flags; the rest default.`,
    `Hosts: registry ${scheme(c.registryTls)}://${c.host}:${c.registryPort}, upload ${scheme(c.uploadTls)}://${c.host}:${c.uploadPort}, API http://${c.host}:${c.apiPort}, auth http://${c.host}:${c.authPort}, admin http://${c.adminHost}:${c.adminPort}.`,
    `Node ${c.nodeName}, data directory ${c.dataDir}.`,
    `Metadata: ${c.databaseUrl === undefined ? `embedded LMDB in ${join(c.dataDir, 'lmdb')}` : `PostgreSQL ${redactDatabaseUrl(c.databaseUrl)} (pool ${c.databasePool})`}.`,
    `Blobs: ${b.kind === 'fs' ? `files in ${join(c.dataDir, 'blobs')}` : `s3://${b.bucket}/${b.prefix} at ${b.endpoint ?? `AWS S3 (${b.region})`}, credentials ${b.credentials ? 'from s3.access_key_id and s3.secret_access_key_file' : 'from the AWS SDK\'s chain'}`}.`,
    `Server key: ${key}.`,
    `Registry notifications: ${c.notificationEndpoints.length === 0 ? 'none' : c.notificationEndpoints.map((e) => `${e.name} → ${e.url}`).join(', ')}.`,
    ...(unknown.length > 0 ? [`Not settings (unused): ${unknown.join(', ')}.`] : []),
  ].join('\n');
}

/**
 * `slipway config print`: every setting with its effective value and where it came from, one a
 * line (`registry.port = 5000  # default`), or a JSON object `{path: {value, from}}`.
 */
export function printSettings({ values }: Loaded, json: boolean): string {
  const rows = SETTINGS.map((s) => {
    const v = values.get(s.path);
    const shown = v === undefined ? defaultOf(s) : s.kind.show ? s.kind.show(v.value) : Array.isArray(v.value) ? v.value.join(',') : String(v.value);
    return { path: s.path, value: shown, from: v?.where ?? 'default' };
  });
  if (json) return JSON.stringify(Object.fromEntries(rows.map((r) => [r.path, { value: r.value, from: r.from }])));
  const width = Math.max(...rows.map((r) => r.path.length));
  return rows.map((r) => `${r.path.padEnd(width)} = ${r.value}  # ${r.from}`).join('\n');
}
