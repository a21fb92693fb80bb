/**
 * Interleaved A/B of warm pushes on PostgreSQL for two Slipway builds: `node
 * dist/bench/cluster-ab.js <checkout A> <checkout B> [slices per build]` (both built; with
 * BENCH_AB_STORE=lmdb both nodes run on the embedded store instead, and no PostgreSQL). One
 * durable PostgreSQL holds two databases; each build runs one node (its own `dist/server/cli.js`)
 * on its own database and data directory, with the small image pushed once. Then warm pushes
 * (HEAD config, HEAD layer, PUT the manifest under a new tag: bench/warm-push.ts), one at a
 * time, alternate between the builds in slices of SLICE_MS in ABBA order, so the machine's drift
 * (steal, other sessions) lands on both alike. Per build: p50 and p99 of the pushes over all
 * slices but its first (JIT warm-up), and the CPU milliseconds per push of its node and of
 * PostgreSQL (the other node is idle during a slice, so PostgreSQL's CPU is this build's), with
 * steal and other-process CPU in % of one CPU per slice.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import pg from 'pg';
import { installCleanup, removeDir, trackDir } from './cleanup.js';
import { buildSmallImage } from './image.js';
import { cpuSeconds, systemSeconds } from './procstat.js';
import { round } from './stats.js';
import { postgresSeconds, postmasterPid, startNode, type BenchNode } from './cluster-nodes.js';
import { pushSmallImage, warmPushOnce } from './warm-push.js';
import { startPostgres } from '../test/helpers/postgres.js';

const SLICE_MS = 3_000;
const REPO = 'bench/web';

interface Build { dir: string; node: BenchNode; auth: Record<string, string>; lat: number[]; nodeMs: number[]; pgMs: number[]; steal: number[]; other: number[]; pushes: number }

/** One slice of warm pushes on `b`; its first slice (`record` false) only warms up. */
async function slice(b: Build, pgPid: number | undefined, n: number, record: boolean): Promise<void> {
  const img = await image;
  const lat: number[] = [];
  const c0 = process.cpuUsage(), sys0 = systemSeconds(), node0 = cpuSeconds(b.node.pid), pg0 = pgSecs(pgPid);
  const t0 = performance.now();
  for (let i = 0; performance.now() - t0 < SLICE_MS; i++) {
    const s = performance.now();
    await warmPushOnce(b.node.urls.registry, REPO, b.auth, img, `ab-${n}-${i}`);
    lat.push(performance.now() - s);
  }
  const secs = (performance.now() - t0) / 1000;
  const c = process.cpuUsage(c0), sys = systemSeconds();
  const node = cpuSeconds(b.node.pid) - node0, pgs = pgSecs(pgPid) - pg0;
  if (!record) return;
  b.lat.push(...lat);
  b.pushes += lat.length;
  b.nodeMs.push((node / lat.length) * 1000);
  b.pgMs.push((pgs / lat.length) * 1000);
  b.steal.push(Math.round(((sys.steal - sys0.steal) / secs) * 100));
  b.other.push(Math.max(0, Math.round(((sys.busy - sys0.busy - node - pgs - (c.user + c.system) / 1e6) / secs) * 100)));
}

const image = buildSmallImage();
const pgSecs = (pid: number | undefined) => (pid === undefined ? 0 : postgresSeconds(pid));
const LMDB = process.env.BENCH_AB_STORE === 'lmdb';
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

async function main(): Promise<void> {
  const [dirA, dirB, count = '8'] = process.argv.slice(2);
  if (!dirA || !dirB) throw new Error('usage: node dist/bench/cluster-ab.js <checkout A> <checkout B> [slices per build]');
  installCleanup();
  const img = await image;
  const db = LMDB ? undefined : await startPostgres({ durable: true });
  const builds: Build[] = [];
  const dirs: string[] = [];
  try {
    const admin = db && new pg.Client({ connectionString: db.connectionString });
    await admin?.connect();
    for (const [i, dir] of [dirA, dirB].entries()) {
      const env: Record<string, string> = {};
      if (db) {
        const url = new URL(db.connectionString);
        url.pathname = `/slipway_ab_${i}`;
        await admin!.query(`CREATE DATABASE slipway_ab_${i}`);
        Object.assign(env, { SLIPWAY_DATABASE_URL: url.href, SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64') });
      }
      const data = mkdtempSync(join(tmpdir(), 'slipway-cluster-ab-'));
      trackDir(data);
      dirs.push(data);
      const node = await startNode(data, env, join(resolve(dir), 'dist/server/cli.js'));
      const auth = { authorization: 'Basic ' + Buffer.from(`_:${node.apiKey}`).toString('base64') };
      const app = await request(`${node.urls.api}/apps`, { method: 'POST', headers: { authorization: `Bearer ${node.apiKey}`, 'content-type': 'application/json', accept: 'application/vnd.slipway+json; version=3' }, body: JSON.stringify({ name: 'bench' }) });
      await app.body.dump();
      if (app.statusCode !== 201) throw new Error(`POST /apps ${app.statusCode}`);
      await pushSmallImage(node.urls.registry, REPO, auth, img);
      builds.push({ dir, node, auth, lat: [], nodeMs: [], pgMs: [], steal: [], other: [], pushes: 0 });
    }
    await admin?.end();
    const pgPid = db && postmasterPid(join(db.dir, 'data'));
    const slices = (Number(count) + 1) * 2;
    for (let i = 0; i < slices; i++) {
      const b = builds[(i % 2) ^ (Math.floor(i / 2) % 2)]!; // A B B A A B …
      await slice(b, pgPid, i, i >= 2);
    }
  } finally {
    for (const b of builds) await b.node.stop();
    await db?.stop();
    for (const d of dirs) removeDir(d);
  }
  for (const b of builds) {
    process.stdout.write(`${JSON.stringify({
      bench: LMDB ? 'ab_warm_push_lmdb' : 'ab_warm_push_postgres', build: b.dir, pushes: b.pushes, p50_ms: round(pct(b.lat, 0.5), 2), p99_ms: round(pct(b.lat, 0.99), 2),
      node_cpu_ms_per_push: round(pct(b.nodeMs, 0.5), 3), pg_cpu_ms_per_push: round(pct(b.pgMs, 0.5), 3), steal_pct: b.steal, other_pct: b.other,
    })}\n`);
  }
}

main().then(() => process.exit(0), (e: Error) => {
  process.stderr.write(`bench/cluster-ab: ${e.message}\n`);
  process.exit(1);
});
