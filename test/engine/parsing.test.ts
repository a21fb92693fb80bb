/** Unit tests of the pure parsers: names, references, digests, manifests, Range, config, TOTP. */
import t from 'tap';
import { parseRepositoryName, parseReference } from '../../engine/registry/names.js';
import { parseDigest, digestOf } from '../../engine/digest.js';
import { parseManifest } from '../../engine/registry/manifest-parse.js';
import { parseRange } from '../../server/registry/blobs.js';
import { databaseOf, loadConfig } from '../../server/config.js';
import { defaultNodeName, isNodeName } from '../../engine/blobs/node-name.js';
import { totpCode, verifyTotp } from '../../engine/identity/totp.js';
import { checkPlatform } from '../../engine/registry/image-info.js';

const codeOf = (fn: () => unknown) => { try { fn(); return 'ok'; } catch (e) { return (e as { code?: string }).code ?? (e as Error).message; } };

t.test('repository names are <app>/<process-type>', async (t) => {
  t.same(parseRepositoryName('myapp/web'), { name: 'myapp/web', app: 'myapp', processType: 'web' });
  for (const bad of ['myapp', 'myapp/web/x', 'MyApp/web', 'a/web', 'my_app/web', '-app/web', 'myapp/', '/web', 'myapp/We', 'x'.repeat(300)]) {
    t.equal(codeOf(() => parseRepositoryName(bad)), 'NAME_INVALID', bad.slice(0, 20));
  }
  t.equal(codeOf(() => parseRepositoryName('my-app/release')), 'ok');
  t.equal(parseRepositoryName('myapp/web'), parseRepositoryName('myapp/web'), 'a valid name is parsed once and kept');
  t.ok(Object.isFrozen(parseRepositoryName('myapp/web')), 'the kept result cannot be changed by a caller');
  for (let i = 0; i < 2; i++) t.equal(codeOf(() => parseRepositoryName('MyApp/web')), 'NAME_INVALID', 'an invalid name is refused every time');
});

t.test('references and digests', async (t) => {
  t.same(parseReference('latest'), { tag: 'latest' });
  t.same(parseReference('v1.2_3-x'), { tag: 'v1.2_3-x' });
  const d = digestOf(Buffer.from('x'));
  t.same(parseReference(d), { digest: d });
  t.equal(codeOf(() => parseReference('sha256:abc')), 'DIGEST_INVALID');
  t.equal(codeOf(() => parseReference('.bad')), 'MANIFEST_INVALID');
  t.equal(codeOf(() => parseDigest('sha512:' + 'a'.repeat(128))), 'DIGEST_INVALID');
  t.equal(codeOf(() => parseDigest('sha256:' + 'A'.repeat(64))), 'DIGEST_INVALID', 'uppercase hex is not canonical');
  t.equal(d, 'sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881');
});

t.test('manifest parsing', async (t) => {
  const cfg = { mediaType: 'application/vnd.docker.container.image.v1+json', size: 2, digest: digestOf(Buffer.from('{}')) };
  const layer = { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: 1, digest: digestOf(Buffer.from('a')) };
  const ok = { schemaVersion: 2, mediaType: 'application/vnd.docker.distribution.manifest.v2+json', config: cfg, layers: [layer, layer] };
  const parsed = parseManifest(Buffer.from(JSON.stringify(ok)), 'application/vnd.docker.distribution.manifest.v2+json');
  t.equal(parsed.blobs.length, 2, 'repeated layer counted once');
  t.equal(codeOf(() => parseManifest(Buffer.from(JSON.stringify(ok)), 'application/json')), 'ok', 'generic content type accepted');
  t.equal(codeOf(() => parseManifest(Buffer.from(JSON.stringify(ok)), 'application/vnd.oci.image.manifest.v1+json')), 'MANIFEST_INVALID');
  t.equal(codeOf(() => parseManifest(Buffer.from(JSON.stringify({ ...ok, schemaVersion: 1 })), '')), 'MANIFEST_INVALID');
  t.equal(codeOf(() => parseManifest(Buffer.from(JSON.stringify({ ...ok, mediaType: undefined })), '')), 'MANIFEST_INVALID');
  t.equal(codeOf(() => parseManifest(Buffer.from(JSON.stringify({ ...ok, config: { ...cfg, size: -1 } })), '')), 'MANIFEST_INVALID');
  t.equal(codeOf(() => parseManifest(Buffer.from(JSON.stringify({ ...ok, layers: [{ ...layer, mediaType: 'application/vnd.oci.image.layer.v1.tar+zstd' }] })), '')), 'MANIFEST_INVALID');
  t.equal(codeOf(() => parseManifest(Buffer.from('[1]'), '')), 'MANIFEST_INVALID');
});

t.test('platform check', async (t) => {
  const base = { architecture: 'amd64', os: 'linux', entrypoint: null, cmd: null, workingDir: '', env: [], user: '', ignoredInstructions: [] };
  t.equal(codeOf(() => checkPlatform(base)), 'ok');
  t.equal(codeOf(() => checkPlatform({ ...base, architecture: 'x86_64' })), 'ok');
  t.equal(codeOf(() => checkPlatform({ ...base, architecture: 'arm64' })), 'UNSUPPORTED_ARCHITECTURE');
  t.equal(codeOf(() => checkPlatform({ ...base, os: 'windows' })), 'UNSUPPORTED_ARCHITECTURE');
});

t.test('byte ranges', async (t) => {
  t.equal(parseRange('', 10), undefined);
  t.same(parseRange('bytes=0-0', 10), { start: 0, length: 1 });
  t.same(parseRange('bytes=5-', 10), { start: 5, length: 5 });
  t.same(parseRange('bytes=8-100', 10), { start: 8, length: 2 }, 'end clamped');
  t.same(parseRange('bytes=-3', 10), { start: 7, length: 3 });
  t.same(parseRange('bytes=-30', 10), { start: 0, length: 10 });
  for (const bad of ['bytes=10-', 'bytes=3-2', 'bytes=0-1,3-4', 'bytes=-', 'chars=1-2']) t.equal(codeOf(() => parseRange(bad, 10)), 'RANGE_NOT_SATISFIABLE', bad);
});

t.test('configuration names the bad setting', async (t) => {
  const c = loadConfig({ SLIPWAY_REGISTRY_PORT: '0', SLIPWAY_REGISTRY_TLS: 'off' }, { 'api-port': '6001' });
  t.equal(c.registryPort, 0);
  t.equal(c.apiPort, 6001);
  t.equal(c.registryTls, false);
  t.throws(() => loadConfig({ SLIPWAY_API_PORT: '70000' }), /^environment variable SLIPWAY_API_PORT: expected an integer 0-65535, got "70000"$/);
  t.throws(() => loadConfig({}, { 'registry-url': 'ftp://x' }), /^flag --registry-url: expected an http or https URL, got "ftp:\/\/x"$/);
  t.throws(() => loadConfig({ SLIPWAY_LOG_LEVEL: 'loud' }), /SLIPWAY_LOG_LEVEL/);
  t.throws(() => loadConfig({ SLIPWAY_UPLOAD_TLS: 'maybe' }), /SLIPWAY_UPLOAD_TLS: expected on or off, got "maybe"/);
  t.equal(loadConfig({ SLIPWAY_API_URL: 'https://api.example.com/' }).apiUrl, 'https://api.example.com', 'trailing slash dropped');
  const ops = loadConfig({ SLIPWAY_DRAIN_SECONDS: '2.5', SLIPWAY_ADMIN_PORT: '0', SLIPWAY_ACCESS_LOG_LEVEL: 'silent', SLIPWAY_MIN_FREE_DISK_MB: '64' });
  t.same([ops.drainSeconds, ops.adminPort, ops.adminHost, ops.accessLogLevel, ops.minFreeDiskMb], [2.5, 0, '127.0.0.1', 'silent', 64]);
  t.equal(loadConfig({}).adminPort, 5004, 'admin listener default port');
  t.throws(() => loadConfig({ SLIPWAY_DRAIN_SECONDS: '-1' }), /SLIPWAY_DRAIN_SECONDS: expected a number of seconds, 0 or more \(decimals allowed\), got "-1"/);
  t.throws(() => loadConfig({ SLIPWAY_ACCESS_LOG_LEVEL: 'warn' }), /SLIPWAY_ACCESS_LOG_LEVEL: expected one of info, debug, trace, silent, got "warn"/);
});

t.test('cluster database settings: defaults, database settings, refusals that never show the password', async (t) => {
  const embedded = loadConfig({});
  t.equal(embedded.databaseUrl, undefined, 'no setting: the embedded store');
  t.equal(databaseOf(embedded), undefined);
  const c = loadConfig({ SLIPWAY_DATABASE_URL: 'postgres://slip:pw@db.internal:5433/slipway?sslmode=require', SLIPWAY_DATABASE_POOL: '25', SLIPWAY_DATABASE_STATEMENT_TIMEOUT: '2.5' });
  t.same(databaseOf(c), { url: 'postgres://slip:pw@db.internal:5433/slipway?sslmode=require', poolSize: 25, statementTimeoutMs: 2500, connectTimeoutMs: 5000, readCache: true, readStatementsInFlight: 1 });
  t.equal(databaseOf(loadConfig({ SLIPWAY_DATABASE_URL: 'postgres://h/db', SLIPWAY_DATABASE_READ_STATEMENTS: '4' }))!.readStatementsInFlight, 4, 'SLIPWAY_DATABASE_READ_STATEMENTS=4');
  t.throws(() => loadConfig({ SLIPWAY_DATABASE_URL: 'postgres://h/db', SLIPWAY_DATABASE_READ_STATEMENTS: '0' }), /SLIPWAY_DATABASE_READ_STATEMENTS/, 'SLIPWAY_DATABASE_READ_STATEMENTS=0 refused, naming the setting');
  t.equal(databaseOf(loadConfig({ SLIPWAY_DATABASE_URL: 'postgres://h/db', SLIPWAY_DATABASE_CACHE: 'off' }))!.readCache, false, 'SLIPWAY_DATABASE_CACHE=off');
  t.throws(() => loadConfig({ SLIPWAY_DATABASE_CACHE: 'maybe' }), /SLIPWAY_DATABASE_CACHE/);
  t.equal(loadConfig({}, { 'database-url': 'postgresql://h/db' }).databaseUrl, 'postgresql://h/db', 'the flag, and the postgresql: scheme');
  for (const [url, why] of [['http://u:pw@h/db', /expected a PostgreSQL URL/], ['postgres:///db', /names no host/], ['postgres://u:pw@h', /names no database/]] as const) {
    const err = t.throws(() => loadConfig({ SLIPWAY_DATABASE_URL: url })) as Error;
    t.match(err.message, /^environment variable SLIPWAY_DATABASE_URL: /, `${url}: names the setting`);
    t.match(err.message, why, `${url}: says what is wrong`);
    t.notMatch(err.message, /pw/, `${url}: not the password`);
  }
  t.throws(() => loadConfig({ SLIPWAY_DATABASE_POOL: '0' }), /SLIPWAY_DATABASE_POOL: expected an integer 1-1000 \(connections\), got "0"/);
  t.throws(() => loadConfig({ SLIPWAY_DATABASE_POOL: '5000' }), /expected an integer 1-1000/);
  t.throws(() => loadConfig({ SLIPWAY_DATABASE_CONNECT_TIMEOUT: '0' }), /SLIPWAY_DATABASE_CONNECT_TIMEOUT: expected a number of seconds above 0 \(decimals allowed\), got "0"/);
});

t.test('TOTP (RFC 6238 test vector, SHA-1)', async (t) => {
  // RFC 6238 Appendix B: secret "12345678901234567890" (base32 GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ), T=59 s → 94287082 (8 digits) → 287082.
  const secret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
  t.equal(totpCode(secret, 59_000), '287082');
  t.equal(totpCode(secret, 1111111109_000), '081804');
  t.ok(verifyTotp(secret, '287082', 59_000 + 30_000) !== null, 'one step of drift allowed');
  t.equal(verifyTotp(secret, '287082', 59_000 + 90_000), null);
  t.equal(verifyTotp(secret, 'abcdef', 59_000), null);
});

t.test('node names (SLIPWAY_NODE_NAME): validated, defaulting to the host name', async (t) => {
  t.equal(loadConfig({ SLIPWAY_NODE_NAME: 'node-a' }).nodeName, 'node-a');
  t.equal(loadConfig({}, { 'node-name': 'eu.1_b' }).nodeName, 'eu.1_b', 'as a flag too');
  t.ok(isNodeName(loadConfig({}).nodeName), 'the default is a valid node name');
  for (const bad of ['', '-a', 'a/b', 'a~b', 'a b', 'x'.repeat(64), 'é', '0123456789abcdef0123456789abcdef']) {
    if (bad === '') continue; // an empty variable is unset
    t.throws(() => loadConfig({ SLIPWAY_NODE_NAME: bad }), /SLIPWAY_NODE_NAME: expected a node name \(1-63 characters.*\), got ".*"/, JSON.stringify(bad));
  }
  t.equal(defaultNodeName('Build-Host.example.com'), 'Build-Host', 'first label of the host name');
  t.equal(defaultNodeName('host name!'), 'host-name-', 'other characters become -');
  t.equal(defaultNodeName('...'), 'node', 'nothing usable: node');
  t.equal(defaultNodeName('0123456789abcdef0123456789abcdef'), 'node', 'not shaped like a session id');
});
