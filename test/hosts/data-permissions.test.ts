/**
 * The data directory is readable only by the service's user: directories 0700, files 0600 (LMDB
 * environment, keys, blobs, uploads), also when an older build left it 0755/0644 (corrected at
 * start). The server key can live outside the data directory (SLIPWAY_KEY_FILE).
 */
import t from 'tap';
import { chmodSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, createApp, http } from '../helpers/http.js';
import { pushBlob, startUpload } from '../helpers/registry.js';

const mode = (p: string) => (statSync(p).mode & 0o777).toString(8);

/** Every entry under `dir` (depth-first), with its path. */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) out.push(...walk(p));
  }
  return out;
}

t.test('a fresh data directory: 0700 directories, 0600 files', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.cleanup);
  const data = join(tmp.dir, 'data');
  const server = await startInProcess({ dataDir: data });
  t.teardown(() => server.stop());
  const key = server.apiKey!;
  t.equal((await createApp(server.urls.api, key, 'perms')).status, 201);
  const me = { registry: server.urls.registry, auth: basic('_', key) };
  t.equal((await pushBlob(me, 'perms/web', randomBytes(1000))).status, 201);
  const session = await startUpload(me, 'perms/web');
  const patch = await http('PATCH', session, { headers: { ...me.auth, 'content-type': 'application/octet-stream' }, body: randomBytes(100) });
  t.equal(patch.status, 202);
  const entries = walk(data);
  for (const sub of ['lmdb/data.mdb', 'keys/server.key', 'blobs', 'uploads']) t.ok(entries.includes(join(data, sub)), `${sub} exists`);
  t.ok(entries.some((p) => p.startsWith(join(data, 'blobs', 'sha256')) && statSync(p).isFile()), 'a blob file exists');
  t.ok(entries.some((p) => p.startsWith(join(data, 'uploads')) && statSync(p).isFile()), 'an upload file exists');
  t.equal(mode(data), '700', 'data/');
  for (const p of entries) {
    t.equal(mode(p), statSync(p).isDirectory() ? '700' : '600', p.slice(data.length + 1));
  }
});

t.test('an existing 0755/0644 directory is corrected at start', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.cleanup);
  const first = await startInProcess({ dataDir: tmp.dir });
  await first.stop();
  for (const p of [tmp.dir, join(tmp.dir, 'lmdb'), join(tmp.dir, 'keys'), join(tmp.dir, 'blobs'), join(tmp.dir, 'uploads')]) if (existsSync(p)) chmodSync(p, 0o755);
  for (const p of [join(tmp.dir, 'lmdb', 'data.mdb'), join(tmp.dir, 'keys', 'server.key')]) chmodSync(p, 0o644);
  const again = await startInProcess({ dataDir: tmp.dir });
  t.teardown(() => again.stop());
  t.equal(mode(tmp.dir), '700');
  t.equal(mode(join(tmp.dir, 'lmdb')), '700');
  t.equal(mode(join(tmp.dir, 'lmdb', 'data.mdb')), '600');
  t.equal(mode(join(tmp.dir, 'keys')), '700');
  t.equal(mode(join(tmp.dir, 'keys', 'server.key')), '600');
});

t.test('SLIPWAY_KEY_FILE keeps the server key outside the data directory', async (t) => {
  const tmp = tempDir();
  const elsewhere = tempDir('slipway-key-');
  t.teardown(() => { tmp.cleanup(); elsewhere.cleanup(); });
  const keyFile = join(elsewhere.dir, 'slipway.key');
  const env = { SLIPWAY_KEY_FILE: keyFile };
  const first = await startInProcess({ dataDir: tmp.dir, env: env });
  t.equal(readFileSync(keyFile).length, 32, 'created at first start');
  t.equal(mode(keyFile), '600');
  t.notOk(existsSync(join(tmp.dir, 'keys', 'server.key')), 'no key in the data directory');
  // A registry bearer token is signed with a subkey of the server key: it outlives a restart only
  // when the same key is loaded again.
  const tok = await http('GET', `${first.urls.registry}/token?service=x`, { headers: basic('_', first.apiKey!) });
  t.equal(tok.status, 200);
  const keyBytes = readFileSync(keyFile);
  await first.stop();
  const second = await startInProcess({ dataDir: tmp.dir, env: env });
  t.teardown(() => second.stop());
  t.same(readFileSync(keyFile), keyBytes, 'the key is read, not replaced');
  t.equal((await http('GET', `${second.urls.registry}/v2/`, { headers: bearer(tok.json.token) })).status, 200, 'a token from before the restart is still valid');
  const bad = join(elsewhere.dir, 'short.key');
  writeFileSync(bad, 'too short');
  await t.rejects(startInProcess({ dataDir: tmp.dir, env: { SLIPWAY_KEY_FILE: bad } }), /must hold exactly 32 random bytes/);
});
