/**
 * What a cluster-wide rate-limit pool costs per request (bench/README.md "Rate-limit pools"):
 * on the embedded LMDB store and on a real PostgreSQL (test/helpers/postgres.ts), for
 * - `memory`: the in-process RateLimiter (the embedded default);
 * - `naive`: one metadata transaction (get + put of the bucket) per request;
 * - `shared`: SharedRateLimiter (group commit per account: one transaction per in-flight round).
 * Each at concurrency 1 (µs per request = latency added) and 64 on one account (requests/s and
 * transactions per request). Prints JSON lines. Run: `npx tsc -p . && node dist/bench/rate-limit-pools.js`.
 */
import { performance } from 'node:perf_hooks';
import { systemClock } from '../engine/clock.js';
import { openStore } from '../engine/store.js';
import type { MetadataStore } from '../engine/storage/metadata.js';
import { PostgresMetadataStore } from '../engine/storage/postgres-metadata.js';
import { RateLimiter, refilled, type RateLimitPool } from '../engine/identity/rate-limit.js';
import { SharedRateLimiter } from '../engine/identity/shared-rate-limit.js';
import { keyspace } from '../engine/storage/metadata.js';
import type { Bucket } from '../engine/identity/records.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { tempDir } from '../test/helpers/server.js';

const POOL = 1e12;
const PER_MINUTE = 75;
const SEQUENTIAL = Number(process.env.BENCH_RL_SEQUENTIAL ?? 2000);
const CONCURRENT_TOTAL = Number(process.env.BENCH_RL_CONCURRENT ?? 20000);
const CONCURRENCY = 64;
/** A keyspace of the bench's own, so the naive variant does not touch the real one. */
const naiveBuckets = keyspace<Bucket>('meta', 'bench-rate-limits');

/** Counts the store's transactions. */
function counting(store: MetadataStore): { store: MetadataStore; transactions: () => number } {
  let n = 0;
  const transact = store.transact.bind(store);
  const wrapped = Object.create(store) as MetadataStore;
  (wrapped as { transact: MetadataStore['transact'] }).transact = (body, opts) => { n++; return transact(body, opts); };
  return { store: wrapped, transactions: () => n };
}

/** One transaction per take: the design not chosen, for comparison. */
function naive(store: MetadataStore): RateLimitPool {
  const perMs = PER_MINUTE / 60_000;
  return {
    take: (id) => store.transact(async (tx) => {
      const b = refilled(await tx.get(naiveBuckets, id), systemClock.now(), POOL, perMs);
      tx.put(naiveBuckets, id, { tokens: b.tokens - 1, at: b.at });
      return { ok: true, remaining: Math.floor(b.tokens - 1) };
    }),
    peek: () => ({ ok: true, remaining: 0 }),
  };
}

async function measure(backend: string, variant: string, pool: RateLimitPool, transactions: () => number): Promise<void> {
  const account = `acct-${variant}-${Math.random().toString(36).slice(2)}`;
  for (let i = 0; i < 50; i++) await pool.take(account);
  let t0 = performance.now();
  for (let i = 0; i < SEQUENTIAL; i++) await pool.take(account);
  const usPerRequest = ((performance.now() - t0) * 1000) / SEQUENTIAL;
  const tx0 = transactions();
  let issued = 0;
  let failed = 0;
  t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (issued < CONCURRENT_TOTAL) {
      issued++;
      // The naive variant conflicts on one hot bucket: a take that gives up is a failed request.
      await Promise.resolve(pool.take(account)).catch(() => { failed++; });
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const txPerRequest = (transactions() - tx0) / CONCURRENT_TOTAL;
  console.log(JSON.stringify({ bench: 'rate-limit-pool', backend, variant, sequential_us_per_request: Number(usPerRequest.toFixed(1)), concurrent64_requests_per_s: Math.round(CONCURRENT_TOTAL / seconds), concurrent64_transactions_per_request: Number(txPerRequest.toFixed(3)), concurrent64_failed_requests: failed }));
}

async function run(backend: string, open: () => Promise<MetadataStore>): Promise<void> {
  const raw = await open();
  const { store, transactions } = counting(raw);
  try {
    await measure(backend, 'memory', new RateLimiter(systemClock, POOL, PER_MINUTE), () => 0);
    await measure(backend, 'naive', naive(store), transactions);
    await measure(backend, 'shared', new SharedRateLimiter(store, systemClock, POOL, PER_MINUTE), transactions);
  } finally {
    await raw.close();
  }
}

const tmp = tempDir();
try {
  await run('lmdb', async () => (await openStore(tmp.dir)).metadata);
} finally {
  tmp.cleanup();
}
const pg = await startPostgres({ durable: process.env.BENCH_RL_DURABLE === '1' });
try {
  await run(`postgres${process.env.BENCH_RL_DURABLE === '1' ? '-durable' : ''}`, () => PostgresMetadataStore.open({ connectionString: pg.connectionString }));
} finally {
  await pg.stop();
}
