/**
 * A data directory at schema 6 kept authorization codes in the `grants` database. Opened with
 * this build (schema 7) the records move to `authorization-codes`: a code outstanding at the
 * upgrade still exchanges once, and its replay is still refused and revokes what it issued.
 */
import t from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { openStore } from '../../engine/store.js';
import { keyspace } from '../../engine/storage/metadata.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import { ManualClock } from '../../engine/clock.js';
import { Clients } from '../../engine/oauth/clients.js';
import { AuthorizationCodes } from '../../engine/oauth/authorization-codes.js';
import { authenticateToken } from '../../engine/identity/authorizations.js';
import { hashToken } from '../../engine/identity/tokens.js';
import { isSlipwayError } from '../../engine/errors.js';
import { tempDir } from '../helpers/server.js';

t.test('schema 6 → 7: outstanding codes move and still exchange', async (t) => {
  const tmp = tempDir('slipway-migrate7-');
  t.teardown(() => tmp.cleanup());
  const now = Date.UTC(2026, 10, 1);
  const clock = new ManualClock(now);

  const first = await openStore(tmp.dir);
  const { client, secret } = await new Clients(first.metadata, clock).create('acc-1', { name: 'Old tool', redirectUri: 'https://tool.example/cb' });
  await first.close();

  const code = 'outstanding-code-written-by-schema-6';
  const env = open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack' });
  await env.openDB('meta', { encoding: 'msgpack' }).put('schema', 6);
  await env.openDB('grants', { encoding: 'msgpack' }).put(hashToken(code), {
    id: 'code-1', clientId: client.id, accountId: 'acc-1', teamId: null, scope: ['identity'], redirectUri: client.redirectUri,
    redirectUriGiven: false, codeChallenge: null, createdAt: now - 60_000, expiresAt: now + 240_000, usedAt: null, authorizationId: null,
  });
  await env.close();

  const store = await openStore(tmp.dir);
  t.teardown(() => store.close());
  t.equal(await schemaVersion(store.metadata), SCHEMA_VERSION, 'schema stamped');
  t.ok(SCHEMA_VERSION >= 7, 'schema 7 or later');
  // The legacy database, named as a keyspace only here: the LMDB implementation maps a keyspace to the database of its name.
  t.same(await store.metadata.range(keyspace('oauth', 'grants')), [], 'the legacy grants database is empty');

  const codes = new AuthorizationCodes(store.metadata, clock, new Clients(store.metadata, clock));
  const exchange = () => codes.exchange({ code, credentials: { clientId: null, secret }, redirectUri: null, codeVerifier: null });
  const { issued } = await exchange();
  const p = await authenticateToken(store.metadata, issued.accessToken.token, now);
  t.equal(typeof p === 'object' ? p.accountId : p, 'acc-1', 'the access token of the moved code authenticates');

  const replay = await exchange().then(() => null, (e: unknown) => e);
  t.ok(isSlipwayError(replay) && replay.code === 'INVALID_GRANT', 'a replay is refused');
  t.equal(typeof (await authenticateToken(store.metadata, issued.accessToken.token, now)), 'string', 'and revokes what the first exchange issued (its token fails)');
});
