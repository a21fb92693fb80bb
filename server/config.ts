/**
 * The typed configuration a node runs with, built from the settings of server/settings/schema.ts
 * (their defaults, then the config file, the environment and the flags: server/settings/load.ts)
 * plus the checks that span several settings. A bad value stops the start with a message naming
 * the setting (docs/architecture.md "Decisions that hold across"; docs/configuration.md). Public
 * URLs are configuration, not derived from the listen address, except that an unset URL defaults
 * to http://<host>:<bound port> (so port 0 works in tests).
 */
import { resolve } from 'node:path';
import { blobStoreFrom, type BlobStoreSettings } from './blob-store-settings.js';
import { PART_HEADROOM } from '../engine/blobs/s3-budget.js';
import type { DatabaseSettings } from '../engine/store.js';
import { defaultNodeName } from '../engine/blobs/node-name.js';
import { nameOf, readSecretFile, readSettings, type Values } from './settings/load.js';
import { BY_PATH } from './settings/schema.js';
import type { NotificationEndpoint } from '../engine/notifications/endpoints.js';
import type { InspectLimits } from '../engine/registry/inspect-limits.js';

/**
 * One node's configuration. Each field is the setting named beside it (docs/settings.md has the
 * units, defaults and meaning of each); seconds and MiB as in the setting.
 */
export interface Config {
  dataDir: string; // data (absolute)
  host: string; // host
  registryPort: number; // registry.port
  apiPort: number; // api.port
  authPort: number; // auth.port
  uploadPort: number; // upload.port
  /** Public base URLs, no trailing slash; undefined = http://<host>:<bound port>. */
  registryUrl?: string; // registry.url
  apiUrl?: string; // api.url
  authUrl?: string; // auth.url
  uploadUrl?: string; // upload.url
  vendor: string; // api.vendor
  /** Further vendor names accepted in `Accept: application/vnd.<name>+json` (server/api/accept.ts). */
  acceptVendors: string[]; // api.accept_vendors
  appUrlTemplate?: string; // api.app_url_template (server/api/web-url.ts)
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'; // log.level
  uploadTtlSeconds: number; // upload.ttl
  /** Lifetime of registry bearer tokens (seconds); not a setting. */
  registryTokenTtlSeconds: number;
  registryTls: boolean; // registry.tls (server/http/tls.ts)
  uploadTls: boolean; // upload.tls
  tlsCert?: string; // tls.cert
  tlsKey?: string; // tls.key
  /** The server key file (engine/identity/keys.ts); unset = `<data>/keys/server.key`. */
  keyFile?: string; // server_key.file
  /** The server key, base64 of 32 bytes; environment only, never logged. */
  serverKey?: string; // server_key.value
  /** A second key accepted when verifying and unsealing (docs/cluster.md "Shared secrets and rotation"). */
  acceptedServerKey?: string; // server_key.accepted_value
  acceptedKeyFile?: string; // server_key.accepted_file
  listener: 'h1' | 'uws'; // listener
  rateLimitPool: number; // rate_limit.pool
  rateLimitPerMinute: number; // rate_limit.per_minute
  gcIntervalSeconds: number; // gc.interval
  uploadMemoryMiB: number; // upload.memory
  /** Upload bodies read at full speed at once (engine/blobs/body-lanes.ts); 0 = no lanes. */
  uploadLanes: number; // upload.lanes
  uploadSessionsPerAccount: number; // upload.sessions
  uploadMinRateKiB: number; // upload.min_rate
  uploadRateWindowSeconds: number; // upload.rate_window
  uploadReapIntervalSeconds: number; // upload.reap_interval
  /** This node's name (engine/blobs/node-name.ts); distinct per node of a cluster. */
  nodeName: string; // node_name
  gcGraceSeconds: number; // gc.grace
  cliLoginPollSeconds: number; // auth.cli_login_poll_wait
  /** Browser logins of the platform CLI one source address may have waiting (docs/faults.md "CLI logins"). */
  cliLoginsPerSource: number; // auth.cli_logins_per_source
  /** Proxies whose X-Forwarded-For is believed (IP addresses or CIDR ranges); empty = the socket peer is the source. */
  trustedProxies: string[]; // trusted_proxies
  /** Worker threads for image inspection (one account uses all but one, at least 1). */
  inspectThreads: number; // inspect.threads
  inspectLayerMaxMiB: number; // inspect.layer_max_mib (docs/faults.md "Image inspection")
  inspectLayerMaxEntries: number; // inspect.layer_max_entries
  inspectLayerSeconds: number; // inspect.layer_seconds
  adminHost: string; // admin.host
  adminPort: number; // admin.port
  drainSeconds: number; // drain_seconds
  logFile?: string; // log.file
  accessLogLevel: 'info' | 'debug' | 'trace' | 'silent'; // log.access_level
  minFreeDiskMb: number; // min_free_disk_mb
  diskTimeoutSeconds: number; // disk_timeout
  /** MiB of the embedded store's pages of hot records read once after a start (engine/storage/lmdb-prewarm.ts); 0 = none. */
  prewarmMiB: number; // prewarm_mib
  /** Where blob bytes live: blob_store and the s3.* settings (server/blob-store-settings.ts). */
  blobStore: BlobStoreSettings;
  /** PostgreSQL URL (cluster mode), with the password of database.password_file filled in; unset = embedded LMDB. */
  databaseUrl?: string; // database.url
  databasePool: number; // database.pool
  databaseStatementTimeoutSeconds: number; // database.statement_timeout
  databaseConnectTimeoutSeconds: number; // database.connect_timeout
  databaseCache: boolean; // database.cache
  databaseReadStatements: number; // database.read_statements
  /** Registry notification endpoints (docs/notifications.md); header values are secrets. */
  notificationEndpoints: NotificationEndpoint[]; // notifications.endpoints
  /** Webhook destinations allowed beyond public HTTPS (engine/webhooks/destination.ts parseAllowedHosts). */
  webhookAllowedHosts: string; // webhooks.allowed_hosts
  webhookTimeoutSeconds: number; // webhooks.timeout
  webhookPollSeconds: number; // webhooks.poll_interval
  /** Whether this node runs the delivery worker. */
  webhookDeliver: boolean; // webhooks.deliver
  webhookRetryBaseSeconds: number; // webhooks.retry_base
  webhookRetryHorizonSeconds: number; // webhooks.retry_horizon
  /** How long events and finished deliveries are kept (engine/webhooks/retention.ts). */
  webhookRetentionSeconds: number; // webhooks.retention
}

/** The Config field of each setting that maps one to one (the others are combined below). */
const FIELDS: Readonly<Record<string, keyof Config>> = {
  'data': 'dataDir', 'host': 'host', 'node_name': 'nodeName', 'listener': 'listener', 'drain_seconds': 'drainSeconds',
  'min_free_disk_mb': 'minFreeDiskMb', 'disk_timeout': 'diskTimeoutSeconds', 'prewarm_mib': 'prewarmMiB', 'registry.port': 'registryPort', 'registry.url': 'registryUrl',
  'registry.tls': 'registryTls', 'upload.port': 'uploadPort', 'upload.url': 'uploadUrl', 'upload.tls': 'uploadTls',
  'upload.ttl': 'uploadTtlSeconds', 'upload.memory': 'uploadMemoryMiB', 'upload.lanes': 'uploadLanes', 'upload.sessions': 'uploadSessionsPerAccount',
  'upload.min_rate': 'uploadMinRateKiB', 'upload.rate_window': 'uploadRateWindowSeconds',
  'upload.reap_interval': 'uploadReapIntervalSeconds', 'api.port': 'apiPort', 'api.url': 'apiUrl', 'api.vendor': 'vendor',
  'api.accept_vendors': 'acceptVendors', 'api.app_url_template': 'appUrlTemplate', 'rate_limit.pool': 'rateLimitPool',
  'rate_limit.per_minute': 'rateLimitPerMinute', 'auth.port': 'authPort', 'auth.url': 'authUrl',
  'auth.cli_login_poll_wait': 'cliLoginPollSeconds', 'auth.cli_logins_per_source': 'cliLoginsPerSource',
  'trusted_proxies': 'trustedProxies', 'inspect.threads': 'inspectThreads', 'inspect.layer_max_mib': 'inspectLayerMaxMiB',
  'inspect.layer_max_entries': 'inspectLayerMaxEntries', 'inspect.layer_seconds': 'inspectLayerSeconds', 'admin.host': 'adminHost', 'admin.port': 'adminPort',
  'log.level': 'logLevel', 'log.file': 'logFile', 'log.access_level': 'accessLogLevel', 'tls.cert': 'tlsCert',
  'tls.key': 'tlsKey', 'server_key.file': 'keyFile', 'server_key.value': 'serverKey',
  'server_key.accepted_file': 'acceptedKeyFile', 'server_key.accepted_value': 'acceptedServerKey',
  'gc.interval': 'gcIntervalSeconds', 'gc.grace': 'gcGraceSeconds', 'database.url': 'databaseUrl',
  'database.pool': 'databasePool', 'database.statement_timeout': 'databaseStatementTimeoutSeconds',
  'database.connect_timeout': 'databaseConnectTimeoutSeconds', 'database.cache': 'databaseCache',
  'database.read_statements': 'databaseReadStatements',
  'notifications.endpoints': 'notificationEndpoints',
  'webhooks.allowed_hosts': 'webhookAllowedHosts', 'webhooks.timeout': 'webhookTimeoutSeconds', 'webhooks.poll_interval': 'webhookPollSeconds', 'webhooks.deliver': 'webhookDeliver',
  'webhooks.retry_base': 'webhookRetryBaseSeconds', 'webhooks.retry_horizon': 'webhookRetryHorizonSeconds',
  'webhooks.retention': 'webhookRetentionSeconds',
};

type Source = Record<string, string | undefined>;

/** Options of loadConfig. */
export interface LoadOptions {
  /**
   * Use this blob store whatever blob_store says (`slipway migrate`: the installation is read
   * from its data directory, `s3` names the target); with `fs` the s3.* settings are ignored.
   */
  blobStore?: 'fs' | 's3';
}

/**
 * Builds the config from the defaults, the config file (`--config`/SLIPWAY_CONFIG), `env` and
 * `flags` (flag names without `--`; later wins).
 * @throws ConfigError listing each bad key or value with its path or variable; Error for a
 *         combination of settings that cannot work (naming them) or an unreadable secret file.
 */
export function loadConfig(env: Source = process.env, flags: Source = {}, opts: LoadOptions = {}): Config {
  return loadSettings(env, flags, opts).config;
}

/** loadConfig, also returning the values given (with their sources) and the config file read. */
export function loadSettings(env: Source, flags: Source, opts: LoadOptions = {}): { config: Config; values: Values; file?: string } {
  const { values, file } = readSettings(env, flags);
  const c = {} as Record<string, unknown>;
  for (const [path, field] of Object.entries(FIELDS)) c[field] = values.has(path) ? values.get(path)!.value : BY_PATH.get(path)!.default;
  const config = c as unknown as Config;
  config.dataDir = resolve(config.dataDir);
  config.nodeName ??= defaultNodeName();
  config.registryTokenTtlSeconds = 300;
  config.blobStore = blobStoreFrom(values, env, opts.blobStore);
  config.databaseUrl = withPassword(values);
  if (config.blobStore.kind === 's3') {
    // An S3 session's part buffer comes from the upload memory budget beside the transports'
    // receive buffers (engine/blobs/s3-writer.ts): a smaller budget could never accept a byte.
    const MIB = 1024 * 1024;
    const least = Math.ceil((config.blobStore.partSizeBytes + PART_HEADROOM) / MIB);
    if (config.uploadMemoryMiB < least) throw new Error(`${nameOf(values, 'upload.memory')}: ${config.uploadMemoryMiB} MiB cannot hold one S3 part (${nameOf(values, 's3.part_size')}: ${config.blobStore.partSizeBytes / MIB} MiB) beside ${PART_HEADROOM / MIB} MiB of receive buffers; set at least ${least}`);
  }
  for (const [one, other] of [['server_key.value', 'server_key.file'], ['server_key.accepted_value', 'server_key.accepted_file']] as const) {
    if (values.has(one) && values.has(other)) throw new Error(`${nameOf(values, one)} and ${nameOf(values, other)} are both set; give the key one way only`);
  }
  if (values.has('tls.cert') !== values.has('tls.key')) throw new Error(`${nameOf(values, 'tls.cert')} and ${nameOf(values, 'tls.key')} must be set together`);
  return { config, values, ...(file === undefined ? {} : { file }) };
}

/**
 * The database URL with the password of database.password_file filled in.
 * @throws Error naming the settings when the file is set without a URL, the URL already holds a
 *         password, or the file cannot be read.
 */
function withPassword(values: Values): string | undefined {
  const url = values.get('database.url')?.value as string | undefined;
  if (!values.has('database.password_file')) return url;
  if (url === undefined) throw new Error(`${nameOf(values, 'database.password_file')} is set but ${nameOf(values, 'database.url')} is not`);
  const u = new URL(url);
  if (u.password !== '') throw new Error(`${nameOf(values, 'database.password_file')} is set but ${nameOf(values, 'database.url')} already holds a password`);
  u.password = readSecretFile(values, 'database.password_file');
  return u.toString();
}

/** The metadata database settings of `c`, or undefined for the embedded store (engine/store.ts). */
export function databaseOf(c: Config): DatabaseSettings | undefined {
  if (c.databaseUrl === undefined) return undefined;
  return {
    url: c.databaseUrl, poolSize: c.databasePool,
    statementTimeoutMs: Math.round(c.databaseStatementTimeoutSeconds * 1000),
    connectTimeoutMs: Math.round(c.databaseConnectTimeoutSeconds * 1000),
    readCache: c.databaseCache,
    readStatementsInFlight: c.databaseReadStatements,
  };
}

/** The layer-scan limits of `c` (engine/registry/inspect-limits.ts). */
export function inspectLimitsOf(c: Config): InspectLimits {
  return { maxInflatedBytes: c.inspectLayerMaxMiB * 1024 * 1024, maxEntries: c.inspectLayerMaxEntries, maxSeconds: c.inspectLayerSeconds };
}

