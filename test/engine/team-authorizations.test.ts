/**
 * `Teams.authorizations(team)` lists exactly that team's live authorizations, in id order,
 * through the team index, after creations in two teams (plus personal direct ones and a
 * web-flow one owned by a team), token regeneration, revocation and expiry; every team
 * authorization has its index entry, written in the transaction that stored it.
 */
import t from 'tap';
import { tempDir } from '../helpers/server.js';
import { ManualClock } from '../../engine/clock.js';
import { key, openStore } from '../../engine/store.js';
import { Teams } from '../../engine/platform/teams.js';
import { Authorizations } from '../../engine/oauth/authorizations.js';
import { authenticateToken, createAuthorizationInTransaction } from '../../engine/identity/authorizations.js';
import type { AuthorizationRecord } from '../../engine/identity/records.js';
import { authorizations, authorizationsByTeam } from '../../engine/identity/keyspaces.js';

const DAY = 24 * 3600_000;

t.test('a team lists exactly its own authorizations', async (t) => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const teams = new Teams(store, clock);
  const personal = new Authorizations(store.metadata, clock);
  const acme = await teams.create('acme', 'admin-1');
  const umbrella = await teams.create('umbrella', 'admin-2');

  /** What a full scan of every record says a team's live authorizations are (the old way). */
  const byScan = async (teamId: string) => (await store.metadata.range(authorizations)).map((e) => e.value)
    .filter((a) => a.teamId === teamId && a.revokedAt === null && (a.expiresAt === null || a.expiresAt > clock.now()))
    .map((a) => a.id);
  const ids = (as: AuthorizationRecord[]) => as.map((a) => a.id);
  const check = async (what: string, acmeIds: string[], umbrellaIds: string[]) => {
    t.same(ids(await teams.authorizations(acme)), [...acmeIds].sort(), `${what}: acme lists exactly its own`);
    t.same(ids(await teams.authorizations(umbrella)), [...umbrellaIds].sort(), `${what}: umbrella lists exactly its own`);
    t.same(ids(await teams.authorizations(acme)), await byScan(acme.id), `${what}: same as a scan of every record`);
    t.same(ids(await teams.authorizations(umbrella)), await byScan(umbrella.id));
  };

  const a30 = (await teams.createAuthorization(acme, 'admin-1', { description: 'ci', expiry_days: 30 })).record;
  const a365 = (await teams.createAuthorization(acme, 'admin-1', { description: 'deploy' })).record;
  const u = (await teams.createAuthorization(umbrella, 'admin-2', { description: 'u', expiry_days: 90 })).record;
  await personal.createDirect('admin-1', { description: 'mine' });
  await personal.createDirect('admin-2', { description: 'mine too' });
  // A web-flow authorization a team admin gave a client on behalf of the team (grants.ts).
  const web = (await store.metadata.transact((tx) => createAuthorizationInTransaction(tx, {
    kind: 'web', accountId: 'admin-1', teamId: acme.id, clientId: 'client-1', description: 'app', scope: ['read'], accessTokenTtlMs: 8 * 3600_000, withRefreshToken: true,
  }, clock.now()))).record;
  await check('created', [a30.id, a365.id, web.id], [u.id]);
  t.same((await store.metadata.range(authorizationsByTeam)).map((e) => e.key).sort(), [key(acme.id, a30.id), key(acme.id, a365.id), key(acme.id, web.id), key(umbrella.id, u.id)].sort(),
    'one index entry per team authorization, none for personal ones');
  t.equal(await store.metadata.get(authorizationsByTeam, key(acme.id, a30.id)), a30.createdAt, 'valued with the creation time');

  const managed = (await teams.manageableAuthorization(a365.id, 'admin-1'))!;
  const regenerated = await personal.regenerate(managed);
  await check('regenerated', [a30.id, a365.id, web.id], [u.id]);
  t.same(ids(await teams.authorizations(acme)).filter((id) => id === a365.id), [a365.id], 'regeneration keeps one entry, same id');
  const p = await authenticateToken(store.metadata, regenerated.accessToken.token, clock.now());
  t.equal(typeof p === 'object' ? p.teamId : p, acme.id, 'the new token is a team token');

  await personal.revoke((await teams.manageableAuthorization(web.id, 'admin-1'))!);
  await check('revoked', [a30.id, a365.id], [u.id]);
  t.equal(await teams.manageableAuthorization(u.id, 'admin-1'), undefined, "acme's admin cannot manage umbrella's authorization");

  clock.advance(31 * DAY);
  await check('30-day one expired', [a365.id], [u.id]);
  await personal.revoke((await teams.manageableAuthorization(u.id, 'admin-2'))!);
  await check('umbrella revoked its only one', [a365.id], []);
  t.same((await personal.listFor('admin-1')).map((a) => a.description), ['mine'], 'the personal listing still has only the personal one');
});
