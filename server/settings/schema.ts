/**
 * Every setting of `slipway`, once: its config-file key, environment variable, flag, kind of
 * value, default and meaning. This table is the single source of the configuration: the loader
 * (server/settings/load.ts) reads the config file, the environment and the flags through it, and
 * `slipway --help` and docs/settings.md are generated from it (server/settings/describe.ts).
 *
 * Names: the environment variable is the setting's historical name (`SLIPWAY_REGISTRY_PORT`);
 * the flag is that name without `SLIPWAY_`, lower case, `_` → `-` (`--registry-port`); `aliases`
 * keeps flag spellings that earlier releases accepted. The config-file key is a dotted path
 * (`registry.port`) into a YAML or TOML document.
 */
import { decodeServerKey } from '../../engine/identity/keys.js';
import { isNodeName } from '../../engine/blobs/node-name.js';
import { redactDatabaseUrl } from '../../engine/store.js';
import { DEFAULT_INSPECT_LIMITS } from '../../engine/registry/inspect-limits.js';
import { parseTrustedProxies } from '../http/client-address.js';
import { notificationEndpoints } from '../notifications/endpoint-settings.js';
import { parseAllowedHosts } from '../../engine/webhooks/destination.js';
import { decimal, httpUrl, integer, Invalid, onOff, oneOf, path, port, secret, urlOf, word, wordList, type Kind } from './kinds.js';

/** Proxies whose X-Forwarded-For is believed: a comma-separated list (or a file list) of addresses and CIDR ranges; `none` = empty. */
function trustedProxies(): Kind<string[]> {
  return {
    expects: 'IP addresses or CIDR ranges, comma-separated, or none',
    placeholder: 'LIST',
    parse(v) {
      const raw = Array.isArray(v) ? v.map(String).join(',') || 'none' : typeof v === 'string' ? v : undefined;
      if (raw === undefined) throw new Invalid();
      try {
        return parseTrustedProxies(raw, 'trusted_proxies');
      } catch (e) {
        throw new Invalid((e as Error).message.replace(/^trusted_proxies: /, ''));
      }
    },
    show: (l) => (l.length === 0 ? 'none' : l.join(',')),
  };
}

/** Destinations webhooks may reach beyond public HTTPS ones: hosts, host:port pairs and CIDR ranges, comma-separated; empty = none. */
const webhookAllowedHosts: Kind<string> = {
  expects: 'host names, host:port pairs or CIDR ranges, comma-separated (or empty)',
  placeholder: 'LIST',
  parse(v) {
    const raw = Array.isArray(v) ? v.map(String).join(',') : typeof v === 'string' ? v : undefined;
    if (raw === undefined) throw new Invalid();
    try {
      parseAllowedHosts(raw);
    } catch (e) {
      throw new Invalid((e as Error).message.replace(/^SLIPWAY_WEBHOOK_ALLOWED_HOSTS: /, ''));
    }
    return raw;
  },
  show: (s) => s,
};

/** One setting. */
export interface Setting {
  /** Dotted key in the config file: `registry.port`. */
  path: string;
  /** Environment variable: `SLIPWAY_REGISTRY_PORT`. */
  env: string;
  /** Flag spellings of earlier releases, still accepted (without `--`). */
  aliases?: string[];
  /** Only from the environment: key material must not sit in a file of settings or show in the process list. */
  envOnly?: boolean;
  kind: Kind<unknown>;
  /** Typed default; undefined = unset, or computed (then `defaultText` says how). */
  default?: unknown;
  /** The default in words, when it is not a plain value. */
  defaultText?: string;
  /** One or two sentences: what it does, units, where it matters. */
  help: string;
}

/** The flag of a setting, without `--`: `SLIPWAY_REGISTRY_PORT` → `registry-port`. */
export function flagOf(s: Setting): string | undefined {
  return s.envOnly ? undefined : s.env.replace(/^SLIPWAY_/, '').toLowerCase().replace(/_/g, '-');
}

const VENDOR = /^[a-z][a-z0-9.-]{0,62}$/;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const vendor = word('a vendor name (a-z first, then a-z 0-9 . -; at most 63)', 'NAME', VENDOR);
const serverKey = secret('the base64 of exactly 32 random bytes (a key file made by `slipway key generate`, through base64 -w0)', (s) => {
  try {
    decodeServerKey(s, 'key');
  } catch (e) {
    throw new Invalid(/decodes to \d+ bytes/.exec((e as Error).message)?.[0] ?? 'is not');
  }
});

const databaseUrl: Kind<unknown> = {
  expects: 'a PostgreSQL URL postgres://user@host:port/database naming a host and a database',
  placeholder: 'URL',
  redact: redactDatabaseUrl,
  show: (v) => redactDatabaseUrl(v as string),
  parse(v) {
    if (typeof v !== 'string') throw new Invalid();
    const u = urlOf(v, ['postgres:', 'postgresql:']);
    if (u.hostname === '') throw new Invalid('it names no host');
    if (u.pathname.replace(/^\/+/, '') === '') throw new Invalid('it names no database');
    return v;
  },
};

const appUrlTemplate = word('an http(s) URL template containing {app}, e.g. https://{app}.example.com/', 'URL', /\{app\}/,
  (s) => void urlOf(s.replaceAll('{app}', 'app'), ['http:', 'https:']));

/** Every setting, in the order of `--help` and docs/settings.md. */
export const SETTINGS: readonly Setting[] = [
  // General
  { path: 'data', env: 'SLIPWAY_DATA', kind: path('DIR'), default: './data', help: 'Data directory: lmdb/, blobs/, uploads/, keys/. Node-local, never shared.' },
  { path: 'host', env: 'SLIPWAY_HOST', kind: word('an address to listen on', 'ADDR', /^[^\s]+$/), default: '127.0.0.1', help: 'Listen address of the registry, upload, API and auth hosts.' },
  { path: 'node_name', env: 'SLIPWAY_NODE_NAME', kind: word('a node name (1-63 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit, not 32 hex characters)', 'NAME', /^/, (s) => { if (!isNodeName(s)) throw new Invalid(); }), defaultText: 'the host name\'s first label', help: 'This node\'s name; upload sessions are recorded under it. Distinct per node of a cluster.' },
  { path: 'listener', env: 'SLIPWAY_LISTENER', kind: oneOf(['h1', 'uws']), default: 'h1', help: 'What serves the registry, API and auth hosts: h1, the own HTTP/1.1 listener, or uws, uWebSockets.js (faster; closes some malformed requests without a response).' },
  { path: 'drain_seconds', env: 'SLIPWAY_DRAIN_SECONDS', kind: decimal('seconds', false), default: 30, help: 'After SIGTERM/SIGINT, how long requests in flight may take before they are cut.' },
  { path: 'min_free_disk_mb', env: 'SLIPWAY_MIN_FREE_DISK_MB', kind: integer(1, undefined, 'MiB'), default: 512, help: 'Readiness (/readyz) fails below this much free space in the data directory.' },
  { path: 'disk_timeout', env: 'SLIPWAY_DISK_TIMEOUT', kind: decimal('seconds', true), default: 30, help: 'Longest wait for one write, fsync or metadata commit on the data disk; past it the request answers 503 and /readyz reports the disk stuck.' },
  { path: 'prewarm_mib', env: 'SLIPWAY_PREWARM_MIB', kind: integer(0, undefined, 'MiB'), default: 1024, help: 'After a start, how many MiB of the embedded store\'s pages holding hot records (tags, manifests, blob and token records) to read once in the background, so the first requests after a restart do not each pay for mapping them; 0 = off. Not used on PostgreSQL.' },
  // Registry host
  { path: 'registry.port', env: 'SLIPWAY_REGISTRY_PORT', kind: port(), default: 5000, help: 'Registry host port (Docker Registry HTTP API V2); 0 = any free port.' },
  { path: 'registry.url', env: 'SLIPWAY_REGISTRY_URL', kind: httpUrl(), defaultText: 'http(s)://<host>:<bound port>', help: 'Public base URL of the registry host.' },
  { path: 'registry.tls', env: 'SLIPWAY_REGISTRY_TLS', kind: onOff(), default: true, help: 'Serve the registry host over TLS (tls.cert/tls.key, else a self-signed pair in <data>/keys).' },
  // Upload host
  { path: 'upload.port', env: 'SLIPWAY_UPLOAD_PORT', kind: port(), default: 5003, help: 'Upload host port: where upload-session Locations point.' },
  { path: 'upload.url', env: 'SLIPWAY_UPLOAD_URL', kind: httpUrl(), defaultText: 'http(s)://<host>:<bound port>', help: 'Public base URL of this node\'s upload host (one per node in a cluster).' },
  { path: 'upload.tls', env: 'SLIPWAY_UPLOAD_TLS', kind: onOff(), default: false, help: 'Serve the upload host over TLS.' },
  { path: 'upload.ttl', env: 'SLIPWAY_UPLOAD_TTL', aliases: ['upload-ttl-seconds'], kind: integer(1, undefined, 'seconds'), default: 24 * 3600, help: 'Upload sessions idle this long are reaped.' },
  { path: 'upload.memory', env: 'SLIPWAY_UPLOAD_MEMORY', aliases: ['upload-memory-mi-b'], kind: integer(1, undefined, 'MiB'), default: 192, help: 'Most upload buffer memory, all sessions together; past it bodies wait and new appends get 503.' },
  { path: 'upload.lanes', env: 'SLIPWAY_UPLOAD_LANES', kind: integer(0, 1024, 'bodies'), default: 4, help: 'Upload bodies read at full speed at once; more wait their turn, at most 0.5 s each; 0 = all at once.' },
  { path: 'upload.sessions', env: 'SLIPWAY_UPLOAD_SESSIONS', aliases: ['upload-sessions-per-account'], kind: integer(1), default: 64, help: 'Open upload sessions one account may have at once.' },
  { path: 'upload.min_rate', env: 'SLIPWAY_UPLOAD_MIN_RATE', aliases: ['upload-min-rate-ki-b'], kind: decimal('KiB/s', false), default: 1, help: 'Minimum receive rate of an upload body; 0 = no minimum.' },
  { path: 'upload.rate_window', env: 'SLIPWAY_UPLOAD_RATE_WINDOW', aliases: ['upload-rate-window-seconds'], kind: decimal('seconds', true), default: 30, help: 'Window over which upload.min_rate is measured.' },
  { path: 'upload.reap_interval', env: 'SLIPWAY_UPLOAD_REAP_INTERVAL', aliases: ['upload-reap-interval-seconds'], kind: decimal('seconds', true), default: 600, help: 'Seconds between runs of the upload reaper.' },
  // Platform API
  { path: 'api.port', env: 'SLIPWAY_API_PORT', kind: port(), default: 5001, help: 'Platform API port.' },
  { path: 'api.url', env: 'SLIPWAY_API_URL', kind: httpUrl(), defaultText: 'http://<host>:<bound port>', help: 'Public base URL of the Platform API.' },
  { path: 'api.vendor', env: 'SLIPWAY_VENDOR', kind: vendor, default: 'slipway', help: 'Vendor part of the API media type application/vnd.<vendor>+json.' },
  { path: 'api.accept_vendors', env: 'SLIPWAY_ACCEPT_VENDORS', kind: wordList('vendor names, comma-separated (a file list also works), or none', VENDOR), default: ['heroku'], help: 'Further vendor names accepted in Accept as the same API; none = only api.vendor.' },
  { path: 'api.app_url_template', env: 'SLIPWAY_APP_URL_TEMPLATE', kind: appUrlTemplate, defaultText: 'derived from the API URL', help: 'An app\'s web_url: {app} is replaced by the app name.' },
  { path: 'rate_limit.pool', env: 'SLIPWAY_RATE_LIMIT_POOL', kind: integer(1, undefined, 'requests'), default: 4500, help: 'Per-account API rate-limit pool (platform convention: 4500). Same on every node.' },
  { path: 'rate_limit.per_minute', env: 'SLIPWAY_RATE_LIMIT_PER_MINUTE', kind: integer(1, undefined, 'requests'), default: 75, help: 'Refill of the rate-limit pool per minute (platform convention: 75). Same on every node.' },
  // OAuth host
  { path: 'auth.port', env: 'SLIPWAY_AUTH_PORT', kind: port(), default: 5002, help: 'OAuth web-flow host port.' },
  { path: 'auth.url', env: 'SLIPWAY_AUTH_URL', kind: httpUrl(), defaultText: 'http://<host>:<bound port>', help: 'Public base URL of the OAuth host.' },
  { path: 'auth.cli_login_poll_wait', env: 'SLIPWAY_CLI_LOGIN_POLL_WAIT', aliases: ['cli-login-poll-seconds'], kind: decimal('seconds', true), default: 50, help: 'Longest one poll of a CLI browser login is held open (below the CLI\'s 60 s request timeout).' },
  { path: 'auth.cli_logins_per_source', env: 'SLIPWAY_CLI_LOGINS_PER_SOURCE', kind: integer(1, 1000), default: 10, help: 'Browser logins of the platform CLI one source address may have waiting at once; more get 429 (docs/faults.md "CLI logins").' },
  { path: 'trusted_proxies', env: 'SLIPWAY_TRUSTED_PROXIES', kind: trustedProxies(), default: [], help: 'Load balancers whose X-Forwarded-For is believed: IP addresses or CIDR ranges; none = the socket peer is the source of every request.' },
  { path: 'inspect.threads', env: 'SLIPWAY_INSPECT_THREADS', kind: integer(1, 64), default: 2, help: 'Worker threads for image inspection at manifest PUT; one account uses all but one (at least 1).' },
  { path: 'inspect.layer_max_mib', env: 'SLIPWAY_INSPECT_LAYER_MAX_MIB', kind: integer(1, undefined, 'MiB'), default: DEFAULT_INSPECT_LIMITS.maxInflatedBytes / (1024 * 1024), help: 'Most bytes one layer\'s scan inflates; past it the layer is accepted but not fully inspected (docs/faults.md "Image inspection").' },
  { path: 'inspect.layer_max_entries', env: 'SLIPWAY_INSPECT_LAYER_MAX_ENTRIES', kind: integer(1), default: DEFAULT_INSPECT_LIMITS.maxEntries, help: 'Most tar entries one layer\'s scan reads.' },
  { path: 'inspect.layer_seconds', env: 'SLIPWAY_INSPECT_LAYER_SECONDS', kind: decimal('seconds', true), default: DEFAULT_INSPECT_LIMITS.maxSeconds, help: 'Longest one layer\'s scan runs.' },
  // Admin listener
  { path: 'admin.host', env: 'SLIPWAY_ADMIN_HOST', kind: word('an address to listen on', 'ADDR', /^[^\s]+$/), default: '127.0.0.1', help: 'Admin listener address (metrics, /healthz, /readyz); keep it off public networks.' },
  { path: 'admin.port', env: 'SLIPWAY_ADMIN_PORT', kind: port(), default: 5004, help: 'Admin listener port.' },
  // Logging
  { path: 'log.level', env: 'SLIPWAY_LOG_LEVEL', kind: oneOf(LOG_LEVELS), default: 'info', help: 'Level of log lines written.' },
  { path: 'log.file', env: 'SLIPWAY_LOG_FILE', kind: path(), defaultText: 'stdout', help: 'Log destination: a file (appended).' },
  { path: 'log.access_level', env: 'SLIPWAY_ACCESS_LOG_LEVEL', kind: oneOf(['info', 'debug', 'trace', 'silent']), default: 'info', help: 'Level of access-log lines (a 500 is always error, another 5xx at least warn); silent turns them off.' },
  // TLS
  { path: 'tls.cert', env: 'SLIPWAY_TLS_CERT', kind: path(), defaultText: 'a self-signed pair in <data>/keys', help: 'PEM certificate file (with tls.key).' },
  { path: 'tls.key', env: 'SLIPWAY_TLS_KEY', kind: path(), defaultText: 'a self-signed pair in <data>/keys', help: 'PEM private key file (with tls.cert).' },
  // Server key
  { path: 'server_key.file', env: 'SLIPWAY_KEY_FILE', kind: path(), defaultText: '<data>/keys/server.key', help: 'File of the 32-byte server key (signs tokens and upload capabilities, seals second factors); created 0600 when absent. The same key on every node of a cluster.' },
  { path: 'server_key.value', env: 'SLIPWAY_SERVER_KEY', envOnly: true, kind: serverKey, help: 'The server key itself, base64; wins over the file (setting both is an error). Environment only.' },
  { path: 'server_key.accepted_file', env: 'SLIPWAY_ACCEPTED_KEY_FILE', kind: path(), help: 'File of a second key accepted when verifying and unsealing, never used to sign (key rotation); never created.' },
  { path: 'server_key.accepted_value', env: 'SLIPWAY_ACCEPTED_SERVER_KEY', envOnly: true, kind: serverKey, help: 'That second key, base64. Environment only.' },
  // Registry notifications
  { path: 'notifications.endpoints', env: 'SLIPWAY_NOTIFICATIONS_ENDPOINTS', kind: notificationEndpoints(), default: [], help: 'Endpoints that receive registry notifications in distribution\'s format (manifest push, pull, delete; blob mount), written as distribution\'s notifications.endpoints; header values are secrets, never shown (docs/notifications.md).' },
  // Garbage collection
  { path: 'gc.interval', env: 'SLIPWAY_GC_INTERVAL', aliases: ['gc-interval-seconds'], kind: decimal('seconds', false), default: 3600, help: 'Seconds between online GC runs (image retention, then unreferenced blobs); 0 = no schedule.' },
  { path: 'gc.grace', env: 'SLIPWAY_GC_GRACE', aliases: ['gc-grace-seconds'], kind: decimal('seconds', false), default: 3600, help: 'How long an unreferenced blob is kept after its commit or last HEAD/GET/mount.' },
  // Webhooks (docs/webhooks.md)
  { path: 'webhooks.allowed_hosts', env: 'SLIPWAY_WEBHOOK_ALLOWED_HOSTS', kind: webhookAllowedHosts, default: '', help: 'Webhook destinations allowed beyond public HTTPS URLs, over http or https, loopback and private addresses included: host names, host:port pairs and CIDR ranges, comma-separated.' },
  { path: 'webhooks.timeout', env: 'SLIPWAY_WEBHOOK_TIMEOUT', kind: decimal('seconds', true), default: 10, help: 'Longest one delivery attempt runs (connect, TLS, answer); a node\'s deliveries pass to another node at most this + 5 s + webhooks.poll_interval + 1 s after its death.' },
  { path: 'webhooks.deliver', env: 'SLIPWAY_WEBHOOK_DELIVER', kind: onOff(), default: true, help: 'Run the delivery worker on this node (fan-out and attempts of app webhooks and registry notifications); off: the events this node records are delivered by nodes where it is on.' },
  { path: 'webhooks.poll_interval', env: 'SLIPWAY_WEBHOOK_POLL_INTERVAL', kind: decimal('seconds', true), default: 0.5, help: 'Pause of the delivery worker between passes when idle (events recorded on this node wake it at once).' },
  { path: 'webhooks.retry_base', env: 'SLIPWAY_WEBHOOK_RETRY_BASE', kind: decimal('seconds', true), default: 30, help: 'Delay before the second attempt of a sync delivery; each later delay doubles, up to one hour.' },
  { path: 'webhooks.retention', env: 'SLIPWAY_WEBHOOK_RETENTION', kind: decimal('seconds', true), default: 604800, help: 'How long events and their deliveries stay in the delivery log after the event; older ones are pruned once every delivery of the event has ended.' },
  { path: 'webhooks.retry_horizon', env: 'SLIPWAY_WEBHOOK_RETRY_HORIZON', kind: decimal('seconds', true), default: 86400, help: 'No attempt of a sync delivery starts later than this after the event: the delivery is failed then.' },
  // Metadata database
  { path: 'database.url', env: 'SLIPWAY_DATABASE_URL', kind: databaseUrl, defaultText: 'unset: the embedded LMDB store', help: 'Cluster mode: the PostgreSQL database shared by every node (libpq URL; ?sslmode=… passes through). A password in it is never shown; in a config file give it with database.password_file instead.' },
  { path: 'database.password_file', env: 'SLIPWAY_DATABASE_PASSWORD_FILE', kind: path(), help: 'File holding the database password (one line), for a database.url without one.' },
  { path: 'database.pool', env: 'SLIPWAY_DATABASE_POOL', kind: integer(1, 1000, 'connections'), default: 10, help: 'Connections in this node\'s PostgreSQL pool.' },
  { path: 'database.statement_timeout', env: 'SLIPWAY_DATABASE_STATEMENT_TIMEOUT', aliases: ['database-statement-timeout-seconds'], kind: decimal('seconds', true), default: 5, help: 'Longest one statement runs, and a lock query waits; past it the request gets 503.' },
  { path: 'database.connect_timeout', env: 'SLIPWAY_DATABASE_CONNECT_TIMEOUT', aliases: ['database-connect-timeout-seconds'], kind: decimal('seconds', true), default: 5, help: 'Longest wait for a PostgreSQL connection.' },
  { path: 'database.read_statements', env: 'SLIPWAY_DATABASE_READ_STATEMENTS', kind: integer(1, 1000, 'statements'), default: 1, help: 'Statements this node runs at once for each kind of read the read cache missed; reads that arrive while that many are on their way share the next statement.' },
  { path: 'database.cache', env: 'SLIPWAY_DATABASE_CACHE', kind: onOff(), default: true, help: 'The node-local read cache of the PostgreSQL store, invalidated through LISTEN/NOTIFY.' },
  // Blob store
  { path: 'blob_store', env: 'SLIPWAY_BLOB_STORE', kind: oneOf(['fs', 's3']), default: 'fs', help: 'Where blob bytes live: fs (the data directory) or s3 (the s3.* settings).' },
  { path: 's3.endpoint', env: 'SLIPWAY_S3_ENDPOINT', kind: httpUrl(), defaultText: 'AWS S3 for the region', help: 'Endpoint URL of the S3-compatible store (Ceph RGW, MinIO).' },
  { path: 's3.region', env: 'SLIPWAY_S3_REGION', kind: word('a region name (a-z 0-9 -, at most 32)', 'NAME', /^[a-z0-9-]{1,32}$/), defaultText: 'AWS_REGION, else us-east-1', help: 'Region.' },
  { path: 's3.bucket', env: 'SLIPWAY_S3_BUCKET', kind: word('a bucket name (3-63 lower-case letters, digits, dots, hyphens)', 'NAME', /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/), defaultText: 'required with blob_store s3', help: 'Bucket; must exist (slipway s3 create-bucket makes it).' },
  { path: 's3.prefix', env: 'SLIPWAY_S3_PREFIX', kind: word('empty or a relative key prefix ending in / (at most 200 characters)', 'PREFIX', /^(|[^/\\\x00-\x1f][^\\\x00-\x1f]{0,198}\/)$/), default: '', help: 'Key prefix of every object; one prefix for the whole cluster.' },
  { path: 's3.path_style', env: 'SLIPWAY_S3_PATH_STYLE', kind: onOff(), defaultText: 'on with an endpoint, off for AWS', help: 'Path-style addressing.' },
  { path: 's3.part_size', env: 'SLIPWAY_S3_PART_SIZE', kind: integer(5, 5120, 'MiB'), default: 8, help: 'Bytes per multipart part.' },
  { path: 's3.upload_concurrency', env: 'SLIPWAY_S3_UPLOAD_CONCURRENCY', kind: integer(1, 64, 'parts'), default: 4, help: 'Parts in flight per upload session.' },
  { path: 's3.put_limit', env: 'SLIPWAY_S3_PUT_LIMIT', kind: integer(5, 5120, 'MiB, at least s3.part_size'), defaultText: 's3.part_size × s3.upload_concurrency', help: 'Largest session sent as one PutObject instead of a multipart upload.' },
  { path: 's3.redirect', env: 'SLIPWAY_S3_REDIRECT', kind: onOff(), default: false, help: 'Answer blob GETs with a 307 to a presigned URL.' },
  { path: 's3.redirect_expiry', env: 'SLIPWAY_S3_REDIRECT_EXPIRY', kind: integer(1, 604800, 'seconds'), default: 300, help: 'Lifetime of a presigned URL.' },
  { path: 's3.timeout', env: 'SLIPWAY_S3_TIMEOUT', kind: integer(1, 600, 'seconds'), default: 10, help: 'Longest wait for one request to the store before it counts as unreachable.' },
  { path: 's3.access_key_id', env: 'SLIPWAY_S3_ACCESS_KEY_ID', kind: word('an access key id', 'ID', /^[\x21-\x7e]{1,128}$/), defaultText: 'the AWS SDK\'s chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, roles)', help: 'Access key id (with s3.secret_access_key_file).' },
  { path: 's3.secret_access_key_file', env: 'SLIPWAY_S3_SECRET_ACCESS_KEY_FILE', kind: path(), defaultText: 'the AWS SDK\'s chain', help: 'File holding the secret access key (one line), with s3.access_key_id.' },
];

/** The setting at a config-file path, by path. */
export const BY_PATH: ReadonlyMap<string, Setting> = new Map(SETTINGS.map((s) => [s.path, s]));
