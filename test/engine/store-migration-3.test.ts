/**
 * A data directory at schema 2 (written here with plain lmdb-js, as that build stored it) opens
 * with this build (migrations 2 → 3 and on; store-migration-4.test.ts covers 3 → 4): the
 * digest → repositories index is built from every repository link and the team index from every
 * authorization, nothing else changes (in particular, the client index of a client deleted under
 * schema 2 is not rebuilt), and the migrated indexes are the ones team listing and GC use.
 */
import t from 'tap';
import { authorizationsByAccount, authorizationsByClient, authorizationsByTeam } from '../../engine/identity/keyspaces.js';
import { open } from 'lmdb';
import { join } from 'node:path';
import { openStore, key, KEY_SEPARATOR } from '../../engine/store.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import * as reg from '../../engine/registry/keyspaces.js';
import { ManualClock } from '../../engine/clock.js';
import { Teams, type TeamRecord } from '../../engine/platform/teams.js';
import { GarbageCollector } from '../../engine/registry/gc.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { releaseRetention } from '../../engine/platform/retention.js';
import { repositoriesLinking } from '../../engine/registry/links.js';
import type { Digest } from '../../engine/digest.js';
import { tempDir } from '../helpers/server.js';

const DAY = 24 * 3600_000;
const now = Date.UTC(2026, 0, 1);
const X = `sha256:${'a'.repeat(64)}` as Digest; // unreferenced, linked from three repositories
const Y = `sha256:${'b'.repeat(64)}` as Digest; // referenced, linked from one

function authorization(id: string, fields: { accountId?: string; teamId?: string | null; clientId?: string | null; revokedAt?: number | null; expiresAt?: number | null }) {
  return {
    id, kind: fields.clientId ? 'web' : 'direct', accountId: fields.accountId ?? 'acc-1', teamId: fields.teamId ?? null, clientId: fields.clientId ?? null,
    description: id, scope: ['global'], createdAt: now - DAY, updatedAt: now - DAY, expiresAt: fields.expiresAt ?? null, revokedAt: fields.revokedAt ?? null,
    accessTokenHash: null, refreshTokenHash: null, accessTokenTtlMs: null,
  };
}

t.test('schema 2 → 3', async (t) => {
  const tmp = tempDir('slipway-migrate3-');
  t.teardown(() => tmp.cleanup());
  const env = open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack' });
  const db = (name: string) => env.openDB(name, { encoding: 'msgpack' });
  await db('meta').put('schema', 2);
  const auths = [
    authorization('auth-api', {}),
    authorization('auth-t1-live', { teamId: 'team-1' }),
    authorization('auth-t1-revoked', { teamId: 'team-1', revokedAt: now - 1000 }),
    authorization('auth-t1-expired', { teamId: 'team-1', expiresAt: now - 1000 }),
    authorization('auth-t2', { teamId: 'team-2', accountId: 'acc-2' }),
    authorization('auth-web-deleted-client', { clientId: 'client-gone' }),
  ];
  for (const a of auths) {
    await db('authorizations').put(a.id, a);
    await db('authorizations-by-account').put(key(a.accountId, a.id), a.createdAt);
  }
  const links: Array<[string, Digest, number]> = [['app/web', X, now - 3 * DAY], ['app/worker', X, now - 2 * DAY], ['other/web', X, now - DAY], ['app/web', Y, now - DAY]];
  for (const [repository, digest, at] of links) await db('repository-blobs').put(key(repository, digest), at);
  await db('blobs').put(X, { size: 10, createdAt: now - 3 * DAY, refs: 0 });
  await db('blobs').put(Y, { size: 11, createdAt: now - DAY, refs: 1 });
  await env.close();

  const store = await openStore(tmp.dir);
  t.equal(await schemaVersion(store.metadata), SCHEMA_VERSION, 'schema stamped');

  t.same((await store.metadata.range(reg.blobRepositories)).map((e) => [e.key, e.value]),
    [[key(X, 'app/web'), now - 3 * DAY], [key(X, 'app/worker'), now - 2 * DAY], [key(X, 'other/web'), now - DAY], [key(Y, 'app/web'), now - DAY]],
    'digest → repositories index built from every link, with its time');
  t.ok((await store.metadata.range(reg.blobRepositories)).map((e) => e.key).every((k) => k.includes(KEY_SEPARATOR) && !k.includes('\0')), 'keys joined with U+001F, never NUL');
  t.equal((await store.metadata.range(reg.repositoryBlobs)).length, 4, 'links unchanged');

  t.same((await store.metadata.range(authorizationsByTeam)).map((e) => e.key), [
    key('team-1', 'auth-t1-expired'), key('team-1', 'auth-t1-live'), key('team-1', 'auth-t1-revoked'), key('team-2', 'auth-t2'),
  ], 'team index built from every team authorization');
  t.same(await store.metadata.range(authorizationsByClient), [], "a deleted client's index entries are not brought back");
  t.equal((await store.metadata.range(authorizationsByAccount)).length, auths.length, 'account index unchanged');

  const clock = new ManualClock(now);
  const teams = new Teams(store, clock);
  const team = (id: string): TeamRecord => ({ id, name: id, thirdPartyOAuth: true, createdAt: now, updatedAt: now });
  t.same((await teams.authorizations(team('team-1'))).map((a) => a.id), ['auth-t1-live'], "team listing reads the migrated index: only the team's live one");
  t.same((await teams.authorizations(team('team-2'))).map((a) => a.id), ['auth-t2']);

  const gc = new GarbageCollector(store.metadata, new FsBlobBackend(tmp.dir), clock, releaseRetention);
  const r = await gc.run();
  t.same(r.deletedBlobs.map((b) => b.digest), [X], 'GC deletes the unreferenced blob');
  t.same(await repositoriesLinking(store.metadata, X), [], 'with its links in all three repositories, found through the migrated index');
  t.equal((await store.metadata.range(reg.repositoryBlobs)).length, 1);
  t.same((await store.metadata.range(reg.repositoryBlobs)).map((e) => e.key), [key('app/web', Y)], 'the referenced blob keeps its link');
  t.same((await store.metadata.range(reg.blobRepositories)).map((e) => e.key), [key(Y, 'app/web')]);
  await store.close();

  const again = await openStore(tmp.dir);
  t.equal(await schemaVersion(again.metadata), SCHEMA_VERSION, 'reopening a migrated store does not migrate again');
  t.equal((await again.metadata.range(reg.blobRepositories)).length, 1);
  await again.close();
});
