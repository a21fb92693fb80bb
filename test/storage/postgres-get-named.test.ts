/**
 * `getWithNamed` of the PostgreSQL store (engine/storage/postgres-reads.ts `cachedGetWithNamed`)
 * on a real PostgreSQL 15, through the cached keyspaces a manifest GET by tag reads (`tags`,
 * `manifests`): it returns what two gets return (tag absent, manifest absent, both present) in
 * one statement and fills the read cache with both answers; a tag the cache holds answers alone;
 * concurrent reads the cache misses share statements (statement-batch.ts), each its own answer.
 * And a race with random timing: node A commits changes and deletions of the tag and of the
 * manifests it may name while node B reads them joined; whatever B's reads return, and whatever
 * B's cache holds once the invalidations of A's acknowledged commits were delivered (B's read
 * barrier), is never older than those commits — also for the manifest whose key B learnt only
 * from its answer (read-cache.ts `beginUnkeyedFill`). And with every PostgreSQL process stopped,
 * 20 concurrent misses queued behind a hung statement each fail as the store being unavailable
 * within two driver timeouts (statement-batch.ts's bound).
 */
import t from 'tap';
import pg from 'pg';
import { isDeepStrictEqual } from 'node:util';
import { execFileSync } from 'node:child_process';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { storedKeyspace, StoreUnavailableError, type Keyspace } from '../../engine/storage/metadata.js';
import { prng } from '../helpers/metadata-contract-suite.js';

const skip = postgresSkip();
/** The keyspaces a manifest GET by tag reads, both cached (read-cache.ts CACHED_KEYSPACES). */
const tags = storedKeyspace('tags') as Keyspace<{ digest: string; seq: number }>;
const manifests = storedKeyspace('manifests') as Keyspace<{ seq: number }>;
/** A node's read cache. */
const cacheOf = (s: PostgresMetadataStore) => s.invalidation.cache;

/** Statements sent by any pg client while `fn` runs (the read barrier's notifications excluded). */
async function statementsOf<T>(fn: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const q = args[0] as string | { name?: string; text?: string };
    const text = typeof q === 'string' ? q : q.name ?? q.text ?? '?';
    if (!text.startsWith('SELECT pg_notify')) statements.push(text);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    return { result: await fn(), statements };
  } finally {
    pg.Client.prototype.query = query;
  }
}

t.test('getWithNamed on PostgreSQL', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const a = await PostgresMetadataStore.open({ connectionString: db.connectionString });
  // B sends two statements of each kind at a time (the default is one), so that the race's four
  // readers both share statements and overlap them.
  const b = await PostgresMetadataStore.open({ connectionString: db.connectionString, readStatementsInFlight: 2 });
  t.teardown(async () => { await a.close(); await b.close(); });
  const cached = (s: PostgresMetadataStore, ks: Keyspace<unknown>, k: string) => cacheOf(s).lookup(ks.name, k);

  await t.test('one statement answers what two gets answer, and fills the cache with both', async (t) => {
    await a.transact((tx) => {
      tx.put(tags, 'r\x1fboth', { digest: 'd-both', seq: 1 });
      tx.put(manifests, 'd-both', { seq: 2 });
      tx.put(tags, 'r\x1fdangling', { digest: 'd-missing', seq: 3 });
    });
    const cases: Array<[string, string]> = [['r\x1fabsent', 'tag absent'], ['r\x1fdangling', 'manifest absent'], ['r\x1fboth', 'both present']];
    for (const [k, what] of cases) {
      const { result, statements } = await statementsOf(() => b.getWithNamed(tags, k, 'digest', manifests));
      t.same(statements, ['slipway-get-named'], `${what}: one statement`);
      const tag = await a.get(tags, k);
      t.same(result.value, tag, `${what}: the tag is what get returns`);
      if (tag) {
        t.same(result.named, { value: await a.get(manifests, tag.digest) }, `${what}: the manifest is what get returns`);
        t.same(cached(b, manifests, tag.digest), { value: result.named!.value }, `${what}: the manifest filled the cache`);
      } else t.equal(result.named, undefined, `${what}: nothing named`);
      t.same(cached(b, tags, k), { value: tag }, `${what}: the tag (or its absence) filled the cache`);
      const again = await statementsOf(() => b.getWithNamed(tags, k, 'digest', manifests));
      t.same(again.statements, [], `${what}: read again, no statement (the cache)`);
      t.same(again.result, { value: tag }, `${what}: read again, the tag alone (the caller reads the manifest: its own cache first)`);
    }
    await t.rejects(b.getWithNamed(tags, '', 'digest', manifests), RangeError, 'a bad key refuses');
  });

  await t.test('a read of records the cache does not hold waits for no read barrier; one it holds does', async (t) => {
    await a.transact((tx) => {
      tx.put(tags, 'r\x1fbarrier', { digest: 'd-barrier', seq: 1 });
      tx.put(manifests, 'd-barrier', { seq: 2 });
    });
    // That commit's notification delivered to B first: it would refuse the fills below (read-cache.ts).
    await b.invalidation.sync();
    const inv = b.invalidation;
    const sync = inv.sync.bind(inv);
    let barriers = 0;
    inv.sync = () => { barriers++; return sync(); };
    t.teardown(() => { inv.sync = sync; });
    const reads: Array<[string, () => Promise<unknown>]> = [
      ['getWithNamed', () => b.getWithNamed(tags, 'r\x1fbarrier', 'digest', manifests)],
      ['get', () => b.get(manifests, 'd-barrier')],
      ['getMany', () => b.getMany([[tags, 'r\x1fbarrier'], [manifests, 'd-barrier']] as const)],
    ];
    for (const [what, read] of reads) {
      cacheOf(b).invalidate([[tags.name, 'r\x1fbarrier'], [manifests.name, 'd-barrier']]);
      barriers = 0;
      await read();
      t.equal(barriers, 0, `${what}, neither record cached: no barrier (its statement is fresh)`);
      t.ok(cacheOf(b).holds(tags.name, 'r\x1fbarrier') || cacheOf(b).holds(manifests.name, 'd-barrier'), `${what}: its answer filled the cache`);
      barriers = 0;
      await read();
      t.equal(barriers, 1, `${what}, read again from the cache: after one barrier`);
    }
  });

  await t.test('concurrent misses share statements, each read its own answer', async (t) => {
    // C as a node runs it by default: one statement of each kind at a time.
    const c = await PostgresMetadataStore.open({ connectionString: db.connectionString });
    t.teardown(() => c.close());
    const n = 60;
    await a.transact((tx) => {
      for (let i = 0; i < n; i++) {
        if (i % 3 === 0) continue; // tag absent
        tx.put(tags, `many\x1f${i}`, { digest: `d-many-${i}`, seq: i });
        if (i % 3 === 2) tx.put(manifests, `d-many-${i}`, { seq: i }); // else: manifest absent
      }
    });
    await c.invalidation.sync();
    const keys = Array.from({ length: n }, (_, i) => `many\x1f${i}`);
    const before = c.readCache!.missReads;
    const { result, statements } = await statementsOf(() => Promise.all(keys.map((k) => c.getWithNamed(tags, k, 'digest', manifests))));
    t.ok(statements.length <= 3, `${n} concurrent reads in ${statements.length} statements: ${statements.join(', ')}`);
    t.ok(statements.includes('slipway-get-named-many'), 'the waiting reads went in one multi-key statement');
    const after = c.readCache!.missReads;
    t.same({ reads: after.reads - before.reads, statements: after.statements - before.statements }, { reads: n, statements: statements.length }, 'the metrics count the reads and the statements that carried them');
    for (let i = 0; i < n; i++) {
      const tag = await a.get(tags, keys[i]!);
      const want = tag ? { value: tag, named: { value: await a.get(manifests, tag.digest) } } : { value: undefined };
      if (!isDeepStrictEqual(result[i], want)) t.fail(`read ${i}: ${JSON.stringify(result[i])}, expected ${JSON.stringify(want)}`);
      if (tag && !isDeepStrictEqual(cacheOf(c).lookup(manifests.name, tag.digest), { value: want.named!.value })) t.fail(`read ${i}: its manifest did not fill the cache`);
    }
    t.pass(`every one of the ${n} answers is what two gets return, and filled the cache`);
    const digests = Array.from({ length: n }, (_, i) => `d-many-${i}`);
    cacheOf(c).invalidate(digests.map((d) => [manifests.name, d]));
    const gets = await statementsOf(() => Promise.all(digests.map((d) => c.get(manifests, d))));
    t.ok(gets.statements.length <= 3 && gets.statements.includes('slipway-get-many'), `${n} concurrent gets in ${gets.statements.length} statements: ${gets.statements.join(', ')}`);
    t.same(gets.result, await Promise.all(digests.map((d) => a.get(manifests, d))), 'each get its own record (or its absence)');
  });

  await t.test("race: B's joined reads and B's cache are never older than A's acknowledged, delivered commits (random timing)", async (t) => {
    const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Date.now() % 1e9);
    t.comment(`seed ${seed} (set SLIPWAY_TEST_SEED to replay)`);
    const random = prng(seed);
    const tagKey = 'race\x1flatest';
    const digests = ['d0', 'd1', 'd2'];
    /** A committed state: the tag's value and each manifest's (undefined: absent). */
    type State = { tag?: { digest: string; seq: number }; m: Record<string, { seq: number } | undefined> };
    /** states[i]: the state after A's i-th commit; states past `acked` may be committing. */
    const states: State[] = [{ m: { d0: undefined, d1: undefined, d2: undefined } }];
    let acked = 0;
    let writing = true;
    const problems: string[] = [];
    const same = isDeepStrictEqual;
    const writer = (async () => {
      try {
        for (let seq = 1; seq <= 150; seq++) {
          const prev = states[states.length - 1]!;
          const next: State = { tag: prev.tag, m: { ...prev.m } };
          const r = random();
          const d = digests[Math.floor(random() * digests.length)]!;
          if (r < 0.35) next.tag = { digest: d, seq };
          else if (r < 0.45) next.tag = undefined;
          else if (r < 0.9) next.m[d] = { seq };
          else next.m[d] = undefined;
          states.push(next);
          await a.transact((tx) => {
            if (next.tag) tx.put(tags, tagKey, next.tag);
            else tx.remove(tags, tagKey);
            if (next.m[d]) tx.put(manifests, d, next.m[d]!);
            else tx.remove(manifests, d);
          });
          acked = seq;
          if (random() < 0.5) await new Promise((r) => setTimeout(r, random() * 4));
        }
      } finally {
        writing = false;
      }
    })();
    let reads = 0, joined = 0;
    const reader = async () => {
      while (writing) {
        const floor = acked;
        const got = await b.getWithNamed(tags, tagKey, 'digest', manifests);
        reads++;
        const later = states.slice(floor);
        if (got.named) {
          joined++;
          // One statement, one snapshot: a state at or after the floor had both answers.
          if (!later.some((s) => same(s.tag, got.value) && same(s.m[got.value!.digest], got.named!.value))) {
            problems.push(`read after commit ${floor}: tag ${JSON.stringify(got.value)} with manifest ${JSON.stringify(got.named.value)} is no state since`);
          }
        } else if (!later.some((s) => same(s.tag, got.value))) problems.push(`read after commit ${floor}: tag ${JSON.stringify(got.value)} from the cache is older`);
        // Every invalidation of commits acknowledged before the barrier is delivered after it: what B holds is no older.
        const before = acked;
        if (await b.invalidation.sync()) {
          const since = states.slice(before);
          const tag = cached(b, tags, tagKey);
          if (tag && !since.some((s) => same(s.tag, tag.value))) problems.push(`cache after commit ${before}: tag ${JSON.stringify(tag.value)} is older`);
          for (const d of digests) {
            const m = cached(b, manifests, d);
            if (m && !since.some((s) => same(s.m[d], m.value))) problems.push(`cache after commit ${before}: manifest ${d} ${JSON.stringify(m.value)} is older`);
          }
        }
        // Forget the tag now and then, so that the next read is a joined one again.
        if (random() < 0.7) cacheOf(b).invalidate([[tags.name, tagKey]]);
        if (random() < 0.3) await new Promise((r) => setTimeout(r, random() * 3));
      }
    };
    await Promise.all([writer, reader(), reader(), reader(), reader()]);
    t.same(problems, [], `no stale answer or cache entry in ${reads} reads (${joined} joined) over 150 commits`);
    t.ok(joined > 50, 'the reads were mostly joined ones, racing the commits');
    t.comment(`fills refused by a racing invalidation: ${cacheOf(b).stats.refused}`);
  });
});

t.test('a stalled database: coalesced misses waiting behind a hung statement each fail within two driver timeouts', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  // Statement timeout 300 ms: the driver gives up 1 s later (postgres-metadata.ts), connections after 1 s.
  const s = await PostgresMetadataStore.open({ connectionString: db.connectionString, statementTimeoutMs: 300, connectTimeoutMs: 1000 });
  t.teardown(() => s.close().catch(() => {}));
  await s.transact((tx) => { for (let i = 0; i < 20; i++) tx.put(tags, `stall\x1f${i}`, { digest: `d-stall-${i}`, seq: i }); });
  // Every process of the server stopped (postmaster and backends): nothing answers, nothing times out on its side.
  const backend = Number((await s.pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid);
  const postmaster = Number(execFileSync('ps', ['-o', 'ppid=', '-p', String(backend)], { encoding: 'utf8' }).trim());
  const pids = [postmaster, ...execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).trim().split('\n').map(Number)];
  const signal = (sig: NodeJS.Signals) => { for (const pid of pids) try { process.kill(pid, sig); } catch { /* ended */ } };
  signal('SIGSTOP');
  t.teardown(() => signal('SIGCONT'));
  cacheOf(s).invalidate(Array.from({ length: 20 }, (_, i) => [tags.name, `stall\x1f${i}`] as [string, string]));
  const t0 = performance.now();
  const ends = await Promise.all(Array.from({ length: 20 }, (_, i) => s.getWithNamed(tags, `stall\x1f${i}`, 'digest', manifests).then(
    () => ({ ok: true, ms: performance.now() - t0, unavailable: false }),
    (e: unknown) => ({ ok: false, ms: performance.now() - t0, unavailable: e instanceof StoreUnavailableError }),
  )));
  signal('SIGCONT');
  t.same(ends.filter((e) => e.ok), [], 'no read answered from a stopped database');
  t.ok(ends.every((e) => e.unavailable), 'each failed as the store being unavailable (StoreUnavailableError: 503 at the hosts)');
  const slowest = Math.max(...ends.map((e) => e.ms));
  // Bound: the hung statement's 1.3 s, then the next one's (it may also wait up to 1 s for a connection): 3.6 s, with slack.
  t.ok(slowest < 5000, `the slowest of 20 concurrent misses ended in ${Math.round(slowest)} ms`);
});
