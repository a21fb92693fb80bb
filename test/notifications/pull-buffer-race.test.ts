/**
 * Race test of the pull buffer of registry notifications (engine/notifications/pull-buffer.ts)
 * on a real LMDB store and the delivery engine's real outbox: pulls arrive in bursts at seeded
 * random times while the background flush writes batches and pushes record their events in
 * transactions of their own. Invariants: every pull is either in exactly one recorded envelope or
 * counted as dropped (never both, never twice); an envelope holds at most `batch` events; nothing
 * waits once the buffer is stopped; the pushes' events are all there.
 */
import t from 'tap';
import { tempDir } from '../helpers/server.js';
import { openStore } from '../../engine/store.js';
import { ManualClock } from '../../engine/clock.js';
import { RegistryNotifications } from '../../engine/notifications/registry-notifications.js';
import type { Envelope } from '../../engine/notifications/envelope.js';
import type { NotificationEndpoint } from '../../engine/notifications/endpoints.js';
import type { Digest } from '../../engine/digest.js';
import { events } from '../../engine/webhooks/keyspaces.js';
import { rng, testSeed } from '../faults/traffic.js';

const random = rng(testSeed());
t.comment(`pull buffer race seed ${random.seed} (replay with SLIPWAY_TEST_SEED=${random.seed})`);
const between = (lo: number, hi: number) => random.int(lo, hi);

const ENDPOINT: NotificationEndpoint = { name: 'hooks', url: 'http://127.0.0.1:9/', headers: {}, timeoutMs: 1000, threshold: 1, backoffMs: 1000, ignoredMediaTypes: [], ignoredActions: [] };
const DIGEST = `sha256:${'ab'.repeat(32)}` as Digest;

t.test('every pull is recorded once or counted dropped', async (t) => {
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  t.teardown(async () => { await store.close(); tmp.cleanup(); });
  const batch = 7, capacity = 40;
  const n = new RegistryNotifications({
    endpoints: [ENDPOINT], store: store.metadata, clock: new ManualClock(Date.UTC(2026, 0, 5)), source: () => ({ addr: 'node:5000', instanceID: 'i' }),
    registryUrl: () => 'https://registry.example.com', actorName: async (id) => `${id}@example.com`,
    pullBuffer: { capacity, batch, flushMs: 3 },
  });
  const PULLS = 1500, PUSHES = 40;
  let added = 0;
  const bursts: Array<Promise<void>> = [];
  while (added < PULLS) {
    const size = Math.min(PULLS - added, between(1, 60));
    const first = added;
    added += size;
    bursts.push(new Promise((resolve) => setTimeout(() => {
      for (let i = first; i < first + size; i++) {
        n.pulled({ repository: 'app/web', digest: DIGEST, mediaType: 'm', size: 1, at: 0, requestId: `pull-${i}`, addr: '127.0.0.1', host: 'h', method: 'GET', useragent: 'u', accountId: i % 3 === 0 ? '' : `acct${i % 5}` });
      }
      resolve();
    }, between(0, 400))));
  }
  const pushes = Array.from({ length: PUSHES }, (_, i) => new Promise<void>((resolve, reject) => setTimeout(() => {
    store.metadata.transact((tx) => n.recordInTransaction(tx, [{ action: 'push', kind: 'manifest', repository: 'app/web', digest: DIGEST, mediaType: 'm', size: 1, tag: `t${i}` }], { request: { id: `push-${i}`, method: 'PUT', useragent: 'u' }, actor: {} })).then(() => resolve(), reject);
  }, between(0, 400))));
  await Promise.all([...bursts, ...pushes]);
  await n.stop();
  t.equal(n.pulls.pending, 0, 'nothing waits after stop');
  const recorded = (await store.metadata.range(events)).map((e) => e.value);
  const pullIds: string[] = [];
  let pushCount = 0;
  for (const e of recorded) {
    const envelope = e.data as Envelope;
    if (e.action === 'push') {
      pushCount++;
      t.equal(envelope.events.length, 1);
      continue;
    }
    t.ok(envelope.events.length >= 1 && envelope.events.length <= batch, `an envelope of ${envelope.events.length} pulls`);
    for (const ev of envelope.events) {
      pullIds.push(ev.request.id);
      if (ev.request.id !== `pull-${Number(ev.request.id.slice(5))}`) t.fail(`unknown pull ${ev.request.id}`);
    }
  }
  t.comment(`pulls recorded ${pullIds.length}, dropped ${n.pulls.dropped}`);
  t.equal(pushCount, PUSHES, 'every push recorded its event');
  t.equal(new Set(pullIds).size, pullIds.length, 'no pull recorded twice');
  t.equal(pullIds.length + n.pulls.dropped, PULLS, `recorded ${pullIds.length} + dropped ${n.pulls.dropped} = every pull`);
  t.ok(pullIds.length >= capacity, 'at least a buffer-full of pulls was recorded');
  n.pulled({ repository: 'app/web', digest: DIGEST, mediaType: 'm', size: 1, at: 0, requestId: 'late', addr: '', host: '', method: 'GET', useragent: '', accountId: '' });
  t.equal(n.pulls.dropped, PULLS - pullIds.length + 1, 'a pull after stop is counted as dropped');
});
