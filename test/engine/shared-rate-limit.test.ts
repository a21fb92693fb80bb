/**
 * The shared rate-limit pool (engine/identity/shared-rate-limit.ts) as two nodes would use it:
 * two SharedRateLimiter instances over one store, takes arriving at random moments on both.
 * Invariants per round: exactly `pool` takes granted, each told a distinct remainder
 * (pool − 1 … 0), the rest refused with 0; refill and peek read the shared bucket. Runs on the
 * embedded store here; test/cluster/cluster-state.test.ts does the same through two servers on
 * PostgreSQL.
 */
import t from 'tap';
import { ManualClock } from '../../engine/clock.js';
import { openStore } from '../../engine/store.js';
import { SharedRateLimiter, rateLimitPoolFor } from '../../engine/identity/shared-rate-limit.js';
import { RateLimiter } from '../../engine/identity/rate-limit.js';
import { tempDir } from '../helpers/server.js';

t.test('two nodes, one pool: exact remainders under concurrent takes', async (t) => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  const clock = new ManualClock(0);
  const POOL = 25;
  const nodes = [new SharedRateLimiter(store.metadata, clock, POOL, 60), new SharedRateLimiter(store.metadata, clock, POOL, 60)];
  t.ok(rateLimitPoolFor(store.metadata, clock, POOL, 60) instanceof RateLimiter, 'the embedded store itself keeps its pools in memory');
  for (let round = 0; round < 12; round++) {
    const account = `acct-${round % 3}`;
    clock.advance(3600_000); // refilled to the pool
    t.same(await nodes[round % 2]!.peek(account), { ok: true, remaining: POOL }, `round ${round}: full before`);
    const takes = Array.from({ length: 60 }, (_, i) => new Promise<{ ok: boolean; remaining: number }>((resolve, reject) => {
      setTimeout(() => nodes[i % 2]!.take(account).then(resolve, reject), Math.random() * 15);
    }));
    const results = await Promise.all(takes);
    const granted = results.filter((r) => r.ok);
    t.equal(granted.length, POOL, `round ${round}: exactly the pool granted`);
    t.same(granted.map((r) => r.remaining).sort((a, b) => a - b), Array.from({ length: POOL }, (_, i) => i), 'distinct, exact remainders');
    t.ok(results.filter((r) => !r.ok).every((r) => r.remaining === 0), 'the rest refused with 0 left');
    t.same(await nodes[(round + 1) % 2]!.peek(account), { ok: true, remaining: 0 }, 'the other node sees the empty bucket');
    clock.advance(1000);
    t.same(await nodes[0]!.take(account), { ok: true, remaining: 0 }, 'one token back after a second at 60 a minute, taken');
  }
});
