/**
 * The delivery worker batches its metadata commits (docs/webhooks.md "Engine" and "Performance")
 * without giving up its bounds: a burst of events on several apps, fanned out, claimed and
 * recorded by one worker on the embedded store, against a node:http receiver on loopback that
 * answers each request after a random delay (seeded; SLIPWAY_TEST_SEED replays one). Checked:
 * - every event is delivered exactly once (no failure, so no retry), with its own event and
 *   delivery ids, and every delivery is recorded `succeeded`;
 * - at most `perGroup` (8) attempts at once per app and 32 in all, as the receiver saw them;
 * - the whole burst takes fewer than 2 committed transactions per delivery (one commit each for
 *   fan-out, claim and outcome would be 3): the transactions are counted on the real store;
 * - events recorded one at a time, a few ms apart (releases made one after the other), share
 *   passes: passes start at least the worker's gap apart, make at most one transaction each, and
 *   fewer in all than the same events take with passes back to back (gap 0);
 * - stop() right after an attempt, while the next pass waits for the gap, still records the
 *   outcome and returns (the gap's timer it clears no longer strands the outcome).
 */
import t from 'tap';
import type * as Tap from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { openStore } from '../../engine/store.js';
import { systemClock } from '../../engine/clock.js';
import { DeliveryWorker } from '../../engine/webhooks/worker.js';
import { recordEvent } from '../../engine/webhooks/outbox.js';
import { deliveriesOf } from '../../engine/webhooks/deliveries.js';
import { parseAllowedHosts } from '../../engine/webhooks/destination.js';
import type { SubscriberSource } from '../../engine/webhooks/sources.js';
import { tempDir } from '../helpers/server.js';
import { waitFor } from '../helpers/harness.js';
import { prng } from '../helpers/h1-generator.js';

const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`# seed ${seed} (SLIPWAY_TEST_SEED=${seed} replays it)`);
const random = prng(seed);

const APPS = 6;
const EVENTS = 120;

/** Starts `handler` on a loopback port for the test's life. @returns its base URL */
async function receiver(t: Tap.Test, handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A source with one `sync` subscriber per app, whose attempts `request` builds. */
function testSource(request: SubscriberSource['request']): SubscriberSource {
  return { kind: 'test-hook', subscribers: (_reader, event) => [{ id: 'hook', level: 'sync', group: event.appId! }], request };
}

t.test('a burst is delivered once each, within the concurrency bounds, in fewer than 2 commits per delivery', async (t) => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });

  const open = new Map<string, number>();
  let total = 0;
  let maxTotal = 0;
  const maxPerApp = new Map<string, number>();
  const received: Array<{ app: string; event: string; delivery: string }> = [];
  const base = await receiver(t, (req, res) => {
    const app = req.url!.slice(1);
    open.set(app, (open.get(app) ?? 0) + 1);
    maxPerApp.set(app, Math.max(maxPerApp.get(app) ?? 0, open.get(app)!));
    maxTotal = Math.max(maxTotal, ++total);
    received.push({ app, event: String(req.headers['x-event-id']), delivery: String(req.headers['x-delivery-id']) });
    req.resume();
    setTimeout(() => {
      open.set(app, open.get(app)! - 1);
      total--;
      res.end('ok');
    }, Math.floor(random() * 20));
  });

  const source = testSource(async (event, delivery) => ({ url: `${base}/${delivery.group}`, headers: { 'x-event-id': event.id, 'x-delivery-id': delivery.id }, body: event.id }));
  const apps = Array.from({ length: APPS }, (_, i) => `app${i}`);
  const eventIds = Array.from({ length: EVENTS }, () => randomUUID());
  // The burst: committed in a few transactions, as a busy API would.
  for (let i = 0; i < EVENTS; i += 30) {
    await store.metadata.transact((tx) => {
      for (let j = i; j < Math.min(EVENTS, i + 30); j++) {
        recordEvent(tx, { id: eventIds[j]!, entity: 'api:release', action: 'create', appId: apps[j % APPS]!, appName: apps[j % APPS]!, actorId: null, data: { n: j }, previousData: null, createdAt: Date.now() });
      }
    });
  }

  // Count the worker's transactions on the real store.
  let transactions = 0;
  const transact = store.metadata.transact.bind(store.metadata);
  store.metadata.transact = ((body: never, options?: never) => { transactions++; return transact(body, options); }) as typeof store.metadata.transact;
  const worker = new DeliveryWorker(store.metadata, systemClock, { node: 'test', sources: [source], allowed: parseAllowedHosts('127.0.0.1'), pollMs: 50 });
  const errors: unknown[] = [];
  worker.options.onError = (e) => errors.push(e);
  worker.start();
  t.teardown(() => worker.stop());
  await waitFor('every event at the receiver', () => received.length >= EVENTS || undefined, { timeoutMs: 60_000 });
  const recorded = await waitFor('every delivery recorded as succeeded', async () => {
    const all = (await Promise.all(apps.map((a) => deliveriesOf(store.metadata, a)))).flat();
    return all.length === EVENTS && all.every((d) => d.status === 'succeeded') ? all : undefined;
  });
  await worker.stop();

  t.same(errors, [], 'no pass failed');
  t.equal(received.length, EVENTS, 'each event delivered once');
  t.same(new Set(received.map((r) => r.event)), new Set(eventIds), 'every event, by its id');
  t.same(new Set(received.map((r) => r.delivery)), new Set(recorded.map((d) => d.id)), 'with the delivery ids recorded');
  t.ok(recorded.every((d) => d.numAttempts === 1), 'one attempt each');
  for (const app of apps) t.ok((maxPerApp.get(app) ?? 0) <= worker.perGroup, `${app}: at most ${worker.perGroup} attempts at once (saw ${maxPerApp.get(app)})`);
  t.ok(maxTotal <= 32, `at most 32 attempts at once (saw ${maxTotal})`);
  t.ok(transactions < 2 * EVENTS, `${transactions} transactions for ${EVENTS} deliveries (one each for fan-out, claim and outcome: ${3 * EVENTS})`);
});

/** What one worker did for events recorded one at a time, each in its own commit, 1–4 ms apart. */
interface OneAtATime { transactions: number; starts: number[]; gapped: number; received: string[]; ids: string[]; errors: unknown[]; gapMs: number }

async function oneAtATime(t: Tap.Test, gapMs: number | undefined, count: number): Promise<OneAtATime> {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  const received: string[] = [];
  const base = await receiver(t, (req, res) => {
    received.push(String(req.headers['x-event-id']));
    req.resume();
    res.end('ok');
  });
  const source = testSource(async (event) => ({ url: `${base}/`, headers: { 'x-event-id': event.id }, body: event.id }));
  const worker = new DeliveryWorker(store.metadata, systemClock, { node: 'test', sources: [source], allowed: parseAllowedHosts('127.0.0.1'), pollMs: 50, gapMs });
  let transactions = 0;
  let ours = false;
  const transact = store.metadata.transact.bind(store.metadata);
  store.metadata.transact = ((body: never, options?: never) => { if (!ours) transactions++; return transact(body, options); }) as typeof store.metadata.transact;
  const starts: number[] = [];
  const pass = worker.pass.bind(worker);
  worker.pass = () => { starts.push(performance.now()); return pass(); };
  const errors: unknown[] = [];
  worker.options.onError = (e) => errors.push(e);
  worker.start();
  t.teardown(() => worker.stop());
  const ids = Array.from({ length: count }, () => randomUUID());
  for (let i = 0; i < count; i++) {
    ours = true;
    const p = store.metadata.transact((tx) => recordEvent(tx, { id: ids[i]!, entity: 'api:release', action: 'create', appId: `app${i % 6}`, appName: `app${i % 6}`, actorId: null, data: { n: i }, previousData: null, createdAt: Date.now() }));
    ours = false;
    await p;
    await new Promise((r) => setTimeout(r, 1 + Math.floor(random() * 4)));
  }
  await waitFor('every event at the receiver', () => received.length >= count || undefined, { timeoutMs: 30_000 });
  // The passes stop() makes record outcomes at once, without the gap: the gap is checked before.
  const gapped = starts.length;
  await worker.stop();
  return { transactions, starts, gapped, received, ids, errors, gapMs: worker.gapMs };
}

t.test('events one at a time (releases made one after the other) share passes, at least the gap apart', async (t) => {
  const COUNT = 60;
  const gapless = await oneAtATime(t, 0, COUNT);
  const gapped = await oneAtATime(t, undefined, COUNT);
  for (const run of [gapless, gapped]) {
    t.same(run.errors, [], `gap ${run.gapMs} ms: no pass failed`);
    t.same(new Set(run.received), new Set(run.ids), `gap ${run.gapMs} ms: every event delivered`);
  }
  const before = gapped.starts.slice(0, gapped.gapped);
  const gaps = before.slice(1).map((s, i) => s - before[i]!);
  const closest = Math.min(...gaps);
  // Timers fire up to a millisecond early by performance.now()'s reading of them.
  t.ok(closest >= gapped.gapMs - 1, `passes started at least ${gapped.gapMs} ms apart (closest ${closest.toFixed(1)} ms, ${gapped.starts.length} passes)`);
  // One transaction a pass (fan-out, outcomes and claims together), and the pruning's, once.
  t.ok(gapped.transactions <= gapped.starts.length + 1, `at most one transaction a pass (${gapped.transactions} in ${gapped.starts.length} passes)`);
  t.ok(gapped.transactions < gapless.transactions, `${gapped.transactions} worker transactions for ${COUNT} events with the gap, ${gapless.transactions} with passes back to back`);
});

t.test('stop() right after an attempt, while the next pass waits for the gap, records its outcome and returns', async (t) => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  let arrived = 0;
  const base = await receiver(t, (req, res) => {
    arrived++;
    req.resume();
    res.end('ok');
  });
  const source = testSource(async (event) => ({ url: `${base}/`, headers: {}, body: event.id }));
  // A gap far longer than the test: the pass that records the outcome only runs because of stop().
  const worker = new DeliveryWorker(store.metadata, systemClock, { node: 'test', sources: [source], allowed: parseAllowedHosts('127.0.0.1'), pollMs: 60_000, gapMs: 60_000 });
  await store.metadata.transact((tx) => recordEvent(tx, { id: randomUUID(), entity: 'api:release', action: 'create', appId: 'app0', appName: 'app0', actorId: null, data: {}, previousData: null, createdAt: Date.now() }));
  worker.start();
  await waitFor('the first attempt at the receiver', () => arrived > 0 || undefined, { timeoutMs: 20_000 });
  // Fan-out and claim took the first pass; the answer comes back within the gap that follows it.
  const stopped = await Promise.race([worker.stop().then(() => 'stopped'), new Promise<string>((r) => setTimeout(() => r('still waiting'), 10_000).unref())]);
  t.equal(stopped, 'stopped', 'stop() returned');
  const [d] = await deliveriesOf(store.metadata, 'app0');
  t.equal(d?.status, 'succeeded', 'the outcome of the attempt was recorded');
});
