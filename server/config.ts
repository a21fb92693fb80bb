/**
 * Typed configuration: embedded defaults, then environment variables, then command-line flags.
 * A bad value stops the start with a message naming the setting (docs/architecture.md ("Decisions that hold
 * across"). Public URLs are configuration, not derived from the listen address, except that an
 * unset URL defaults to http://<host>:<bound port> (so port 0 works in tests).
 */
import { resolve } from 'node:path';
import { loadBlobStoreSettings, type BlobStoreSettings } from './blob-store-settings.js';
import { PART_HEADROOM } from '../engine/blobs/s3-budget.js';
import { redactDatabaseUrl, type DatabaseSettings } from '../engine/store.js';
import { decodeServerKey } from '../engine/identity/keys.js';
import { checkNodeName, defaultNodeName } from '../engine/blobs/node-name.js';
import { DEFAULT_INSPECT_LIMITS, type InspectLimits } from '../engine/registry/inspect-limits.js';
import { parseTrustedProxies } from './http/client-address.js';

export interface Config {
  /** Data directory: lmdb/, blobs/, uploads/, keys/. Env SLIPWAY_DATA, flag --data. */
  dataDir: string;
  /** Listen address of every host. Env SLIPWAY_HOST, flag --host. */
  host: string;
  /** Registry host port (Docker Registry HTTP API V2). Env SLIPWAY_REGISTRY_PORT. */
  registryPort: number;
  /** Platform API port. Env SLIPWAY_API_PORT. */
  apiPort: number;
  /** OAuth web-flow host port. Env SLIPWAY_AUTH_PORT. */
  authPort: number;
  /** Upload host port: where upload-session Locations point (own HTTP/1.1 listener, any body size). Env SLIPWAY_UPLOAD_PORT. */
  uploadPort: number;
  /** Public base URLs, no trailing slash; undefined = http://<host>:<bound port>. */
  registryUrl?: string;
  apiUrl?: string;
  authUrl?: string;
  uploadUrl?: string;
  /** Vendor part of the API media type `application/vnd.<vendor>+json`. Env SLIPWAY_VENDOR. */
  vendor: string;
  /**
   * Further vendor names accepted in `Accept: application/vnd.<name>+json` as the same API
   * (server/api/accept.ts): comma-separated; `none` = only `vendor`. Default `heroku`, the
   * media type the platform's own CLI hard-codes. Env SLIPWAY_ACCEPT_VENDORS.
   */
  acceptVendors: string[];
  /**
   * The `web_url` of an app: a URL template in which `{app}` is replaced by the app name;
   * unset = derived from the API URL (see server/api/web-url.ts). Env SLIPWAY_APP_URL_TEMPLATE.
   */
  appUrlTemplate?: string;
  /** pino level. Env SLIPWAY_LOG_LEVEL. */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Upload sessions idle this long are reaped (seconds). Env SLIPWAY_UPLOAD_TTL. */
  uploadTtlSeconds: number;
  /** Lifetime of registry bearer tokens (seconds). */
  registryTokenTtlSeconds: number;
  /** Serve the registry host over TLS (default on; see server/http/tls.ts). Env SLIPWAY_REGISTRY_TLS=on|off. */
  registryTls: boolean;
  /** Serve the upload host over TLS (default off: loopback bulk data). Env SLIPWAY_UPLOAD_TLS=on|off. */
  uploadTls: boolean;
  /** PEM certificate and key files; unset = a self-signed pair in <data>/keys. Env SLIPWAY_TLS_CERT, SLIPWAY_TLS_KEY. */
  tlsCert?: string;
  tlsKey?: string;
  /**
   * The server key file (32 random bytes: registry tokens, upload capabilities, TOTP sealing,
   * CSRF); unset = `<data>/keys/server.key`. Created (0600) when absent. Env SLIPWAY_KEY_FILE,
   * flag --key-file.
   */
  keyFile?: string;
  /**
   * The server key itself, base64 of 32 bytes (every node of a cluster is given the same one;
   * docs/cluster.md). Wins over the key file; setting both is an error. Environment only (Env
   * SLIPWAY_SERVER_KEY): a flag would show it in the process list. Never logged.
   */
  serverKey?: string;
  /**
   * A second key accepted when verifying signatures and unsealing, never used to sign or seal:
   * the next key before a rotation, the previous one after it (docs/cluster.md "Shared secrets
   * and rotation"). Env SLIPWAY_ACCEPTED_SERVER_KEY (base64, environment only) or
   * SLIPWAY_ACCEPTED_KEY_FILE (flag --accepted-key-file; never created).
   */
  acceptedServerKey?: string;
  acceptedKeyFile?: string;
  /**
   * What serves the registry, API and auth hosts: `h1`, the own HTTP/1.1 listener (every
   * malformed request gets a status: 400, 405 with Allow, 431), or `uws`, uWebSockets.js (faster;
   * its native parser closes some malformed requests without a response, docs/decisions.md "HTTP listeners").
   * The upload host always uses `h1`. Env SLIPWAY_LISTENER, flag --listener.
   */
  listener: 'h1' | 'uws';
  /** Per-account API rate-limit pool, requests (docs/platform-conventions.md 1.6: 4500). Env SLIPWAY_RATE_LIMIT_POOL. */
  rateLimitPool: number;
  /** Refill of the rate-limit pool, requests per minute (docs/platform-conventions.md 1.6: 75). Env SLIPWAY_RATE_LIMIT_PER_MINUTE. */
  rateLimitPerMinute: number;
  /** Seconds between online GC runs (image retention, then unreferenced blobs); 0 = no schedule (`slipway gc` only). Decimals allowed. Env SLIPWAY_GC_INTERVAL. */
  gcIntervalSeconds: number;
  /** Most bytes of upload buffer memory, all sessions together (MiB); past it bodies wait and new appends get 503. Env SLIPWAY_UPLOAD_MEMORY. */
  uploadMemoryMiB: number;
  /** Open upload sessions one account may have at once. Env SLIPWAY_UPLOAD_SESSIONS. */
  uploadSessionsPerAccount: number;
  /** Minimum receive rate of an upload body (KiB/s); 0 = no minimum. Decimals allowed. Env SLIPWAY_UPLOAD_MIN_RATE. */
  uploadMinRateKiB: number;
  /** Window over which that rate is measured (seconds). Decimals allowed. Env SLIPWAY_UPLOAD_RATE_WINDOW. */
  uploadRateWindowSeconds: number;
  /** Seconds between runs of the upload reaper (removes sessions idle past SLIPWAY_UPLOAD_TTL). Decimals allowed. Env SLIPWAY_UPLOAD_REAP_INTERVAL. */
  uploadReapIntervalSeconds: number;
  /**
   * This node's name (engine/blobs/node-name.ts): upload session records, their S3 keys and
   * their Location capability carry it, so nodes sharing one database and one S3 prefix serve,
   * recover and reap only their own sessions. Default: the host name's first label. Distinct
   * per node of a cluster. Env SLIPWAY_NODE_NAME.
   */
  nodeName: string;
  /** Seconds an unreferenced blob is kept after its commit or last HEAD/GET/mount (engine/registry/gc.ts); 0 allowed (tests). Env SLIPWAY_GC_GRACE. */
  gcGraceSeconds: number;
  /**
   * Longest time one poll of a `heroku login` browser login is held open waiting for the
   * browser (seconds; decimals allowed); then it answers 503 and the CLI polls again. Below the
   * CLI's 60-second request timeout. Env SLIPWAY_CLI_LOGIN_POLL_WAIT.
   */
  cliLoginPollSeconds: number;
  /**
   * Browser logins of the platform CLI (`heroku login`) one source address may have waiting at
   * once (docs/faults.md "CLI logins"); more get 429. Env SLIPWAY_CLI_LOGINS_PER_SOURCE.
   */
  cliLoginsPerSource: number;
  /**
   * Load balancers and proxies whose `X-Forwarded-For` is believed: comma-separated IP
   * addresses or CIDR ranges; `none` (default) = the socket peer is the source of every request
   * (docs/faults.md "CLI logins"). Env SLIPWAY_TRUSTED_PROXIES.
   */
  trustedProxies: string[];
  /** Worker threads for image inspection at manifest PUT (one account uses all but one, at least 1). Env SLIPWAY_INSPECT_THREADS. */
  inspectThreads: number;
  /** Most bytes one layer's scan inflates (MiB); past it the layer is not fully inspected (docs/faults.md "Image inspection"). Env SLIPWAY_INSPECT_LAYER_MAX_MIB. */
  inspectLayerMaxMiB: number;
  /** Most tar entries one layer's scan reads. Env SLIPWAY_INSPECT_LAYER_MAX_ENTRIES. */
  inspectLayerMaxEntries: number;
  /** Longest one layer's scan runs (seconds, decimals allowed). Env SLIPWAY_INSPECT_LAYER_SECONDS. */
  inspectLayerSeconds: number;
  /** Admin listener (metrics, health, readiness) address; loopback by default. Env SLIPWAY_ADMIN_HOST. */
  adminHost: string;
  /** Admin listener port. Env SLIPWAY_ADMIN_PORT. */
  adminPort: number;
  /** After SIGTERM/SIGINT, seconds in-flight requests may take before they are cut. Decimals allowed. Env SLIPWAY_DRAIN_SECONDS. */
  drainSeconds: number;
  /** Log destination: a file path (appended), or unset for stdout. Env SLIPWAY_LOG_FILE. */
  logFile?: string;
  /** Level of access-log lines (a 500 is always error, another 5xx at least warn); `silent` turns them off. Env SLIPWAY_ACCESS_LOG_LEVEL. */
  accessLogLevel: 'info' | 'debug' | 'trace' | 'silent';
  /** Readiness fails below this much free space in the data directory (MiB). Env SLIPWAY_MIN_FREE_DISK_MB. */
  minFreeDiskMb: number;
  /** Where blob bytes live: SLIPWAY_BLOB_STORE=fs|s3 and the SLIPWAY_S3_* settings (server/blob-store-settings.ts). */
  blobStore: BlobStoreSettings;
  /**
   * Cluster mode: the metadata lives in this PostgreSQL database, shared by every node
   * (`postgres://user:password@host:port/database`, libpq URL; `?sslmode=…` and the other
   * libpq parameters the `pg` driver knows pass through). Unset = the embedded LMDB store in
   * the data directory. Env SLIPWAY_DATABASE_URL, flag --database-url.
   */
  databaseUrl?: string;
  /** Connections in this node's PostgreSQL pool (default 10). Env SLIPWAY_DATABASE_POOL. */
  databasePool: number;
  /**
   * Longest one PostgreSQL statement may run, and longest a lock query waits (seconds, decimals
   * allowed; default 5): past it the request gets 503. Env SLIPWAY_DATABASE_STATEMENT_TIMEOUT.
   */
  databaseStatementTimeoutSeconds: number;
  /**
   * Longest to wait for a PostgreSQL connection, at start and on each request that needs a new
   * one (seconds, decimals allowed; default 5). Env SLIPWAY_DATABASE_CONNECT_TIMEOUT.
   */
  databaseConnectTimeoutSeconds: number;
  /**
   * The node-local read cache of the PostgreSQL metadata store, invalidated through
   * LISTEN/NOTIFY (engine/storage/read-cache.ts, docs/deployment.md "Consistency"); off makes
   * every read a database round trip. Default on. Env SLIPWAY_DATABASE_CACHE (on/off).
   */
  databaseCache: boolean;
}

export const DEFAULT_CONFIG: Config = {
  dataDir: './data',
  host: '127.0.0.1',
  registryPort: 5000,
  apiPort: 5001,
  authPort: 5002,
  uploadPort: 5003,
  vendor: 'slipway',
  acceptVendors: ['heroku'],
  logLevel: 'info',
  uploadTtlSeconds: 24 * 3600,
  registryTokenTtlSeconds: 300,
  registryTls: true,
  uploadTls: false,
  rateLimitPool: 4500,
  rateLimitPerMinute: 75,
  gcIntervalSeconds: 3600,
  gcGraceSeconds: 3600,
  uploadMemoryMiB: 192,
  uploadSessionsPerAccount: 64,
  uploadMinRateKiB: 1,
  uploadRateWindowSeconds: 30,
  uploadReapIntervalSeconds: 600,
  nodeName: defaultNodeName(),
  listener: 'h1',
  cliLoginPollSeconds: 50,
  cliLoginsPerSource: 10,
  trustedProxies: [],
  inspectThreads: 2,
  inspectLayerMaxMiB: DEFAULT_INSPECT_LIMITS.maxInflatedBytes / (1024 * 1024),
  inspectLayerMaxEntries: DEFAULT_INSPECT_LIMITS.maxEntries,
  inspectLayerSeconds: DEFAULT_INSPECT_LIMITS.maxSeconds,
  adminHost: '127.0.0.1',
  adminPort: 5004,
  drainSeconds: 30,
  accessLogLevel: 'info',
  minFreeDiskMb: 512,
  blobStore: { kind: 'fs' },
  databasePool: 10,
  databaseStatementTimeoutSeconds: 5,
  databaseConnectTimeoutSeconds: 5,
  databaseCache: true,
};

/** The metadata database settings of `c`, or undefined for the embedded store (engine/store.ts). */
export function databaseOf(c: Config): DatabaseSettings | undefined {
  if (c.databaseUrl === undefined) return undefined;
  return {
    url: c.databaseUrl, poolSize: c.databasePool,
    statementTimeoutMs: Math.round(c.databaseStatementTimeoutSeconds * 1000),
    connectTimeoutMs: Math.round(c.databaseConnectTimeoutSeconds * 1000),
    readCache: c.databaseCache,
  };
}

/** The layer-scan limits of `c` (engine/registry/inspect-limits.ts). */
export function inspectLimitsOf(c: Config): InspectLimits {
  return { maxInflatedBytes: c.inspectLayerMaxMiB * 1024 * 1024, maxEntries: c.inspectLayerMaxEntries, maxSeconds: c.inspectLayerSeconds };
}

/**
 * Checks a PostgreSQL URL: postgres: or postgresql: scheme, a host, a database name; the
 * password never appears in the message.
 * @throws Error naming `from`.
 */
function parseDatabaseUrl(raw: string, from: string): string {
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {
    u = undefined;
  }
  const shown = u ? redactDatabaseUrl(raw) : 'the value';
  if (!u || (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:')) {
    throw new Error(`${from}: ${shown} is not a PostgreSQL URL (postgres://user:password@host:port/database)`);
  }
  if (u.hostname === '') throw new Error(`${from}: ${shown} names no host (postgres://user:password@host:port/database)`);
  if (u.pathname.replace(/^\/+/, '') === '') throw new Error(`${from}: ${shown} names no database (postgres://user:password@host:port/database)`);
  return raw;
}

const VENDOR = /^[a-z][a-z0-9.-]{0,62}$/;

/**
 * An on/off setting: on, true, 1 or off, false, 0.
 * @param from where the value came from, for the message (`environment variable X`, `flag --x`)
 * @throws Error naming `from` for anything else.
 */
export function parseSwitch(raw: string, from: string): boolean {
  if (!/^(on|off|true|false|1|0)$/.test(raw)) throw new Error(`${from}: "${raw}" must be on or off`);
  return /^(on|true|1)$/.test(raw);
}

type Source = Record<string, string | undefined>;

const ENV: Record<string, keyof Config> = {
  SLIPWAY_DATA: 'dataDir',
  SLIPWAY_HOST: 'host',
  SLIPWAY_REGISTRY_PORT: 'registryPort',
  SLIPWAY_API_PORT: 'apiPort',
  SLIPWAY_AUTH_PORT: 'authPort',
  SLIPWAY_UPLOAD_PORT: 'uploadPort',
  SLIPWAY_REGISTRY_URL: 'registryUrl',
  SLIPWAY_API_URL: 'apiUrl',
  SLIPWAY_AUTH_URL: 'authUrl',
  SLIPWAY_UPLOAD_URL: 'uploadUrl',
  SLIPWAY_VENDOR: 'vendor',
  SLIPWAY_ACCEPT_VENDORS: 'acceptVendors',
  SLIPWAY_APP_URL_TEMPLATE: 'appUrlTemplate',
  SLIPWAY_LOG_LEVEL: 'logLevel',
  SLIPWAY_UPLOAD_TTL: 'uploadTtlSeconds',
  SLIPWAY_REGISTRY_TLS: 'registryTls',
  SLIPWAY_UPLOAD_TLS: 'uploadTls',
  SLIPWAY_TLS_CERT: 'tlsCert',
  SLIPWAY_TLS_KEY: 'tlsKey',
  SLIPWAY_KEY_FILE: 'keyFile',
  SLIPWAY_SERVER_KEY: 'serverKey',
  SLIPWAY_ACCEPTED_SERVER_KEY: 'acceptedServerKey',
  SLIPWAY_ACCEPTED_KEY_FILE: 'acceptedKeyFile',
  SLIPWAY_LISTENER: 'listener',
  SLIPWAY_RATE_LIMIT_POOL: 'rateLimitPool',
  SLIPWAY_RATE_LIMIT_PER_MINUTE: 'rateLimitPerMinute',
  SLIPWAY_GC_INTERVAL: 'gcIntervalSeconds',
  SLIPWAY_GC_GRACE: 'gcGraceSeconds',
  SLIPWAY_UPLOAD_MEMORY: 'uploadMemoryMiB',
  SLIPWAY_UPLOAD_SESSIONS: 'uploadSessionsPerAccount',
  SLIPWAY_UPLOAD_MIN_RATE: 'uploadMinRateKiB',
  SLIPWAY_UPLOAD_RATE_WINDOW: 'uploadRateWindowSeconds',
  SLIPWAY_UPLOAD_REAP_INTERVAL: 'uploadReapIntervalSeconds',
  SLIPWAY_NODE_NAME: 'nodeName',
  SLIPWAY_CLI_LOGIN_POLL_WAIT: 'cliLoginPollSeconds',
  SLIPWAY_CLI_LOGINS_PER_SOURCE: 'cliLoginsPerSource',
  SLIPWAY_TRUSTED_PROXIES: 'trustedProxies',
  SLIPWAY_INSPECT_THREADS: 'inspectThreads',
  SLIPWAY_INSPECT_LAYER_MAX_MIB: 'inspectLayerMaxMiB',
  SLIPWAY_INSPECT_LAYER_MAX_ENTRIES: 'inspectLayerMaxEntries',
  SLIPWAY_INSPECT_LAYER_SECONDS: 'inspectLayerSeconds',
  SLIPWAY_ADMIN_HOST: 'adminHost',
  SLIPWAY_ADMIN_PORT: 'adminPort',
  SLIPWAY_DRAIN_SECONDS: 'drainSeconds',
  SLIPWAY_LOG_FILE: 'logFile',
  SLIPWAY_ACCESS_LOG_LEVEL: 'accessLogLevel',
  SLIPWAY_MIN_FREE_DISK_MB: 'minFreeDiskMb',
  SLIPWAY_DATABASE_URL: 'databaseUrl',
  SLIPWAY_DATABASE_POOL: 'databasePool',
  SLIPWAY_DATABASE_STATEMENT_TIMEOUT: 'databaseStatementTimeoutSeconds',
  SLIPWAY_DATABASE_CONNECT_TIMEOUT: 'databaseConnectTimeoutSeconds',
  SLIPWAY_DATABASE_CACHE: 'databaseCache',
};

/** Settings given only in the environment: key material must not show in the process list. */
const ENV_ONLY: ReadonlySet<keyof Config> = new Set(['serverKey', 'acceptedServerKey']);

/** Flag names (`--registry-port`) for each setting. */
export const FLAGS: Record<string, keyof Config> = Object.fromEntries(
  Object.values(ENV).filter((k) => !ENV_ONLY.has(k)).map((k) => [k === 'dataDir' ? 'data' : k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()), k]),
);

/**
 * Builds the config from defaults, `env` and `flags` (later wins).
 * @throws Error naming the setting and the bad value.
 */
export function loadConfig(env: Source = process.env, flags: Source = {}): Config {
  const c: Config = { ...DEFAULT_CONFIG };
  const set = (k: keyof Config, raw: string, from: string) => {
    const current = DEFAULT_CONFIG[k];
    if (k === 'gcIntervalSeconds' || k === 'gcGraceSeconds' || k === 'uploadMinRateKiB' || k === 'drainSeconds') {
      if (!/^\d+(\.\d+)?$/.test(raw)) throw new Error(`${from}: "${raw}" is not a number of seconds (0 or more)`);
      c[k] = Number(raw);
    } else if (k === 'databaseUrl') {
      c.databaseUrl = parseDatabaseUrl(raw, from);
    } else if (k === 'databasePool' && (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000)) {
      throw new Error(`${from}: "${raw}" is not a pool size (1-1000 connections)`);
    } else if (k === 'trustedProxies') {
      c.trustedProxies = parseTrustedProxies(raw, from);
    } else if (k === 'uploadRateWindowSeconds' || k === 'uploadReapIntervalSeconds' || k === 'cliLoginPollSeconds' || k === 'inspectLayerSeconds' ||
      k === 'databaseStatementTimeoutSeconds' || k === 'databaseConnectTimeoutSeconds') {
      if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) <= 0) throw new Error(`${from}: "${raw}" is not a number of seconds above 0`);
      c[k] = Number(raw);
    } else if (typeof current === 'boolean') {
      (c as unknown as Record<string, unknown>)[k] = parseSwitch(raw, from);
    } else if (typeof current === 'number') {
      const n = Number(raw);
      const isPort = k.endsWith('Port');
      if (!/^\d+$/.test(raw) || (isPort && n > 65535) || (!isPort && n < 1)) throw new Error(`${from}: "${raw}" is not a valid ${isPort ? 'port (0-65535)' : 'positive integer'}`);
      (c as unknown as Record<string, unknown>)[k] = n;
    } else if (k.endsWith('Url')) {
      let u: URL;
      try {
        u = new URL(raw);
      } catch {
        throw new Error(`${from}: "${raw}" is not a URL`);
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`${from}: "${raw}" must be an http or https URL`);
      (c as unknown as Record<string, unknown>)[k] = raw.replace(/\/+$/, '');
    } else if (k === 'logLevel') {
      if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(raw)) throw new Error(`${from}: "${raw}" is not a log level`);
      c.logLevel = raw as Config['logLevel'];
    } else if (k === 'listener') {
      if (raw !== 'h1' && raw !== 'uws') throw new Error(`${from}: "${raw}" must be h1 or uws`);
      c.listener = raw;
    } else if (k === 'acceptVendors') {
      const names = raw === 'none' ? [] : raw.split(',').map((v) => v.trim()).filter((v) => v !== '');
      const bad = names.find((v) => !VENDOR.test(v));
      if (bad !== undefined) throw new Error(`${from}: "${bad}" is not a valid vendor name (comma-separated names, or none)`);
      c.acceptVendors = names;
    } else if (k === 'appUrlTemplate') {
      let u: URL | undefined;
      try {
        u = new URL(raw.replaceAll('{app}', 'app'));
      } catch {
        u = undefined;
      }
      if (!raw.includes('{app}') || !u || (u.protocol !== 'http:' && u.protocol !== 'https:')) {
        throw new Error(`${from}: "${raw}" must be an http(s) URL template containing {app}, e.g. https://{app}.example.com/`);
      }
      c.appUrlTemplate = raw;
    } else if (k === 'accessLogLevel') {
      if (!['info', 'debug', 'trace', 'silent'].includes(raw)) throw new Error(`${from}: "${raw}" is not an access-log level (info, debug, trace, silent)`);
      c.accessLogLevel = raw as Config['accessLogLevel'];
    } else if (k === 'nodeName') {
      c.nodeName = checkNodeName(raw, from);
    } else if (k === 'vendor') {
      if (!VENDOR.test(raw)) throw new Error(`${from}: "${raw}" is not a valid vendor name`);
      c.vendor = raw;
    } else {
      (c as unknown as Record<string, unknown>)[k] = raw;
    }
  };
  for (const [name, k] of Object.entries(ENV)) {
    const v = env[name];
    if (v !== undefined && v !== '') set(k, v, `environment variable ${name}`);
  }
  for (const [flag, k] of Object.entries(FLAGS)) {
    const v = flags[flag];
    if (v !== undefined) set(k, v, `flag --${flag}`);
  }
  c.blobStore = loadBlobStoreSettings(env);
  if (c.blobStore.kind === 's3') {
    // An S3 session's part buffer comes from the upload memory budget beside the transports'
    // receive buffers (engine/blobs/s3-writer.ts): a smaller budget could never accept a byte.
    const MIB = 1024 * 1024;
    const least = Math.ceil((c.blobStore.partSizeBytes + PART_HEADROOM) / MIB);
    if (c.uploadMemoryMiB < least) throw new Error(`SLIPWAY_UPLOAD_MEMORY: ${c.uploadMemoryMiB} MiB cannot hold one S3 part (SLIPWAY_S3_PART_SIZE ${c.blobStore.partSizeBytes / MIB} MiB) beside ${PART_HEADROOM / MIB} MiB of receive buffers; set at least ${least}`);
  }
  c.dataDir = resolve(c.dataDir);
  if (c.keyFile !== undefined) c.keyFile = resolve(c.keyFile);
  if (c.acceptedKeyFile !== undefined) c.acceptedKeyFile = resolve(c.acceptedKeyFile);
  // Malformed keys are refused here, at the setting, without echoing the value.
  if (c.serverKey !== undefined) decodeServerKey(c.serverKey, 'environment variable SLIPWAY_SERVER_KEY');
  if (c.acceptedServerKey !== undefined) decodeServerKey(c.acceptedServerKey, 'environment variable SLIPWAY_ACCEPTED_SERVER_KEY');
  return c;
}
