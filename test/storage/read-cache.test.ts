/**
 * The read cache's data structure (engine/storage/read-cache.ts): hits parse afresh (no shared
 * mutable values), absence is cached, a fill that raced an invalidation of its key or of
 * everything is refused (many rounds, random interleavings, checked against a model), and the
 * byte and entry bounds hold.
 */
import t from 'tap';
import { ReadCache, MAX_TRACKED_INVALIDATIONS } from '../../engine/storage/read-cache.js';

t.test('hits, absence, fresh copies, only the listed keyspaces', async (t) => {
  const c = new ReadCache();
  t.equal(c.lookup('tags', 'a'), null, 'a miss');
  c.fill(c.beginFill('tags', 'a'), JSON.stringify({ digest: 'x' }));
  const one = c.lookup<{ digest: string }>('tags', 'a')!.value!;
  one.digest = 'changed by a caller';
  t.same(c.lookup('tags', 'a'), { value: { digest: 'x' } }, 'each hit is a fresh copy');
  c.fill(c.beginFill('tags', 'b'), null);
  t.same(c.lookup('tags', 'b'), { value: undefined }, 'absence is cached');
  c.invalidate([['tags', 'a']]);
  t.equal(c.lookup('tags', 'a'), null, 'invalidated');
  t.ok(ReadCache.caches('tokens'));
  t.notOk(ReadCache.caches('rate-limits'), 'high-churn keyspaces are never cached');
  t.notOk(ReadCache.caches('authorization-use'));
});

t.test('a fill that started before an invalidation is refused; one after is kept (random interleavings)', async (t) => {
  for (let round = 0; round < 2000; round++) {
    const c = new ReadCache();
    const keys = ['a', 'b', 'c'];
    // Model: the committed version per key; a read captures it when issued.
    const version: Record<string, number> = { a: 0, b: 0, c: 0 };
    const inFlight: Array<{ ticket: ReturnType<ReadCache['beginFill']>; key: string; saw: number }> = [];
    for (let step = 0; step < 30; step++) {
      const r = Math.random();
      const key = keys[Math.floor(Math.random() * keys.length)]!;
      if (r < 0.35) {
        inFlight.push({ ticket: c.beginFill('tags', key), key, saw: version[key]! });
      } else if (r < 0.6 && inFlight.length > 0) {
        const [f] = inFlight.splice(Math.floor(Math.random() * inFlight.length), 1);
        c.fill(f!.ticket, String(f!.saw));
      } else if (r < 0.85) {
        version[key]!++;
        c.invalidate([['tags', key]]);
      } else if (r < 0.9) {
        for (const k of keys) version[k]!++;
        c.clear();
      } else {
        const hit = c.lookup<number>('tags', key);
        if (hit && hit.value !== version[key]) t.fail(`round ${round}: cached ${hit.value} for ${key} at version ${version[key]}`);
      }
    }
    for (const f of inFlight) c.fill(f.ticket, String(f.saw));
    for (const k of keys) {
      const hit = c.lookup<number>('tags', k);
      if (hit && hit.value !== version[k]) t.fail(`round ${round}: cached ${hit.value} for ${k} at version ${version[k]}`);
    }
  }
  t.pass('no stale value kept in 2000 rounds');
});

t.test('bounds: bytes and entries, least recently used first; too many tracked invalidations refuse every fill', async (t) => {
  const c = new ReadCache({ maxEntries: 3, maxBytes: 16 * 1024 });
  for (const k of ['a', 'b', 'c']) c.fill(c.beginFill('tags', k), '1');
  c.lookup('tags', 'a');
  c.fill(c.beginFill('tags', 'd'), '1');
  t.equal(c.size, 3);
  t.equal(c.lookup('tags', 'b'), null, 'the least recently used went first');
  t.ok(c.lookup('tags', 'a'));
  c.fill(c.beginFill('tags', 'big'), JSON.stringify('x'.repeat(600)));
  t.equal(c.lookup('tags', 'big'), null, 'a value above maxBytes / 16 is not cached');
  const d = new ReadCache({ maxBytes: 4096 });
  for (let i = 0; i < 100; i++) d.fill(d.beginFill('tags', `k${i}`), JSON.stringify('y'.repeat(40)));
  t.ok(d.size * 84 <= 4096, `within the byte bound (${d.size} entries)`);
  const e = new ReadCache();
  const ticket = e.beginFill('tags', 'z');
  e.invalidate(Array.from({ length: MAX_TRACKED_INVALIDATIONS + 1 }, (_, i) => ['tags', `n${i}`] as const));
  e.fill(ticket, '1');
  t.equal(e.lookup('tags', 'z'), null, 'refused once the tracking bound was passed');
});
