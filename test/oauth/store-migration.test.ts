/**
 * A data directory written before OAuth (schema 1, self-describing msgpack records) opens with
 * this build: the account and client indexes of authorizations are built, and tokens written
 * then still authenticate through the shared-structure databases.
 */
import t from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { openStore, key } from '../../engine/store.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import { authenticateToken } from '../../engine/identity/authorizations.js';
import { hashToken } from '../../engine/identity/tokens.js';
import { accounts, authorizationsByAccount } from '../../engine/identity/keyspaces.js';
import { tempDir } from '../helpers/server.js';

const tmp = tempDir('slipway-migrate-');
t.teardown(() => tmp.cleanup());

t.test('schema 1 → 2', async (t) => {
  const env = open({ path: join(tmp.dir, 'lmdb'), maxDbs: 32, encoding: 'msgpack' });
  const db = (name: string) => env.openDB(name, { encoding: 'msgpack' });
  const now = Date.UTC(2025, 5, 1);
  await db('meta').put('schema', 1);
  await db('accounts').put('acc-1', { id: 'acc-1', email: 'old@example.com', name: null, passwordHash: 'x', totpSecretSealed: 'x', apiKeyAuthorizationId: 'auth-1', createdAt: now, updatedAt: now });
  await db('authorizations').put('auth-1', {
    id: 'auth-1', kind: 'api-key', accountId: 'acc-1', teamId: null, clientId: null, description: 'API key', scope: ['global'],
    createdAt: now, updatedAt: now, expiresAt: null, revokedAt: null, accessTokenHash: hashToken('legacy-0000-1111-2222-333344445555'), refreshTokenHash: null,
  });
  await db('tokens').put(hashToken('legacy-0000-1111-2222-333344445555'), { id: 'tok-1', authorizationId: 'auth-1', kind: 'access', createdAt: now, expiresAt: null });
  await env.close();

  const store = await openStore(tmp.dir);
  t.equal(await schemaVersion(store.metadata), SCHEMA_VERSION);
  t.equal(await store.metadata.get(authorizationsByAccount, key('acc-1', 'auth-1')), now, 'index built');
  t.equal((await store.metadata.get(accounts, 'acc-1'))?.email, 'old@example.com', 'old records read through the shared-structure handle');
  const p = await authenticateToken(store.metadata, 'legacy-0000-1111-2222-333344445555', now);
  t.same(typeof p === 'object' ? p.accountId : p, 'acc-1', 'an old token authenticates');
  t.equal((await store.metadata.range(accounts)).length, 1, 'shared structures do not show up as records');
  await store.close();
});
