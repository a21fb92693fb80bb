/**
 * The read coalescer of the PostgreSQL store (engine/storage/statement-batch.ts), on its own:
 * a read that finds a free statement slot is sent at once and alone; reads that arrive while the
 * slots are busy share the next statement; every read gets its own answer; a failed statement
 * fails just the reads it carried. And a race with random arrival, random statement times and
 * random failures, checking the invariants on every statement.
 */
import t from 'tap';
import { StatementBatcher } from '../../engine/storage/statement-batch.js';
import { prng } from '../helpers/metadata-contract-suite.js';

/** A promise with its resolve and reject outside. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}

t.test('a quiet batcher sends each read alone, at once', async (t) => {
  const sent: number[][] = [];
  const b = new StatementBatcher<number, number>(async (items) => { sent.push(items); return items.map((i) => i * 10); });
  const p = b.submit(1);
  t.same(sent, [[1]], 'sent in the same turn as the submit');
  t.equal(await p, 10);
  t.equal(await b.submit(2), 20);
  t.same(sent, [[1], [2]], 'one statement each');
  t.equal(b.inFlight, 0);
});

t.test('reads arriving while the slots are busy share the next statement, up to maxBatch', async (t) => {
  const statements: Array<{ items: string[]; done: ReturnType<typeof deferred<string[]>> }> = [];
  const b = new StatementBatcher<string, string>((items) => {
    const done = deferred<string[]>();
    statements.push({ items, done });
    return done.promise;
  }, { maxInFlight: 2, maxBatch: 3 });
  const answers = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((k) => b.submit(k));
  t.same(statements.map((s) => s.items), [['a'], ['b']], 'two slots: the first two alone');
  const answer = (i: number) => statements[i]!.done.resolve(statements[i]!.items.map((k) => k.toUpperCase()));
  answer(0);
  await answers[0];
  t.same(statements.map((s) => s.items), [['a'], ['b'], ['c', 'd', 'e']], 'a freed slot takes the waiting reads, at most 3');
  answer(1);
  await answers[1];
  t.same(statements[3]!.items, ['f', 'g'], 'the next slot the rest');
  answer(2);
  answer(3);
  t.same(await Promise.all(answers), ['A', 'B', 'C', 'D', 'E', 'F', 'G'], 'every read its own answer');
});

t.test('a failed statement fails the reads it carried, and no other', async (t) => {
  let n = 0;
  const b = new StatementBatcher<number, number>(async (items) => {
    await new Promise((r) => setImmediate(r));
    if (n++ === 1) throw new Error('connection lost');
    return items;
  }, { maxInFlight: 1 });
  const first = b.submit(1);
  const carried = [b.submit(2), b.submit(3)];
  const later = first.then(() => b.submit(4));
  t.equal(await first, 1);
  for (const p of carried) await t.rejects(p, /connection lost/, 'a read of the failed statement gets its error');
  t.equal(await later, 4, 'a read after it is answered');
  const short = new StatementBatcher<number, number>(async (items) => items.slice(1));
  await t.rejects(short.submit(1), /answered 0 of 1/, 'a statement that answers too few fails its reads');
});

t.test('race: random arrivals, statement times and failures (invariants on every statement)', async (t) => {
  const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Date.now() % 1e9);
  t.comment(`seed ${seed} (set SLIPWAY_TEST_SEED to replay)`);
  const random = prng(seed);
  const maxInFlight = 1 + Math.floor(random() * 3);
  const maxBatch = 1 + Math.floor(random() * 8);
  const problems: string[] = [];
  let running = 0;
  let statements = 0;
  /** Per read: the statements that had ended when it was submitted. */
  const submittedAt = new Map<number, number>();
  /** Per read: the reads waiting when it was submitted. */
  const aheadOf = new Map<number, number>();
  let ended = 0;
  let lastSent = -1;
  const b = new StatementBatcher<number, number>(async (items) => {
    statements++;
    running++;
    if (running > maxInFlight) problems.push(`${running} statements at once, bound ${maxInFlight}`);
    if (items.length > maxBatch) problems.push(`a statement of ${items.length} reads, bound ${maxBatch}`);
    for (const i of items) {
      // Sent in arrival order, after at most ceil((p + 1) / maxBatch) statements ended (p: reads waiting before it).
      if (i <= lastSent) problems.push(`read ${i} sent after read ${lastSent}`);
      lastSent = i;
      const bound = Math.ceil((aheadOf.get(i)! + 1) / maxBatch);
      if (ended - submittedAt.get(i)! > bound) problems.push(`read ${i} waited for ${ended - submittedAt.get(i)!} statements, bound ${bound}`);
    }
    try {
      await new Promise((r) => setTimeout(r, random() * 3));
      if (random() < 0.1) throw new Error(`failed ${items.join(',')}`);
      return items.map((i) => i * 2);
    } finally {
      running--;
      ended++;
    }
  }, { maxInFlight, maxBatch });
  const reads: Array<Promise<void>> = [];
  let answered = 0, failed = 0;
  for (let i = 0; i < 600; i++) {
    if (random() < 0.3) await new Promise((r) => setTimeout(r, random() * 2));
    submittedAt.set(i, ended);
    aheadOf.set(i, b.waiting);
    reads.push(b.submit(i).then(
      (v) => { answered++; if (v !== i * 2) problems.push(`read ${i} answered ${v}`); },
      (e: Error) => { failed++; if (!e.message.split(/[ ,]/).includes(String(i))) problems.push(`read ${i} failed with another statement's error: ${e.message}`); },
    ));
  }
  await Promise.all(reads);
  t.same(problems, [], `invariants held over ${statements} statements (maxInFlight ${maxInFlight}, maxBatch ${maxBatch})`);
  t.equal(answered + failed, 600, 'every read ended');
  t.ok(statements < 600 || maxBatch === 1, 'reads shared statements');
  t.equal(b.inFlight, 0, 'no statement left running');
});
