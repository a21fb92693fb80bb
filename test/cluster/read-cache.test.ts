/**
 * The node-local read cache of the PostgreSQL metadata store (engine/storage/read-cache.ts,
 * engine/storage/postgres-invalidation.ts) across two nodes on one real PostgreSQL, through the
 * HTTP interface: what B has cached is invalidated by A's writes before A's client has its
 * answer — a revoked token is refused by B at the very next request, a re-pointed tag serves the
 * new manifest, a deleted manifest is gone, a team's third-party switch applies at once; a race
 * of B's reads against A's writes never shows a tag older than the last write acknowledged
 * before the read started (also for a multi-key `getMany`); and with B's listening session killed, B bypasses its cache (still
 * answering correctly) until it has listened again.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startInProcess, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { tempDir } from '../helpers/server.js';
import { basic, createApp, http } from '../helpers/http.js';
import { api, registerClient } from '../helpers/oauth.js';
import { pushBlob, putManifest, type Target } from '../helpers/registry.js';
import { memImage, type MemImage } from '../helpers/cluster.js';
import { createAuthorizationInTransaction } from '../../engine/identity/authorizations.js';
import type { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { storedKeyspace } from '../../engine/storage/metadata.js';

const skip = postgresSkip();
const MANIFEST_V2 = 'application/vnd.docker.distribution.manifest.v2+json';

/** The invalidation listener of a node's PostgreSQL store. */
const listener = (n: InProcessSlipway) => (n.server.store.metadata as PostgresMetadataStore).invalidation;

t.test('read cache across two nodes', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const a = await startInProcess({ dataDir: shared.dir, databaseUrl: db.connectionString });
  const b = await startInProcess({ dataDir: shared.dir, databaseUrl: db.connectionString });
  t.teardown(async () => { await a.stop(); await b.stop(); });
  const operatorKey = (a.apiKey ?? b.apiKey)!;
  await waitFor('both listeners confirmed', () => listener(a).usable && listener(b).usable);
  t.equal((await createApp(a.api, operatorKey, 'cache-app')).status, 201);
  const onA: Target = { registry: a.urls.registry, auth: basic('_', operatorKey) };
  const layer = randomBytes(512);
  t.equal((await pushBlob(onA, 'cache-app/web', layer)).status, 201);
  /** A fresh image (a config of its own, the shared layer). */
  const freshImage = () => memImage(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: [`N=${randomBytes(8).toString('hex')}`] }, rootfs: { type: 'layers', diff_ids: [] } })), [layer]);
  /** A fresh image pushed through A under `tag`. */
  const pushNew = async (tag: string): Promise<MemImage> => {
    const img = freshImage();
    const c = await pushBlob(onA, 'cache-app/web', img.blobs[0]!);
    if (c.status !== 201) throw new Error(`config push ${c.status}`);
    const m = await putManifest(onA, 'cache-app/web', tag, img.manifest);
    if (m.status !== 201) throw new Error(`manifest PUT ${m.status} ${m.text}`);
    return img;
  };
  const getOnB = (ref: string) => http('GET', `${b.urls.registry}/v2/cache-app/web/manifests/${ref}`, { headers: { ...basic('_', operatorKey), accept: MANIFEST_V2 } });

  t.test('a revocation on A is refused by B at the very next request, round after round', async (t) => {
    const hits = listener(b).cache.stats.hits;
    for (let round = 0; round < 20; round++) {
      const created = await api(a, 'POST', '/oauth/authorizations', operatorKey, { description: `round ${round}` });
      const token = created.json.access_token.token as string;
      for (let i = 0; i < 3; i++) t.equal((await api(b, 'GET', '/account', token)).status, 200, `round ${round}: B accepts (cache warm)`);
      t.not((await http('GET', `${b.urls.registry}/v2/cache-app/web/tags/list`, { headers: basic('_', token) })).status, 401);
      t.equal((await api(a, 'DELETE', `/oauth/authorizations/${created.json.id}`, operatorKey)).status, 200);
      t.equal((await api(b, 'GET', '/account', token)).status, 401, `round ${round}: refused by B at once`);
      t.equal((await http('GET', `${b.urls.registry}/v2/cache-app/web/tags/list`, { headers: basic('_', token) })).status, 401, `round ${round}: and by B's registry`);
    }
    t.ok(listener(b).cache.stats.hits > hits + 40, 'B answered from its cache meanwhile');
  });

  t.test('a tag re-pointed on A: B serves the new manifest; a deleted manifest is gone on B', async (t) => {
    for (let round = 0; round < 10; round++) {
      const img = await pushNew('moving');
      for (let i = 0; i < 2; i++) {
        const r = await getOnB('moving');
        t.equal(r.headers['docker-content-digest'], img.digest, `round ${round}: B serves the manifest just pushed`);
      }
    }
    const gone = await pushNew('doomed');
    t.equal((await getOnB('doomed')).status, 200);
    t.equal((await getOnB(gone.digest)).status, 200);
    const del = await http('DELETE', `${a.urls.registry}/v2/cache-app/web/manifests/${gone.digest}`, { headers: basic('_', operatorKey) });
    t.equal(del.status, 202, del.text);
    t.equal((await getOnB(gone.digest)).status, 404, 'deleted on A: not found by digest on B');
    t.equal((await getOnB('doomed')).status, 404, 'nor by its tag');
  });

  t.test("a team's third-party switch on A applies on B at once", async (t) => {
    t.equal((await api(a, 'POST', '/teams', operatorKey, { name: 'cacheteam' })).status, 201);
    t.equal((await api(a, 'POST', '/apps', operatorKey, { name: 'team-app', team: 'cacheteam' })).status, 201);
    const client = await registerClient(a, operatorKey, 'Integration');
    const issued = await a.server.store.metadata.transact((tx) => createAuthorizationInTransaction(tx, {
      kind: 'web', accountId: a.server.bootstrap!.account.id, description: 't', scope: ['global'], clientId: client.id, accessTokenTtlMs: 8 * 3600_000, withRefreshToken: true,
    }, a.clock.now()));
    const third = issued.accessToken.token;
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 2; i++) t.equal((await api(b, 'GET', '/apps/team-app', third)).status, 200, `round ${round}: on`);
      t.equal((await api(a, 'PATCH', '/teams/cacheteam/preferences', operatorKey, { 'third-party-oauth-access': false })).status, 200);
      t.equal((await api(b, 'GET', '/apps/team-app', third)).status, 403, `round ${round}: off on A, refused by B at once`);
      t.equal((await api(a, 'PATCH', '/teams/cacheteam/preferences', operatorKey, { 'third-party-oauth-access': true })).status, 200);
    }
  });

  t.test("race: B's reads never show a tag older than the last write acknowledged before they started", async (t) => {
    const digests: string[] = [];
    /** Index of the last write acknowledged so far (-1: none). */
    let acked = -1;
    const first = await pushNew('race');
    digests.push(first.digest);
    acked = 0;
    let writing = true;
    const problems: string[] = [];
    let reads = 0;
    const writer = (async () => {
      try {
        for (let i = 1; i <= 40; i++) {
          const img = await pushNew('race');
          digests.push(img.digest);
          acked = i;
          await new Promise((r) => setTimeout(r, Math.random() * 8));
        }
      } finally {
        writing = false;
      }
    })();
    const reader = async () => {
      while (writing) {
        const floor = acked;
        const r = await getOnB('race');
        reads++;
        const at = digests.indexOf(r.headers['docker-content-digest'] as string);
        // The answer may be a write not yet recorded here (in flight: index -1, pushed after), never an older one.
        if (r.status !== 200 || (at !== -1 && at < floor)) problems.push(`read started after write ${floor} was acknowledged saw write ${at} (${r.status})`);
        await new Promise((r) => setTimeout(r, Math.random() * 3));
      }
    };
    await Promise.all([writer, reader(), reader(), reader(), reader()]);
    t.same(problems, [], `no stale read in ${reads} reads over 40 writes`);
    t.ok(reads > 40, 'reads interleaved with the writes');
    t.equal((await getOnB('race')).headers['docker-content-digest'], digests[digests.length - 1], 'the last write is what B serves');
  });

  t.test("B's listening session killed: the cache is bypassed, answers stay right, and it comes back", async (t) => {
    const inv = listener(b);
    const pid = inv.listenerPid;
    t.ok(pid, 'B has a listening session');
    const connects = inv.connects;
    const c = new pg.Client({ connectionString: db.connectionString });
    await c.connect();
    t.teardown(() => c.end());
    const img = await pushNew('outage');
    t.equal((await getOnB('outage')).headers['docker-content-digest'], img.digest);
    t.same((await c.query('SELECT pg_terminate_backend($1) AS ok', [pid])).rows, [{ ok: true }]);
    await waitFor('B notices its listener is gone or has replaced it', () => !inv.usable || inv.connects > connects, { intervalMs: 5 });
    for (let round = 0; round < 5; round++) {
      const next = await pushNew('outage');
      t.equal((await getOnB('outage')).headers['docker-content-digest'], next.digest, `round ${round}: B serves the latest while its listener is away or back`);
    }
    await waitFor('B listens again', () => inv.usable && inv.connects > connects);
    t.not(inv.listenerPid, pid, 'a new session');
    const hits = inv.cache.stats.hits;
    for (let round = 0; round < 5; round++) {
      const next = await pushNew('outage');
      for (let i = 0; i < 2; i++) t.equal((await getOnB('outage')).headers['docker-content-digest'], next.digest, `round ${round}: after recovery, the latest`);
    }
    t.ok(inv.cache.stats.hits > hits, 'and B caches again');
  });

  t.test('a write naming more records than a notification holds makes every node forget everything', async (t) => {
    const img = await pushNew('big');
    t.equal((await getOnB('big')).headers['docker-content-digest'], img.digest);
    t.ok(listener(b).cache.size > 0, 'B holds records');
    const tags = storedKeyspace('tags');
    // 200 tag records of a repository nobody reads: a payload far past 7,900 bytes.
    await a.server.store.metadata.transact((tx) => { for (let i = 0; i < 200; i++) tx.put(tags, `cache-app/nobody\x1ftag-${i}-${'x'.repeat(40)}`, { digest: img.digest }); });
    await waitFor('B forgot everything', () => listener(b).cache.size === 0 || listener(b).cache.lookup('tags', 'cache-app/web\x1fbig') === null);
    t.equal((await getOnB('big')).headers['docker-content-digest'], img.digest, 'and reads afresh');
  });

  t.test("getMany on B: cached records from the cache, the rest in one read, never older than A's acknowledged writes", async (t) => {
    const tags = storedKeyspace('tags');
    const uncached = storedKeyspace('contract-rows');
    const store = b.server.store.metadata;
    const hits = listener(b).cache.stats.hits;
    for (let round = 0; round < 10; round++) {
      const img = await pushNew('many');
      const before = listener(b).cache.stats.hits;
      const [tag, absent, other] = await store.getMany([[tags, 'cache-app/web\x1fmany'], [tags, 'cache-app/web\x1fnever'], [uncached, `round-${round}`]] as const);
      t.same([(tag as { digest?: string } | undefined)?.digest, absent, other], [img.digest, undefined, undefined], `round ${round}: the tag A just moved, the absent ones absent`);
      const again = await store.getMany([[tags, 'cache-app/web\x1fmany'], [tags, 'cache-app/web\x1fnever']] as const);
      t.equal((again[0] as { digest?: string } | undefined)?.digest, img.digest, 'read again: the same');
      t.ok(listener(b).cache.stats.hits >= before + 2, 'the second read came from the cache');
    }
    t.ok(listener(b).cache.stats.hits > hits, 'B answered from its cache');
  });

  t.test('a write on B is seen by A at once', async (t) => {
    for (let round = 0; round < 5; round++) {
      const img = freshImage();
      const onB: Target = { registry: b.urls.registry, auth: basic('_', operatorKey) };
      t.equal((await pushBlob(onB, 'cache-app/web', img.blobs[0]!)).status, 201);
      t.equal((await putManifest(onB, 'cache-app/web', 'from-b', img.manifest)).status, 201);
      const r = await http('GET', `${a.urls.registry}/v2/cache-app/web/manifests/from-b`, { headers: { ...basic('_', operatorKey), accept: MANIFEST_V2 } });
      t.equal(r.headers['docker-content-digest'], img.digest, `round ${round}: A serves B's push at once`);
    }
  });
});
