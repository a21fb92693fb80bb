/**
 * The fair queue in front of the worker pool (workers/fair-queue.ts), under random load: tenants
 * submit tasks of random duration at random times (seeded; the seed is printed). Invariants at
 * every start and end: never more than `slots` running, never more than `share` for one tenant,
 * no slot idle while a tenant under its share waits, every task runs once with its own result,
 * and a tenant arriving idle (nothing running or queued) waits only for tenants that were
 * themselves idle-and-waiting when it arrived, each at most once (least recently served first).
 */
import t from 'tap';
import { randomInt } from 'node:crypto';
import { FairQueue } from '../../workers/fair-queue.js';

/** Mulberry32: a small seeded generator (test randomness must be replayable). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const seed = Number(process.env.SEED ?? randomInt(2 ** 31));
t.comment(`seed ${seed} (rerun with SEED=${seed})`);
const random = rng(seed);

for (const [slots, share] of [[2, 1], [3, 2], [4, 4]] as const) {
  t.test(`${slots} slots, share ${share}`, async (t) => {
    const q = new FairQueue(slots, share);
    const tenants = ['a', 'b', 'c', 'd', 'e'];
    const running = new Map<string, number>();
    const queued = new Map<string, number>();
    let total = 0;
    const violations: string[] = [];
    /** Starts per tenant so far (for the round-robin check). */
    const starts = new Map<string, number>();
    /** Whether a task of the tenant started since it was last idle (nothing running or queued). */
    const startedSinceIdle = new Map<string, boolean>();
    const tasks: Promise<void>[] = [];
    let id = 0;
    const submit = (tenant: string) => {
      const n = ++id;
      const fresh = (running.get(tenant) ?? 0) === 0 && (queued.get(tenant) ?? 0) === 0;
      const othersAtSubmit = new Map(tenants.map((x) => [x, starts.get(x) ?? 0]));
      // Tenants that may go first: those waiting without a start since they were last idle.
      const freshWaiting = new Set(tenants.filter((x) => x !== tenant && (queued.get(x) ?? 0) > 0 && !startedSinceIdle.get(x)));
      queued.set(tenant, (queued.get(tenant) ?? 0) + 1);
      const ms = Math.floor(random() * 8);
      tasks.push(q.run(tenant, async () => {
        queued.set(tenant, queued.get(tenant)! - 1);
        running.set(tenant, (running.get(tenant) ?? 0) + 1);
        starts.set(tenant, (starts.get(tenant) ?? 0) + 1);
        startedSinceIdle.set(tenant, true);
        total++;
        if (total > slots) violations.push(`${total} running > ${slots} slots`);
        if (running.get(tenant)! > share) violations.push(`${tenant} runs ${running.get(tenant)} > share ${share}`);
        if (fresh) {
          for (const x of tenants) {
            const before = (starts.get(x) ?? 0) - othersAtSubmit.get(x)!;
            if (x !== tenant && before > (freshWaiting.has(x) ? 1 : 0)) violations.push(`${x} started ${before} time(s) before fresh ${tenant}`);
          }
        }
        await new Promise((r) => setTimeout(r, ms));
        running.set(tenant, running.get(tenant)! - 1);
        total--;
        if (running.get(tenant) === 0 && queued.get(tenant) === 0) startedSinceIdle.set(tenant, false);
        return n;
      }).then((r) => {
        if (r !== n) violations.push(`task ${n} got ${r}`);
        // Work-conserving: right after an end, a waiting tenant under its share must have been started.
        queueMicrotask(() => {
          const idle = slots - q.running;
          const eligible = tenants.some((x) => (queued.get(x) ?? 0) > 0 && (running.get(x) ?? 0) < share);
          if (idle > 0 && eligible && q.waiting > 0) violations.push(`a slot idle while an eligible tenant waits`);
        });
      }));
    };
    for (let round = 0; round < 60; round++) {
      // A hog submits bursts; the others now and then.
      for (let i = 0; i < 1 + Math.floor(random() * 6); i++) submit('a');
      if (random() < 0.6) submit(tenants[1 + Math.floor(random() * 4)]!);
      await new Promise((r) => setTimeout(r, Math.floor(random() * 4)));
    }
    await Promise.all(tasks);
    t.same(violations, [], `invariants held over ${id} tasks`);
    t.equal(q.waiting, 0);
    t.equal(q.running, 0);
    await t.rejects(q.run('x', async () => { throw new Error('task failed'); }), /task failed/, 'a failing task rejects its caller');
    t.throws(() => new FairQueue(2, 3), /share/);
  });
}
