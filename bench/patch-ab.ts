/**
 * Interleaved A/B of the server CPU per upload PATCH of two Slipway builds:
 * `node dist/bench/patch-ab.js <checkout A> <checkout B> [rounds] [patches]` (defaults 10, 256).
 * Both checkouts must be built (`npx tsc -p .`); each runs with its own bench starter.
 *
 * Each build is warmed with 4 pushes (the first PATCHes of a fresh server run cold code), then
 * measured for `rounds` pushes in ABBA order. A push is one session: POST, `patches` × 1 MiB
 * PATCHes with Content-Range and only the `_state` Location (as docker sends them to the upload
 * host), then PUT `?digest=`. Per push it reports the server's main-thread CPU (utime+stime of
 * /proc/<pid>/task/<pid>/stat) and whole-process CPU per PATCH in µs, with steal and
 * other-process CPU (bench/procstat.ts `CpuWindow`); the summary is the median per build.
 * @throws Error (exit 1) when any answer is not the expected status.
 */
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'undici';
import { CpuWindow, threadSeconds } from './procstat.js';
import { installCleanup } from './cleanup.js';
import { REPO } from './workloads/context.js';
import type { SlipwayTarget } from './servers/slipway.js';

/** One measured push. */
interface Round {
  main_us_per_patch: number;
  proc_us_per_patch: number;
  wall_s: number;
  steal: number;
  other: number;
}

const MIB = 1 << 20;
const WARM_PUSHES = 4;

/** Main-thread CPU seconds (user + system) of process `pid`. */
function mainCpu(pid: number): number {
  const t = threadSeconds(pid).get(pid);
  return t ? t.user + t.system : 0;
}

/** One session of `n` PATCHes of `chunk`, committed as `digest`. */
async function push(t: SlipwayTarget, chunk: Buffer, n: number, digest: string): Promise<void> {
  const r = await request(`${t.urls.registry}/v2/${REPO.big}/blobs/uploads/`, { method: 'POST', headers: { authorization: t.authorization! } });
  await r.body.dump();
  if (r.statusCode !== 202) throw new Error(`POST answered ${r.statusCode}`);
  let loc = String(r.headers.location);
  for (let i = 0; i < n; i++) {
    const p = await request(loc, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'content-range': `${i * MIB}-${(i + 1) * MIB - 1}`, 'content-length': String(MIB) }, body: chunk });
    const text = await p.body.text();
    if (p.statusCode !== 202) throw new Error(`PATCH answered ${p.statusCode}: ${text.slice(0, 300)}`);
    loc = String(p.headers.location);
  }
  const u = new URL(loc);
  u.searchParams.set('digest', digest);
  const c = await request(u, { method: 'PUT' });
  const text = await c.body.text();
  if (c.statusCode !== 201) throw new Error(`PUT answered ${c.statusCode}: ${text.slice(0, 300)}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Entry point. */
async function main(): Promise<void> {
  const [dirA, dirB, roundsArg = '10', patchesArg = '256'] = process.argv.slice(2);
  if (!dirA || !dirB) throw new Error('usage: node dist/bench/patch-ab.js <checkout A> <checkout B> [rounds] [patches]');
  const rounds = Number(roundsArg);
  const n = Number(patchesArg);
  installCleanup();
  const chunk = randomBytes(MIB);
  const whole = createHash('sha256');
  for (let i = 0; i < n; i++) whole.update(chunk);
  const digest = `sha256:${whole.digest('hex')}`;
  const builds: Array<{ dir: string; target: SlipwayTarget; rounds: Round[] }> = [];
  try {
    for (const dir of [dirA, dirB]) {
      const mod = await import(pathToFileURL(join(resolve(dir), 'dist/bench/servers/slipway.js')).href) as { startSlipway: () => Promise<SlipwayTarget> };
      builds.push({ dir, target: await mod.startSlipway(), rounds: [] });
    }
    for (let k = 0; k < WARM_PUSHES; k++) for (const b of builds) await push(b.target, chunk, n, digest);
    for (let i = 0; i < rounds * 2; i++) {
      const b = builds[(i % 2) ^ (Math.floor(i / 2) % 2)]!; // A B B A A B …
      const window = new CpuWindow(b.target.pid);
      const main0 = mainCpu(b.target.pid);
      const t0 = performance.now();
      await push(b.target, chunk, n, digest);
      const secs = (performance.now() - t0) / 1000;
      const use = window.end();
      b.rounds.push({
        main_us_per_patch: Math.round(((mainCpu(b.target.pid) - main0) * 1e6) / n),
        proc_us_per_patch: Math.round(((use.server_cpu_pct / 100) * secs * 1e6) / n),
        wall_s: Number(secs.toFixed(2)),
        steal: use.steal_cpu_pct,
        other: use.other_cpu_pct,
      });
    }
  } finally {
    for (const b of builds) await b.target.stop();
  }
  for (const b of builds) {
    process.stdout.write(`${JSON.stringify({ bench: 'ab_patch', build: b.dir, median_main_us_per_patch: median(b.rounds.map((r) => r.main_us_per_patch)), median_proc_us_per_patch: median(b.rounds.map((r) => r.proc_us_per_patch)), rounds: b.rounds })}\n`);
  }
}

main().then(() => process.exit(0), (e: Error) => {
  process.stderr.write(`bench/patch-ab: ${e.message}\n`);
  process.exit(1);
});
