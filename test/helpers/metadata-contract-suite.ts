/**
 * The metadata contract's test suite (engine/storage/metadata.ts), one function run against
 * every implementation: records, ordered ranges, multi-key reads (`getMany`), a record with the record it
 * names (`readWithNamed`), read-your-writes, atomicity, serializable
 * isolation under concurrent transactions (lost updates, write skew, phantoms), retries and
 * their limit, durability across a reopen, key limits, exclusive locks, and the refusal of values
 * that are not plain JSON-representable data (so no domain can store what one backend could not hold).
 */
import { isSlipwayError } from '../../engine/errors.js';
import type { Test } from 'tap';
import {
  keyspace, key, MAX_KEY_BYTES, prefetch, readMaybe, readWithNamed, TransactionConflictError,
  type Keyspace, type MetadataReader, type MetadataStore, type MetadataTransaction,
} from '../../engine/storage/metadata.js';
import { isPromise } from '../../engine/maybe-sync.js';

/** Opens the implementation under test on fresh (or, with `reopen`, the same) storage. */
export interface ContractTarget {
  open(): Promise<MetadataStore>;
  /** Closes `store` and opens the same storage again. */
  reopen(store: MetadataStore): Promise<MetadataStore>;
  /** True when the store and its transactions offer the synchronous fast path `getNow`. */
  syncReads?: boolean;
}

const things = keyspace<{ n: number; tags?: string[]; nested?: { ok: boolean | null } }>('meta', 'contract-things');
const counters = keyspace<number>('meta', 'contract-counters');
const rows = keyspace<string>('meta', 'contract-rows');
const pointers = keyspace<{ to: string; other?: number }>('meta', 'contract-pointers');

/** A seeded PRNG so a failing interleaving can be replayed (seed printed by the caller). */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** Yields to the event loop `n` times, so concurrent transactions interleave. */
async function jitter(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

export function metadataContractSuite(t: Test, target: ContractTarget): void {
  let store: MetadataStore;
  t.before(async () => { store = await target.open(); });
  t.teardown(async () => { await store.close(); });
  const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Date.now() % 1e9);
  t.comment(`metadata contract suite seed ${seed} (set SLIPWAY_TEST_SEED to replay)`);
  const random = prng(seed);

  t.test('records round-trip as plain data', async (t) => {
    const value = { n: 1.5, tags: ['a', 'ü', '日本'], nested: { ok: null } };
    await store.transact((tx) => tx.put(things, 'one', value));
    t.same(await store.get(things, 'one'), value);
    t.equal(await store.get(things, 'absent'), undefined);
    await store.transact((tx) => tx.put(things, 'one', { n: 2 }));
    t.same(await store.get(things, 'one'), { n: 2 }, 'put replaces');
    await store.transact((tx) => tx.remove(things, 'one'));
    t.equal(await store.get(things, 'one'), undefined, 'removed');
    await store.transact((tx) => tx.remove(things, 'never-there'));
  });

  t.test('ranges: order, prefix, bounds, limit, reverse', async (t) => {
    const keys = [key('app', '0000000001'), key('app', '0000000002'), key('app', '0000000010'), key('apple', 'x'), key('ap', 'y'), 'b'];
    await store.transact((tx) => { for (const [i, k] of keys.entries()) tx.put(rows, k, `v${i}`); });
    const all = await store.range(rows);
    t.same(all.map((e) => e.key), [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))), 'UTF-8 key order');
    const app = await store.range(rows, { prefix: 'app' });
    t.same(app.map((e) => e.value), ['v0', 'v1', 'v2'], 'prefix selects only its own parts (not "apple")');
    t.same((await store.range(rows, { prefix: 'app', reverse: true })).map((e) => e.value), ['v2', 'v1', 'v0'], 'reverse');
    t.same((await store.range(rows, { prefix: 'app', reverse: true, limit: 2 })).map((e) => e.value), ['v2', 'v1'], 'reverse with limit: newest first');
    t.same((await store.range(rows, { prefix: 'app', limit: 2 })).map((e) => e.value), ['v0', 'v1']);
    t.same((await store.range(rows, { start: key('app', '0000000002'), end: 'b' })).map((e) => e.key), [key('app', '0000000002'), key('app', '0000000010'), key('apple', 'x')], 'start inclusive, end exclusive');
    t.same((await store.range(rows, { start: key('app', '0000000002'), end: 'b', reverse: true })).map((e) => e.key), [key('apple', 'x'), key('app', '0000000010'), key('app', '0000000002')], 'reverse keeps the same bounds');
    t.same(await store.range(rows, { prefix: 'nothing' }), []);
    t.same(await store.range(rows, { start: 'b', end: 'a' }), [], 'empty when start >= end');
    t.same(await store.range(rows, { prefix: 'app', limit: 0 }), []);
  });

  t.test('a transaction reads its own writes, in gets and ranges', async (t) => {
    await store.transact((tx) => { tx.put(rows, key('own', '1'), 'a'); tx.put(rows, key('own', '3'), 'c'); });
    const seen = await store.transact(async (tx) => {
      tx.put(rows, key('own', '2'), 'b');
      tx.remove(rows, key('own', '3'));
      return { got: await tx.get(rows, key('own', '2')), gone: await tx.get(rows, key('own', '3')), range: (await tx.range(rows, { prefix: 'own' })).map((e) => e.value), rev: (await tx.range(rows, { prefix: 'own', reverse: true, limit: 1 })).map((e) => e.value) };
    });
    t.same(seen, { got: 'b', gone: undefined, range: ['a', 'b'], rev: ['b'] });
    const limited = await store.transact(async (tx) => {
      tx.remove(rows, key('own', '1'));
      return (await tx.range(rows, { prefix: 'own', limit: 1 })).map((e) => e.value);
    });
    t.same(limited, ['b'], 'a limited range skips what the transaction removed and still fills its limit');
    t.same((await store.range(rows, { prefix: 'own' })).map((e) => e.value), ['b'], 'committed');
  });

  t.test('a body that throws writes nothing', async (t) => {
    await t.rejects(store.transact(async (tx) => {
      tx.put(rows, 'atomic-1', 'x');
      await tx.get(rows, 'atomic-1');
      tx.put(rows, 'atomic-2', 'y');
      throw new Error('refused');
    }), { message: 'refused' });
    t.equal(await store.get(rows, 'atomic-1'), undefined);
    t.equal(await store.get(rows, 'atomic-2'), undefined);
  });

  t.test('the synchronous fast path (getNow, readMaybe) gives what get gives, in and after transactions', async (t) => {
    t.equal(typeof store.getNow, target.syncReads ? 'function' : 'undefined', 'the store offers getNow exactly when it reads synchronously');
    /** Every way to read `k` through `reader`, after checking that each read returns at once or not as promised. */
    const readAll = async <V>(reader: MetadataReader, ks: Keyspace<V>, k: string) => {
      const maybe = readMaybe(reader, ks, k);
      t.equal(isPromise(maybe), !target.syncReads, 'readMaybe answers at once exactly when the reader has getNow');
      return { get: await reader.get(ks, k), maybe: await maybe, now: reader.getNow ? reader.getNow(ks, k) : await reader.get(ks, k) };
    };
    const same = <V>(r: { get: V; maybe: V; now: V }, expected: V, what: string) => t.same(r, { get: expected, maybe: expected, now: expected }, what);
    await store.transact((tx) => { tx.put(things, 'fast-1', { n: 1 }); tx.put(things, 'fast-gone', { n: 0 }); });
    same(await readAll(store, things, 'fast-1'), { n: 1 }, 'committed value');
    same(await readAll(store, things, 'fast-absent'), undefined, 'absent key');

    let outsideDuring: unknown;
    const inside = await store.transact(async (tx) => {
      t.equal(typeof tx.getNow, target.syncReads ? 'function' : 'undefined', 'transactions offer getNow like their store');
      tx.put(things, 'fast-1', { n: 2 });
      tx.remove(things, 'fast-gone');
      tx.put(things, 'fast-new', { n: 3 });
      outsideDuring = (await readAll(store, things, 'fast-1')).now;
      return { changed: await readAll(tx, things, 'fast-1'), removed: await readAll(tx, things, 'fast-gone'), added: await readAll(tx, things, 'fast-new') };
    });
    same(inside.changed, { n: 2 }, 'a transaction reads its own put');
    same(inside.removed, undefined, 'and its own remove');
    same(inside.added, { n: 3 }, 'and a new key');
    t.same(outsideDuring, { n: 1 }, 'outside, the uncommitted write is not seen');
    same(await readAll(store, things, 'fast-1'), { n: 2 }, 'after the commit, the new value');
    same(await readAll(store, things, 'fast-gone'), undefined, 'after the commit, the removed key is gone');

    // A read through the fast path counts for the transaction's validation like get's does.
    await store.transact((tx) => tx.put(counters, 'fast-retry', 0));
    let attempts = 0;
    const result = await store.transact(async (tx) => {
      attempts++;
      const v = (await readMaybe(tx, counters, 'fast-retry')) ?? 0;
      if (attempts === 1) await store.transact((other) => other.put(counters, 'fast-retry', v + 100));
      tx.put(counters, 'fast-retry', v + 1);
      return v;
    });
    t.equal(attempts, 2, 'a concurrent change of what readMaybe read runs the body again');
    t.equal(result, 100);
    t.equal(await store.get(counters, 'fast-retry'), 101);

    const tooLong = 'é'.repeat(MAX_KEY_BYTES / 2 + 1);
    if (store.getNow) t.throws(() => store.getNow!(rows, tooLong), RangeError, 'getNow throws for a bad key');
    await t.rejects(async () => readMaybe(store, rows, tooLong), RangeError, 'readMaybe refuses a bad key');
  });

  t.test('readWithNamed gives what two gets give: first absent, named absent, both present, a field that is no key', async (t) => {
    await store.transact((tx) => {
      tx.put(pointers, 'named-both', { to: 'named-target' });
      tx.put(pointers, 'named-dangling', { to: 'named-nothing' });
      tx.put(pointers, 'named-empty', { to: '' });
      tx.put(things, 'named-target', { n: 7, tags: ['a'] });
    });
    /** What readWithNamed returns for `k`, checked against two gets and the answer's timing. */
    const check = async (k: string, what: string) => {
      const maybe = readWithNamed(store, pointers, k, 'to', things);
      t.equal(isPromise(maybe), !target.syncReads, `${what}: at once exactly when the store reads synchronously`);
      const got = await maybe;
      const first = await store.get(pointers, k);
      t.same(got.value, first, `${what}: the first record is what get returns`);
      if (got.named) t.same(got.named.value, await store.get(things, first!.to), `${what}: the named record is what get returns`);
      t.equal(got.named !== undefined, store.getWithNamed !== undefined && first !== undefined && first.to !== '', `${what}: the named record read exactly when the store reads both together and the first names a key`);
      return got;
    };
    t.same((await check('named-absent', 'first absent')).value, undefined);
    t.same(await check('named-dangling', 'named absent'), store.getWithNamed ? { value: { to: 'named-nothing' }, named: { value: undefined } } : { value: { to: 'named-nothing' } });
    t.same(await check('named-both', 'both present'), store.getWithNamed ? { value: { to: 'named-target' }, named: { value: { n: 7, tags: ['a'] } } } : { value: { to: 'named-target' } });
    await check('named-empty', 'a field that is no key');
    await t.rejects(async () => readWithNamed(store, pointers, '', 'to', things), RangeError, 'a bad key refuses');
  });

  t.test('getMany: several keyspaces in one read, in order, absent and repeated keys, own writes', async (t) => {
    await store.transact((tx) => { tx.put(things, 'many-1', { n: 1 }); tx.put(rows, 'many-2', 'two'); tx.put(counters, 'many-3', 3); });
    const refs = [[things, 'many-1'], [rows, 'many-2'], [counters, 'many-absent'], [counters, 'many-3'], [things, 'many-1']] as const;
    const outside = await store.getMany(refs);
    t.same(outside, [{ n: 1 }, 'two', undefined, 3, { n: 1 }], 'what get gives for each, in the order asked');
    t.not(outside[0], outside[4], 'a repeated key gives two values, not one shared object');
    t.same(await store.getMany([]), [], 'no keys, no values');
    const inside = await store.transact(async (tx) => {
      tx.put(rows, 'many-2', 'changed');
      tx.remove(counters, 'many-3');
      const first = await tx.getMany(refs);
      first[0]!.n = 99;
      return { first, again: await tx.get(things, 'many-1'), twice: await tx.getMany(refs) };
    });
    t.same(inside.first, [{ n: 99 }, 'changed', undefined, undefined, { n: 1 }], 'inside a transaction: its own puts and removes');
    t.same(inside.again, { n: 1 }, 'a later get gives the record read, not the object the caller changed');
    t.same(inside.twice, [{ n: 1 }, 'changed', undefined, undefined, { n: 1 }], 'reading the keys again gives the same answers');
    const ahead = await store.transact(async (tx) => {
      tx.put(rows, 'many-2', 'again');
      await prefetch(tx, refs);
      return [await tx.get(things, 'many-1'), await tx.get(rows, 'many-2'), await tx.get(counters, 'many-absent')];
    });
    t.same(ahead, [{ n: 1 }, 'again', undefined], 'gets after a prefetch: the same answers as without it');
    const tooLong = 'é'.repeat(MAX_KEY_BYTES / 2 + 1);
    await t.rejects(store.getMany([[rows, 'many-2'], [rows, tooLong]]), RangeError, 'a bad key rejects outside');
    await t.rejects(store.transact((tx) => tx.getMany([[rows, ''], [rows, 'many-2']])), RangeError, 'and inside a transaction');
  });

  t.test('getMany reads count for serializability: no lost update, no write skew (random timing)', async (t) => {
    const n = 30;
    await Promise.all(Array.from({ length: n }, async (_, i) => {
      await jitter(Math.floor(random() * 4));
      await store.transact(async (tx) => {
        // Both counters in one getMany, then one of them again by get (PostgreSQL answers it
        // from what the getMany read): the increment uses the get, the sum the getMany.
        const [a, b] = await tx.getMany([[counters, 'gm-a'], [counters, 'gm-b']]);
        await jitter(Math.floor(random() * 3));
        const mine = i % 2 ? 'gm-a' : 'gm-b';
        tx.put(counters, mine, ((await tx.get(counters, mine)) ?? 0) + 1);
        tx.put(counters, 'gm-sum', (a ?? 0) + (b ?? 0) + 1);
      }, { maxAttempts: 1000 });
    }));
    const [a, b, sum] = await store.getMany([[counters, 'gm-a'], [counters, 'gm-b'], [counters, 'gm-sum']]);
    t.same([a, b, sum], [n / 2, n / 2, n], 'every increment counted, and the sum of both agrees');
    for (let round = 0; round < 15; round++) {
      const x = key('gm-oncall', String(round), 'x');
      const y = key('gm-oncall', String(round), 'y');
      await store.transact((tx) => { tx.put(counters, x, 1); tx.put(counters, y, 1); });
      const goOff = (mine: string) => store.transact(async (tx) => {
        const [vx, vy] = await tx.getMany([[counters, x], [counters, y]]);
        await jitter(Math.floor(random() * 3));
        if (vx === 1 && vy === 1) tx.put(counters, mine, 0);
      }, { maxAttempts: 1000 });
      await Promise.all([goOff(x), goOff(y)]);
      const [vx, vy] = await store.getMany([[counters, x], [counters, y]]);
      t.equal((vx ?? 0) + (vy ?? 0), 1, `round ${round}: exactly one still on call`);
    }
  });

  t.test('concurrent read-modify-write loses no update', async (t) => {
    const n = 40;
    await Promise.all(Array.from({ length: n }, async () => {
      await jitter(Math.floor(random() * 4));
      await store.transact(async (tx) => {
        const v = (await tx.get(counters, 'c')) ?? 0;
        await jitter(Math.floor(random() * 3));
        tx.put(counters, 'c', v + 1);
      }, { maxAttempts: 1000 });
    }));
    t.equal(await store.get(counters, 'c'), n);
  });

  t.test('contention: 8 and 32 concurrent updates of one record all commit with the default attempt limit (random timing)', async (t) => {
    // What 32 parallel manifest DELETEs sharing a base layer do to its reference count; before
    // the contention gate the later ones failed with TransactionConflictError (a 503).
    for (const n of [8, 32]) {
      const k = `hot-${n}`;
      const failures: unknown[] = [];
      let maxAttempts = 0;
      await Promise.all(Array.from({ length: n }, async () => {
        await jitter(Math.floor(random() * 4));
        let attempts = 0;
        await store.transact(async (tx) => {
          attempts++;
          const v = (await tx.get(counters, k)) ?? 0;
          await jitter(Math.floor(random() * 3));
          tx.put(counters, k, v + 1);
        }).catch((e: unknown) => failures.push(e));
        maxAttempts = Math.max(maxAttempts, attempts);
      }));
      t.same(failures, [], `${n} concurrent: none refused`);
      t.equal(await store.get(counters, k), n, `${n} concurrent: every update counted`);
      t.comment(`${n} concurrent updates of one record: at most ${maxAttempts} attempts for one transaction`);
    }
  });

  t.test('no write skew: of two on-call flags, one stays on', async (t) => {
    for (let round = 0; round < 20; round++) {
      const a = key('oncall', String(round), 'a');
      const b = key('oncall', String(round), 'b');
      await store.transact((tx) => { tx.put(counters, a, 1); tx.put(counters, b, 1); });
      const goOff = (mine: string, other: string) => store.transact(async (tx) => {
        const others = await tx.get(counters, other);
        await jitter(Math.floor(random() * 3));
        if (others === 1) tx.put(counters, mine, 0);
      }, { maxAttempts: 1000 });
      await Promise.all([goOff(a, b), goOff(b, a)]);
      const on = ((await store.get(counters, a)) ?? 0) + ((await store.get(counters, b)) ?? 0);
      t.equal(on, 1, `round ${round}: exactly one still on call`);
    }
  });

  t.test('no phantoms: a range-checked insert never exceeds its bound', async (t) => {
    const bound = 5;
    await Promise.all(Array.from({ length: 20 }, (_, i) => (async () => {
      await jitter(Math.floor(random() * 4));
      await store.transact(async (tx) => {
        const existing = await tx.range(rows, { prefix: 'seats' });
        await jitter(Math.floor(random() * 3));
        if (existing.length < bound) tx.put(rows, key('seats', String(i).padStart(3, '0')), `taken by ${i}`);
      }, { maxAttempts: 1000 });
    })()));
    t.equal((await store.range(rows, { prefix: 'seats' })).length, bound);
  });

  t.test('a conflicting attempt is run again; the limit ends in TransactionConflictError', async (t) => {
    await store.transact((tx) => tx.put(counters, 'retry', 0));
    let attempts = 0;
    const result = await store.transact(async (tx) => {
      attempts++;
      const v = (await tx.get(counters, 'retry')) ?? 0;
      // Another transaction changes what this attempt read, before it commits (first two only).
      if (attempts <= 2) await store.transact((other) => other.put(counters, 'retry', v + 100));
      tx.put(counters, 'retry', v + 1);
      return v;
    });
    t.equal(attempts, 3, 'ran until an attempt saw no interference');
    t.equal(result, 200, 'the committed attempt read the latest value');
    t.equal(await store.get(counters, 'retry'), 201);

    let runs = 0;
    await t.rejects(store.transact(async (tx) => {
      runs++;
      const v = (await tx.get(counters, 'retry')) ?? 0;
      await store.transact((other) => other.put(counters, 'retry', v + 1));
      tx.put(counters, 'retry', -1);
    }, { maxAttempts: 3 }).catch((e: unknown) => {
      // What the hosts answer: 503 with Retry-After (STORE_UNAVAILABLE), not a 500.
      t.ok(e instanceof TransactionConflictError, 'a TransactionConflictError');
      t.ok(isSlipwayError(e), 'an error the hosts map (isSlipwayError), not a 500');
      t.match(e, { code: 'STORE_UNAVAILABLE', detail: { retryAfter: 1 } }, 'a retryable store error');
      throw e;
    }), { message: /conflicted with concurrent changes 3 times/ });
    t.equal(runs, 3);
    t.not(await store.get(counters, 'retry'), -1, 'no conflicting attempt was written');
  });

  t.test('committed writes survive a reopen', async (t) => {
    await store.transact((tx) => { tx.put(things, 'durable', { n: 7 }); tx.put(rows, 'durable', 'yes'); });
    store = await target.reopen(store);
    t.same(await store.get(things, 'durable'), { n: 7 });
    t.equal(await store.get(rows, 'durable'), 'yes');
  });

  t.test('keys up to MAX_KEY_BYTES work; longer ones are refused before any write', async (t) => {
    const longest = 'k'.repeat(MAX_KEY_BYTES);
    await store.transact((tx) => tx.put(rows, longest, 'edge'));
    t.equal(await store.get(rows, longest), 'edge');
    const tooLong = 'é'.repeat(MAX_KEY_BYTES / 2 + 1);
    await t.rejects(store.transact((tx: MetadataTransaction) => tx.put(rows, tooLong, 'x')), RangeError);
    await t.rejects(store.get(rows, tooLong), RangeError);
    await t.rejects(store.transact((tx: MetadataTransaction) => tx.put(rows, 'nul\u0000key', 'x')), RangeError, 'NUL is not a key character');
  });

  t.test('values that are not JSON-representable are refused before any write', async (t) => {
    const loose = keyspace<unknown>('meta', 'contract-loose');
    const cyclic: Record<string, unknown> = { n: 1 };
    cyclic.self = cyclic;
    const refused: Array<[string, unknown]> = [
      ['a Buffer', Buffer.from('ab')], ['a Uint8Array', new Uint8Array([1, 2])], ['a Date', new Date(0)],
      ['a bigint', 1n], ['a Map', new Map([['a', 1]])], ['a Set', new Set([1])], ['NaN', Number.NaN], ['Infinity', Infinity],
      ['undefined in an array', [1, undefined, 2]], ['a hole in an array', [1, , 2]], ['a function', () => 1], ['a symbol', Symbol('s')],
      ['a class instance', new (class Thing { n = 1 })()], ['a string with NUL', 'a\u0000b'], ['an unpaired surrogate', 'a\ud800b'],
      ['binary nested in a record', { n: 1, nested: { bytes: new Uint8Array([1]) } }], ['a Date in an array', { tags: [new Date(0)] }],
      ['a cyclic value', cyclic],
    ];
    await store.transact((tx) => tx.put(loose, 'kept', { n: 1 }));
    for (const [label, value] of refused) {
      await t.rejects(store.transact((tx) => { tx.put(loose, 'first', 'written first'); tx.put(loose, 'kept', value); }), TypeError, `${label} is refused`);
    }
    t.equal(await store.get(loose, 'first'), undefined, 'nothing of a refused transaction is written');
    t.same(await store.get(loose, 'kept'), { n: 1 }, 'the record is unchanged');
    const accepted = { n: 0, s: 'ü 日本 🚢 \\u0000 escaped', a: [null, true, -0.5, [], {}], o: Object.assign(Object.create(null), { k: 'v' }), absent: undefined };
    await store.transact((tx) => tx.put(loose, 'plain', accepted));
    t.same(await store.get(loose, 'plain'), { n: 0, s: 'ü 日本 🚢 \\u0000 escaped', a: [null, true, -0.5, [], {}], o: { k: 'v' } }, 'plain data is accepted; an undefined property reads back absent');
  });

  t.test('exclusive: one holder per name; others skip, or wait with `wait`', async (t) => {
    let release!: () => void;
    const held = new Promise<void>((r) => { release = r; });
    let entered!: () => void;
    const inside = new Promise<void>((r) => { entered = r; });
    const first = store.exclusive('contract-job', async (signal) => { entered(); await held; return signal.aborted ? 'lost' : 'first'; });
    await inside;
    t.same(await store.exclusive('contract-job', async () => 'second'), { ran: false }, 'a second caller skips while the lock is held');
    t.same(await store.exclusive('contract-other', async () => 'other'), { ran: true, value: 'other' }, 'another name is another lock');
    const waiting = store.exclusive('contract-job', async () => 'waited', { wait: true });
    let waited = false;
    void waiting.then(() => { waited = true; });
    await jitter(20);
    t.notOk(waited, 'a waiting caller waits while the lock is held');
    release();
    t.same(await first, { ran: true, value: 'first' });
    t.same(await waiting, { ran: true, value: 'waited' }, 'and runs once it is released');
    await t.rejects(store.exclusive('contract-job', async () => { throw new Error('job failed'); }), /job failed/, 'what fn throws is thrown');
    t.same(await store.exclusive('contract-job', async () => 'after'), { ran: true, value: 'after' }, 'a failed job released the lock');
    await t.rejects(store.exclusive('Not A Name', async () => 1), RangeError, 'lock names are checked');
  });

  t.test('exclusive: concurrent callers never overlap (random timing, many rounds)', async (t) => {
    let running = 0;
    let most = 0;
    let ran = 0;
    for (let round = 0; round < 10; round++) {
      const outcomes = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
        await jitter(Math.floor(random() * 5));
        return store.exclusive('contract-race', async () => {
          running++;
          most = Math.max(most, running);
          await jitter(1 + Math.floor(random() * 5));
          running--;
          return i;
        }, { wait: random() < 0.5 });
      }));
      ran += outcomes.filter((o) => o.ran).length;
    }
    t.equal(most, 1, 'never two holders at once');
    t.ok(ran >= 10, `at least one caller ran per round (${ran} in all)`);
  });
}
