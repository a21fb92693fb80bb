/**
 * The read cache's data structure (engine/storage/read-cache.ts): hits parse afresh (no shared
 * mutable values), absence is cached, a fill that raced an invalidation of its key or of
 * everything is refused (many rounds, random interleavings, checked against a model), and the
 * byte and entry bounds hold. A read that learns its key from its answer (`beginUnkeyedFill`,
 * `fillKeyed`) obeys the same rule for whichever key it names, also when no other fill is in
 * flight (random interleavings against the same model). Recency is exact LRU under the byte
 * and entry bounds (random operations against a model of the list). A cache filled far past its
 * default bounds with a pushing registry's mix of records holds at most 24 MB of V8 heap.
 */
import t from 'tap';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
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

t.test('an unkeyed fill: refused for a key (or everything) invalidated after it began, even alone in flight; kept otherwise', async (t) => {
  const c = new ReadCache();
  const alone = c.beginUnkeyedFill();
  c.invalidate([['manifests', 'm1']]);
  c.fillKeyed(alone, 'manifests', 'm1', '"old"');
  t.equal(c.lookup('manifests', 'm1'), null, 'the key its answer named was invalidated meanwhile: refused');
  t.equal(c.stats.refused, 1);
  const other = c.beginUnkeyedFill();
  c.invalidate([['manifests', 'm1']]);
  c.fillKeyed(other, 'manifests', 'm2', '"fresh"');
  t.same(c.lookup('manifests', 'm2'), { value: 'fresh' }, 'another key invalidated meanwhile: kept');
  const before = c.beginUnkeyedFill();
  c.clear();
  c.fillKeyed(before, 'manifests', 'm3', '"old"');
  t.equal(c.lookup('manifests', 'm3'), null, 'everything invalidated meanwhile: refused');
  c.invalidate([['manifests', 'm4']]);
  const after = c.beginUnkeyedFill();
  c.fillKeyed(after, 'manifests', 'm4', '"new"');
  t.same(c.lookup('manifests', 'm4'), { value: 'new' }, 'invalidated before it began: kept');
  c.beginUnkeyedFill();
  c.abandon();
  const keyed = c.beginFill('manifests', 'm5');
  c.invalidate([['manifests', 'm5']]);
  c.fill(keyed, '"old"');
  t.equal(c.lookup('manifests', 'm5'), null, 'an abandoned unkeyed ticket leaves the tracking of other fills intact');
});

t.test('keyed and unkeyed fills against invalidations: no stale value kept (random interleavings)', async (t) => {
  for (let round = 0; round < 2000; round++) {
    const c = new ReadCache();
    const keys = ['a', 'b', 'c'];
    const version: Record<string, number> = { a: 0, b: 0, c: 0 };
    /** A read in flight: keyed (its key and the version it saw), or unkeyed (every version it saw: its answer names a key later). */
    const inFlight: Array<{ keyed: ReturnType<ReadCache['beginFill']>; key: string; saw: number } | { unkeyed: ReturnType<ReadCache['beginUnkeyedFill']>; saw: Record<string, number> }> = [];
    const check = (k: string) => {
      const hit = c.lookup<number>('tags', k);
      if (hit && hit.value !== version[k]) t.fail(`round ${round}: cached ${hit.value} for ${k} at version ${version[k]}`);
    };
    const end = (f: (typeof inFlight)[number]) => {
      if ('keyed' in f) c.fill(f.keyed, String(f.saw));
      else if (Math.random() < 0.1) c.abandon();
      else {
        const k = keys[Math.floor(Math.random() * keys.length)]!;
        c.fillKeyed(f.unkeyed, 'tags', k, String(f.saw[k]));
      }
    };
    for (let step = 0; step < 30; step++) {
      const r = Math.random();
      const key = keys[Math.floor(Math.random() * keys.length)]!;
      if (r < 0.15) inFlight.push({ keyed: c.beginFill('tags', key), key, saw: version[key]! });
      else if (r < 0.35) inFlight.push({ unkeyed: c.beginUnkeyedFill(), saw: { ...version } });
      else if (r < 0.6 && inFlight.length > 0) end(inFlight.splice(Math.floor(Math.random() * inFlight.length), 1)[0]!);
      else if (r < 0.85) {
        version[key]!++;
        c.invalidate([['tags', key]]);
      } else if (r < 0.9) {
        for (const k of keys) version[k]!++;
        c.clear();
      } else check(key);
    }
    for (const f of inFlight) end(f);
    for (const k of keys) check(k);
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

t.test('exact LRU within both bounds: random hits, fills, replacements, invalidations and clears against a model', async (t) => {
  for (let round = 0; round < 300; round++) {
    const maxEntries = 1 + Math.floor(Math.random() * 12);
    const maxBytes = 16 * (20 + Math.floor(Math.random() * 200));
    const c = new ReadCache({ maxEntries, maxBytes });
    /** The model: ids least recent first, each with its text. */
    let model: Array<[string, string | null]> = [];
    const bytes = () => model.reduce((n, [, text]) => n + (text === null ? 0 : text.length * 2), 0);
    const keys = Array.from({ length: 16 }, (_, i) => `k${i}`);
    for (let step = 0; step < 200; step++) {
      const r = Math.random();
      const k = keys[Math.floor(Math.random() * keys.length)]!;
      const at = model.findIndex(([id]) => id === k);
      if (r < 0.4) {
        const hit = c.lookup<string>('tags', k);
        if ((hit !== null) !== (at >= 0)) t.fail(`round ${round} step ${step}: ${k} ${hit ? 'held' : 'missing'} against the model`);
        if (at >= 0) {
          const [entry] = model.splice(at, 1);
          model.push(entry!);
          const expected = entry![1] === null ? undefined : JSON.parse(entry![1]);
          if (hit && hit.value !== expected) t.fail(`round ${round} step ${step}: ${k} held ${hit.value} against ${expected}`);
        }
      } else if (r < 0.85) {
        const text = Math.random() < 0.2 ? null : JSON.stringify('v'.repeat(Math.floor(Math.random() * maxBytes / 20)));
        c.fill(c.beginFill('tags', k), text);
        if (text === null || text.length * 2 <= maxBytes / 16) {
          if (at >= 0) model.splice(at, 1);
          model.push([k, text]);
          while (model.length > maxEntries || bytes() > maxBytes) model.shift();
        }
      } else if (r < 0.97) {
        c.invalidate([['tags', k]]);
        if (at >= 0) model.splice(at, 1);
      } else {
        c.clear();
        model = [];
      }
      if (c.size !== model.length || c.bytes !== bytes()) t.fail(`round ${round} step ${step}: size ${c.size} bytes ${c.bytes}, model ${model.length} ${bytes()}`);
      if (c.size > maxEntries || c.bytes > maxBytes) t.fail(`round ${round} step ${step}: over a bound`);
    }
    for (const [id] of [...model]) if (!c.lookup('tags', id)) t.fail(`round ${round}: ${id} dropped early`);
  }
  t.pass('the cache matched the model in 300 rounds of 200 operations');
});

t.test('the default bounds: a cache filled past them holds at most 24 MB of heap', async (t) => {
  // A pushing registry's mix: a quarter each manifest records (~900 characters), tags, blob
  // records and cached absences, under repository-and-digest keys. At the earlier defaults
  // (64 MiB, 100,000 entries) this one held 81 MB; at 32 MiB / 50,000 entries 40.5 MB.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const digest = (i: number) => `sha256:${i.toString(16).padStart(64, '0')}`;
  const manifest = (i: number) => JSON.stringify({ mediaType: 'application/vnd.docker.distribution.manifest.v2+json', bytes: `${i}`.padEnd(700, 'x'), configDigest: digest(i + 1), size: 1234 + i, createdAt: 1795840130815 + i });
  gc();
  const before = process.memoryUsage().heapUsed;
  const c = new ReadCache();
  for (let i = 0; i < 150_000; i++) {
    const kind = i % 4;
    const ks = ['manifests', 'tags', 'blobs', 'repository-blobs'][kind]!;
    const text = kind === 0 ? manifest(i) : kind === 1 ? JSON.stringify({ digest: digest(i), updatedAt: 1795840130815 + i }) : kind === 2 ? JSON.stringify({ size: i, state: 'committed', createdAt: 1795840130815 + i }) : null;
    c.fill(c.beginFill(ks, `bench/r${i % 100}\u0000${digest(i)}`), text);
  }
  t.ok(c.size <= c.maxEntries && c.bytes <= c.maxBytes, `within its bounds: ${c.size} entries, ${c.bytes} bytes`);
  gc();
  const held = process.memoryUsage().heapUsed - before;
  t.ok(held <= 24e6, `the full cache holds ${(held / 1e6).toFixed(1)} MB of heap`);
  t.ok(c.lookup('manifests', `bench/r96\u0000${digest(149_996)}`), 'the most recent entries are still there');
});
