/**
 * The embedded store keeps decoded hot records between commits (engine/storage/lmdb-read-memo.ts).
 * What it keeps must never outlive a change made by another process on the same LMDB file while
 * the server runs: here the operator CLI (`slipway app create`) and a second process revoking an
 * authorization or deleting a blob's link write while the server keeps answering, and the very
 * next request over HTTP sees the change, for records kept as present and as absent; a race
 * test revokes many authorizations from another process at random moments under constant
 * request load. Also: the kept records are frozen, and a commit in the server's own process is
 * seen at once.
 */
import t, { type Test } from 'tap';
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { runCli, tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { api } from '../helpers/oauth.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage, type Target } from '../helpers/registry.js';
import { openStore } from '../../engine/store.js';
import { keyspace } from '../../engine/storage/metadata.js';
import { MAX_ENTRIES } from '../../engine/storage/lmdb-read-memo.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
const reg = server.urls.registry;

/**
 * Runs `body` (the text of an async function of the opened store and the engine's modules'
 * directory) in a separate Node process that opens the server's data directory.
 */
function inOtherProcess(body: string, arg: string): Promise<void> {
  const engine = fileURLToPath(new URL('../../engine/', import.meta.url));
  const script = `
    const { openStore } = await import(${JSON.stringify(join(engine, 'store.js'))});
    const store = await openStore(process.argv[1]);
    try { await (${body})(store, ${JSON.stringify(engine)}, process.argv[2]); } finally { await store.close(); }
  `;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', script, tmp.dir, arg], (err, _out, stderr) => err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve());
  });
}

/** HEAD of a blob in `repository` with `auth`: the status and the error code of a GET of the same. */
async function headBlob(repository: string, digest: string, auth: Record<string, string>): Promise<{ status: number; code?: string }> {
  const h = await http('HEAD', `${reg}/v2/${repository}/blobs/${digest}`, { headers: auth });
  const g = await http('GET', `${reg}/v2/${repository}/blobs/${digest}`, { headers: { ...auth, range: 'bytes=0-0' } });
  return { status: h.status, code: g.status >= 400 ? (g.json?.errors?.[0]?.code as string | undefined) : undefined };
}

t.test('an app the CLI creates while the server runs is seen at once (a kept absence is dropped)', async (t) => {
  const missing = `sha256:${'0'.repeat(64)}`;
  for (let i = 0; i < 3; i++) {
    const r = await headBlob('memoapp/web', missing, basic('_', key));
    t.equal(r.code, 'DENIED', 'no such app yet');
  }
  const cli = await runCli(['app', 'create', '--name', 'memoapp', '--owner', server.email!, '--data', tmp.dir]);
  t.equal(cli.code, 0, cli.stderr);
  const r = await headBlob('memoapp/web', missing, basic('_', key));
  t.equal(r.status, 404);
  t.equal(r.code, 'BLOB_UNKNOWN', 'the app exists now: the blob is unknown, access is not denied');
});

t.test('a revocation written by another process refuses the very next request', async (t) => {
  const a = await api(server, 'POST', '/oauth/authorizations', key, { scope: ['global'], description: 'memo' });
  t.equal(a.status, 201);
  const auth = basic('_', a.json.access_token.token as string);
  for (let i = 0; i < 3; i++) t.equal((await http('GET', `${reg}/v2/`, { headers: auth })).status, 200);
  await inOtherProcess(`async (store, engine, id) => {
    const { revokeAuthorizationByIdInTransaction } = await import(engine + 'identity/authorizations.js');
    if (!(await store.metadata.transact((tx) => revokeAuthorizationByIdInTransaction(tx, id, Date.now())))) throw new Error('not revoked');
  }`, a.json.id as string);
  t.equal((await http('GET', `${reg}/v2/`, { headers: auth })).status, 401, 'revoked');
  t.equal((await http('GET', `${reg}/v2/`, { headers: basic('_', key) })).status, 200, 'other credentials still work');
});

t.test('race: revocations by another process at random moments, under load, act on the next request', async (t) => {
  const ROUNDS = 20;
  const live = new Map<string, Record<string, string>>();
  for (let i = 0; i < ROUNDS; i++) {
    const a = await api(server, 'POST', '/oauth/authorizations', key, { scope: ['global'], description: `race ${i}` });
    t.equal(a.status, 201);
    live.set(a.json.id as string, basic('_', a.json.access_token.token as string));
  }
  // Keeps every credential's records read (and kept) while the other process revokes them.
  let loading = true;
  const load = (async () => {
    while (loading) await Promise.all([...live.values()].map((auth) => http('GET', `${reg}/v2/`, { headers: auth })));
  })();
  const engine = fileURLToPath(new URL('../../engine/', import.meta.url));
  const script = `
    const { openStore } = await import(${JSON.stringify(join(engine, 'store.js'))});
    const { revokeAuthorizationByIdInTransaction } = await import(${JSON.stringify(join(engine, 'identity/authorizations.js'))});
    const store = await openStore(process.argv[1]);
    for (const id of process.argv.slice(2)) {
      await new Promise((r) => setTimeout(r, Math.random() * 40));
      await store.metadata.transact((tx) => revokeAuthorizationByIdInTransaction(tx, id, Date.now()));
      process.stdout.write(id + '\\n');
    }
    await store.close();
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, tmp.dir, ...live.keys()], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', r));
  let refused = 0;
  for await (const id of createInterface({ input: child.stdout! })) {
    const auth = live.get(id)!;
    const status = (await http('GET', `${reg}/v2/`, { headers: auth })).status;
    if (status === 401) refused++;
    else t.fail(`authorization ${id} answered ${status} after its revocation committed`);
  }
  t.equal(await exited, 0, 'the other process revoked them all');
  loading = false;
  await load;
  t.equal(refused, ROUNDS, 'every revoked credential refused at its next request');
});

t.test('a blob link another process removes is unknown at the next HEAD', async (t) => {
  const me: Target = { registry: reg, auth: basic('_', key) };
  await createApp(server.urls.api, key, 'memolink');
  const img = await pushBuiltImage(me, 'memolink/web', 'v1', await buildImage(join(tmp.dir, `img-${randomBytes(4).toString('hex')}`), sampleSpec()));
  const layer = img.layers[0]!.digest;
  for (let i = 0; i < 3; i++) t.equal((await headBlob('memolink/web', layer, basic('_', key))).status, 200);
  await inOtherProcess(`async (store, engine, layer) => {
    const { repositoryBlobs } = await import(engine + 'registry/keyspaces.js');
    const { key } = await import(engine + 'storage/metadata.js');
    await store.metadata.transact((tx) => tx.remove(repositoryBlobs, key('memolink/web', layer)));
  }`, layer);
  const r = await headBlob('memolink/web', layer, basic('_', key));
  t.equal(r.status, 404, 'the link is gone');
  t.equal(r.code, 'BLOB_UNKNOWN');
});

/** The metadata store of a new data directory of its own, closed and removed at the end of `t`. */
async function scratchStore(t: Test) {
  const dir = tempDir();
  t.teardown(() => dir.cleanup());
  const store = await openStore(dir.dir);
  t.teardown(() => store.close());
  return store.metadata;
}

t.test('kept records are frozen and a commit in this process is seen at once', async (t) => {
  const db = await scratchStore(t);
  const apps = keyspace<{ name: string; tags: string[] }>('platform', 'apps');
  const scratch = keyspace<{ n: number }>('platform', 'memo-scratch');
  t.equal(db.getNow!(apps, 'a1'), undefined);
  await db.transact((tx) => tx.put(apps, 'a1', { name: 'one', tags: ['x'] }));
  const first = db.getNow!(apps, 'a1')!;
  t.same(first, { name: 'one', tags: ['x'] }, 'a kept absence is dropped by the commit');
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.tags), 'frozen, nested values too');
  t.throws(() => { first.tags.push('y'); }, TypeError);
  t.equal(db.getNow!(apps, 'a1'), first, 'the same record until the next commit');
  await db.transact((tx) => tx.put(scratch, 'k', { n: 1 }));
  const again = db.getNow!(apps, 'a1')!;
  t.not(again, first, 'any commit drops the kept records');
  t.same(again, first);
  await db.transact((tx) => tx.put(apps, 'a1', { name: 'two', tags: [] }));
  t.same(db.getNow!(apps, 'a1'), { name: 'two', tags: [] });
  t.notOk(Object.isFrozen(db.getNow!(scratch, 'k')), 'keyspaces not kept are read afresh');
  // Manifest records are read by key only on a content-cache miss (engine/registry/content-cache.ts
  // keeps the bytes served): kept here too they churned the memo (MEMO_KEYSPACES).
  const manifests = keyspace<{ text: string }>('registry', 'manifests');
  await db.transact((tx) => tx.put(manifests, 'sha256:m', { text: '{}' }));
  const m = db.getNow!(manifests, 'sha256:m');
  t.same(m, { text: '{}' });
  t.notOk(Object.isFrozen(m), 'manifest records are not kept');
  t.not(db.getNow!(manifests, 'sha256:m'), m, 'each read decodes afresh');
  t.same(await db.get(apps, 'a1'), { name: 'two', tags: [] }, 'get is unchanged');
});

t.test('once reads fill a keyspace\'s memo, a record is kept at its second read, not its first', async (t) => {
  const db = await scratchStore(t);
  const apps = keyspace<{ n: number }>('platform', 'apps');
  const n = MAX_ENTRIES + 2_000;
  await db.transact((tx) => { for (let i = 0; i < n; i++) tx.put(apps, `a${i}`, { n: i }); });
  // Before the memo ever filled: kept at the first read.
  const early = db.getNow!(apps, 'a0')!;
  t.ok(Object.isFrozen(early) && db.getNow!(apps, 'a0') === early, 'kept at its first read while the memo has room');
  for (let i = 1; i < n; i++) db.getNow!(apps, `a${i}`); // fills the memo past MAX_ENTRIES: it is emptied once
  // From now on a record read once is not kept; read again, it is (and stays the same object).
  let keptAtFirst = 0;
  let keptAtSecond = 0;
  for (let i = 0; i < 1_000; i++) {
    const k = `a${i}`; // read only before the memo filled: the doorkeeper has not seen it
    const first = db.getNow!(apps, k);
    const second = db.getNow!(apps, k);
    const third = db.getNow!(apps, k);
    if (first === second) keptAtFirst++;
    if (second === third && Object.isFrozen(second)) keptAtSecond++;
    t.same(first, { n: i });
  }
  t.ok(keptAtFirst < 100, `${keptAtFirst} of 1,000 records kept at their first read after the memo filled`);
  t.equal(keptAtSecond, 1_000, 'every record read twice is kept');
});
