/**
 * What registry notifications cost a manifest pull (docs/notifications.md "Pulls"): two
 * `slipway serve` processes on LMDB, one without endpoints and one notifying a local node:http
 * receiver of every pull, each serving manifest GETs by tag from `BENCH_NP_CONCURRENCY` (16)
 * keep-alive connections, in alternating rounds of `BENCH_NP_PULLS` (4000) pulls. Prints one
 * JSON line per round (pulls/s, p50 and p99 in ms, the server's CPU µs per pull: the figure that
 * a loaded machine disturbs least) and the receiver's count of pull events.
 * Run: `npx tsc -p . && node dist/bench/notification-pulls.js`.
 */
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startSpawned, type SpawnedSlipway } from '../test/helpers/harness.js';
import { createApp, basic } from '../test/helpers/http.js';
import { buildImage, sampleSpec } from '../test/helpers/image.js';
import { pushBuiltImage } from '../test/helpers/registry.js';
import { tempDir } from '../test/helpers/server.js';
import { NotificationReceiver } from '../test/helpers/notification-receiver.js';
import { cpuSeconds } from './procstat.js';

const PULLS = Number(process.env.BENCH_NP_PULLS ?? 4000);
const CONCURRENCY = Number(process.env.BENCH_NP_CONCURRENCY ?? 16);
const ROUNDS = Number(process.env.BENCH_NP_ROUNDS ?? 3);

async function prepare(server: SpawnedSlipway, imageDir: string): Promise<void> {
  await createApp(server.urls.api, server.apiKey!, 'bench');
  const img = await buildImage(imageDir, sampleSpec());
  await pushBuiltImage({ registry: server.urls.registry, auth: basic('_', server.apiKey!) }, 'bench/web', 'latest', img);
}

/** One round: PULLS manifest GETs, CONCURRENCY at a time; pulls/s and latency percentiles (ms). */
async function round(server: SpawnedSlipway): Promise<{ perSecond: number; p50: number; p99: number; serverCpuUsPerPull: number }> {
  const cpu0 = cpuSeconds(server.proc.pid!);
  const origin = new URL(server.urls.registry);
  const pool = new Pool(origin.origin, { connections: CONCURRENCY });
  const headers = { ...basic('_', server.apiKey!), accept: 'application/vnd.docker.distribution.manifest.v2+json' };
  const times: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < PULLS) {
      next++;
      const s = performance.now();
      const r = await pool.request({ method: 'GET', path: '/v2/bench/web/manifests/latest', headers });
      await r.body.arrayBuffer();
      if (r.statusCode !== 200) throw new Error(`GET ${r.statusCode}`);
      times.push(performance.now() - s);
    }
  }));
  const seconds = (performance.now() - t0) / 1000;
  const serverCpuUsPerPull = Math.round(((cpuSeconds(server.proc.pid!) - cpu0) * 1e6) / PULLS);
  await pool.close();
  times.sort((a, b) => a - b);
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(q * times.length))]! * 1000) / 1000;
  return { perSecond: Math.round(PULLS / seconds), p50: at(0.5), p99: at(0.99), serverCpuUsPerPull };
}

const receiver = await NotificationReceiver.start();
const tmp = tempDir();
const env = { SLIPWAY_REGISTRY_TLS: 'off', SLIPWAY_ACCESS_LOG_LEVEL: 'silent' };
const off = await startSpawned({ env });
const on = await startSpawned({ env: { ...env, SLIPWAY_NOTIFICATIONS_ENDPOINTS: JSON.stringify([{ name: 'bench', url: receiver.url }]) } });
try {
  await prepare(off, join(tmp.dir, 'a'));
  await prepare(on, join(tmp.dir, 'b'));
  for (let i = 0; i < ROUNDS; i++) {
    for (const [name, server] of [['off', off], ['on', on]] as const) {
      console.log(JSON.stringify({ notifications: name, round: i + 1, pulls: PULLS, concurrency: CONCURRENCY, ...(await round(server)) }));
    }
  }
  const deadline = Date.now() + 30_000;
  const expected = PULLS * ROUNDS;
  while (receiver.events().filter((e) => e.action === 'pull').length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  const pulls = receiver.received.filter((r) => r.events[0]?.action === 'pull');
  console.log(JSON.stringify({ pullEventsReceived: pulls.reduce((n, r) => n + r.events.length, 0), expected, envelopes: pulls.length }));
} finally {
  await Promise.all([off.stop(), on.stop()]);
  await receiver.down();
  tmp.cleanup();
}
