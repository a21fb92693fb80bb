/**
 * The sender thread (workers/sender-thread.ts, docs/webhooks.md "Sending"): delivery attempts'
 * HTTP exchanges made on a worker thread, batched per turn of either event loop, against real
 * node:http receivers on loopback. Checked:
 * - a burst of attempts posted at random moments (seeded; SLIPWAY_TEST_SEED replays one), each
 *   answered after a random delay with a status of its own: every outcome is its own request's
 *   (no mix-up across batches), and the receiver saw each request once;
 * - a receiver that never answers: the attempt ends as `timeout` within its deadline;
 * - the destination policy crosses to the thread: a loopback URL the operator did not allow is
 *   refused there (`ssrf-refused`), without a connection;
 * - close() with an attempt in flight: it ends as `error` at once, and a later attempt is refused.
 */
import t from 'tap';
import type * as Tap from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SENDER_GRACE_MS, SenderThread } from '../../workers/sender-thread.js';
import { parseAllowedHosts, NOTHING_ALLOWED } from '../../engine/webhooks/destination.js';
import { prng } from '../helpers/h1-generator.js';

const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Date.now() % 1e9);
t.comment(`sender thread seed ${seed} (set SLIPWAY_TEST_SEED to replay)`);
const random = prng(seed);
const LOOPBACK = parseAllowedHosts('127.0.0.1');

async function receiver(t: Tap.Test, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('a burst at random moments: every outcome is its own request\'s', async (t) => {
  const seen = new Map<number, number>();
  const base = await receiver(t, (req, res) => {
    const n = Number(req.headers['x-n']);
    seen.set(n, (seen.get(n) ?? 0) + 1);
    req.resume();
    // Each request's own status: 200–299 for even n, 500–599 for odd n.
    setTimeout(() => { res.statusCode = (n % 2 === 0 ? 200 : 500) + (n % 100); res.end(); }, Math.floor(random() * 30));
  });
  const sender = new SenderThread();
  t.teardown(() => sender.close());
  const COUNT = 300;
  const outcomes = await Promise.all(Array.from({ length: COUNT }, async (_, n) => {
    await new Promise((r) => setTimeout(r, Math.floor(random() * 200)));
    return sender.send({ url: `${base}/${n}`, headers: { 'x-n': String(n) }, body: `attempt ${n}` }, 10_000, LOOPBACK);
  }));
  const wrong = outcomes.flatMap((o, n) => (o.code === (n % 2 === 0 ? 200 : 500) + (n % 100) && o.ok === (n % 2 === 0) ? [] : [`${n}: ${JSON.stringify(o)}`]));
  t.same(wrong, [], `all ${COUNT} outcomes carry their own request's status`);
  t.equal(seen.size, COUNT, 'the receiver saw every request');
  t.ok([...seen.values()].every((c) => c === 1), 'each once');
});

t.test('a receiver that never answers: timeout within the deadline', async (t) => {
  const base = await receiver(t, (req, res) => {
    req.resume();
    if (req.url === '/answer') res.end();
  });
  const sender = new SenderThread();
  t.teardown(() => sender.close());
  // The thread is started by a first attempt: its start-up is not part of an exchange's deadline.
  t.match(await sender.send({ url: `${base}/answer`, headers: {}, body: 'x' }, 10_000, LOOPBACK), { ok: true });
  const started = performance.now();
  const o = await sender.send({ url: `${base}/hang`, headers: {}, body: 'x' }, 500, LOOPBACK);
  const took = performance.now() - started;
  t.match(o, { ok: false, code: null, cause: 'timeout' });
  t.ok(took >= 500 && took < 500 + SENDER_GRACE_MS, `ended after ${took.toFixed(0)} ms (deadline 500 ms, bound ${500 + SENDER_GRACE_MS} ms)`);
});

t.test('the destination policy holds on the thread', async (t) => {
  let arrived = 0;
  const base = await receiver(t, (req, res) => { arrived++; req.resume(); res.end(); });
  const sender = new SenderThread();
  t.teardown(() => sender.close());
  t.match(await sender.send({ url: `${base}/`, headers: {}, body: 'x' }, 2_000, NOTHING_ALLOWED), { ok: false, cause: 'ssrf-refused' });
  t.match(await sender.send({ url: `${base}/`, headers: {}, body: 'x' }, 2_000, LOOPBACK), { ok: true, code: 200 });
  t.equal(arrived, 1, 'only the allowed attempt connected');
});

t.test('close() with an attempt in flight ends it as error, and refuses later ones', async (t) => {
  let arrived = 0;
  const base = await receiver(t, (req) => { arrived++; req.resume(); });
  const sender = new SenderThread();
  const pending = sender.send({ url: `${base}/`, headers: {}, body: 'x' }, 30_000, LOOPBACK);
  const deadline = Date.now() + 10_000;
  while (arrived === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.equal(arrived, 1, 'the attempt reached the receiver');
  const started = performance.now();
  await sender.close();
  t.match(await pending, { ok: false, cause: 'error' });
  t.ok(performance.now() - started < 5_000, 'close() returned promptly');
  t.match(await sender.send({ url: `${base}/`, headers: {}, body: 'x' }, 1_000, LOOPBACK), { ok: false, cause: 'error' });
});
