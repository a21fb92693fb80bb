/**
 * The catalog's access filter (engine/platform/access.ts `repositoryAccess` with
 * `Registry.catalog`): the same answers as the per-app rule, with each app's record read once
 * per request, a team's membership, the team and the caller's client read once however many
 * apps share them, apps the page does not reach never read, and nothing read for a token whose
 * scope does not allow pulls.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { engineFixture } from '../helpers/engine.js';
import { getEach, key, type Keyspace, type MetadataReader, type RecordRef } from '../../engine/storage/metadata.js';
import { apps, memberships, teams } from '../../engine/platform/keyspaces.js';
import { clients } from '../../engine/oauth/keyspaces.js';
import { repositories } from '../../engine/registry/keyspaces.js';
import { mayUseRepository, repositoryAccess } from '../../engine/platform/access.js';
import type { AppRecord } from '../../engine/platform/records.js';
import type { Principal } from '../../engine/identity/authorizations.js';
import { parseRepositoryName } from '../../engine/registry/names.js';

/** Counts the gets each keyspace receives. */
class CountingReader implements MetadataReader {
  readonly gets = new Map<string, number>();
  constructor(readonly inner: MetadataReader) {}
  get<V>(ks: Keyspace<V>, k: string) {
    this.gets.set(ks.name, (this.gets.get(ks.name) ?? 0) + 1);
    return this.inner.get(ks, k);
  }
  getMany<const R extends ReadonlyArray<RecordRef<unknown>>>(refs: R) {
    return getEach(this, refs);
  }
  range<V>(ks: Keyspace<V>, opts?: Parameters<MetadataReader['range']>[1]) {
    return this.inner.range(ks, opts);
  }
  count(name: string): number {
    return this.gets.get(name) ?? 0;
  }
}

t.test('catalog access: each app, team, membership and client read once per request', async (t) => {
  const e = await engineFixture(t);
  const me = randomUUID(), someoneElse = randomUUID(), team = randomUUID(), client = randomUUID();
  const app = (name: string, ownerId: string, teamId: string | null): AppRecord => ({
    id: randomUUID(), name, ownerId, teamId, generation: 'cedar', stack: 'heroku-24', buildStack: 'heroku-24', space: null, createdAt: 1, updatedAt: 1,
  });
  const all = [
    ...Array.from({ length: 5 }, (_, i) => app(`team-app-${i}`, someoneElse, team)),
    app('mine-a', me, null), app('mine-b', me, null), app('theirs', someoneElse, null),
  ];
  await e.store.metadata.transact((tx) => {
    for (const a of all) {
      tx.put(apps, a.id, a);
      for (const process of ['web', 'worker', 'clock']) tx.put(repositories, `${a.name}/${process}`, { name: `${a.name}/${process}`, appId: a.id, createdAt: 1 });
    }
    tx.put(teams, team, { id: team, name: 'crew', thirdPartyOAuth: false, createdAt: 1, updatedAt: 1 });
    tx.put(memberships, key(team, me), { teamId: team, accountId: me, role: 'member', createdAt: 1 });
    tx.put(clients, client, { id: client, name: 'first-party', redirectUri: 'https://example.com/cb', secretHash: 'x', trusted: true, ownerId: someoneElse, createdAt: 1, updatedAt: 1 });
  });
  const principal: Principal = { accountId: me, authorizationId: randomUUID(), kind: 'web', scope: ['read'], clientId: client, teamId: null };

  // The answer the per-app rule gives, repository by repository.
  const expected: string[] = [];
  for (const { key: name, value } of await e.store.metadata.range(repositories)) {
    const a = all.find((x) => x.id === value.appId)!;
    if (await mayUseRepository(e.store, principal, a, 'pull')) expected.push(name);
  }
  t.equal(expected.length, 7 * 3, 'the team apps and my own apps, three repositories each');

  const counting = new CountingReader(e.store.metadata);
  const pullable = repositoryAccess({ metadata: counting }, principal, 'pull');
  const page = await e.registry.catalog(async (r) => (await pullable(r.appId))?.name === parseRepositoryName(r.name).app, 1000, undefined);
  t.same(page.items, expected, 'the same repositories as the per-app rule');
  t.equal(counting.count('apps'), all.length, 'each app record read once, not once per repository');
  t.equal(counting.count('memberships'), 1, "the team's membership read once for its five apps");
  t.equal(counting.count('teams'), 1, 'the team read once');
  t.equal(counting.count('clients'), 1, "the caller's client read once");

  const first = new CountingReader(e.store.metadata);
  const firstAccess = repositoryAccess({ metadata: first }, principal, 'pull');
  const firstPage = await e.registry.catalog(async (r) => (await firstAccess(r.appId))?.name === parseRepositoryName(r.name).app, 2, undefined);
  t.same(firstPage.items, expected.slice(0, 2));
  t.ok(first.count('apps') <= 2, `a short page reads only the apps it reaches (${first.count('apps')})`);

  const noScope = new CountingReader(e.store.metadata);
  const none = repositoryAccess({ metadata: noScope }, { ...principal, scope: ['identity'] }, 'pull');
  t.same((await e.registry.catalog(async (r) => (await none(r.appId)) !== undefined, 1000, undefined)).items, [], 'a scope without apps:read lists nothing');
  t.equal([...noScope.gets.values()].reduce((a, b) => a + b, 0), 0, 'and reads nothing');

  const team2 = { ...principal, teamId: team, clientId: null };
  const teamToken = repositoryAccess(e.store, team2, 'pull');
  const teamPage = await e.registry.catalog(async (r) => (await teamToken(r.appId))?.name === parseRepositoryName(r.name).app, 1000, undefined);
  t.same(teamPage.items, expected.filter((n) => n.startsWith('team-app-')), 'a team token lists only its team\'s apps');
});
