/**
 * `node dist/bench/pull-ab.js [rounds] [MiB]`: pulls right after their push, Slipway and the
 * reference interleaved, so a shared machine's drift falls on both alike. (`npm run bench` runs
 * one server after the other: on 2026-11-26 other processes used 30–50 % of a CPU more while one
 * server's pulls ran than while the other's did, which decided the ratio more than the servers.)
 *
 * Both servers run at once, each on its own data directory. Each round pushes one fresh blob of
 * `MiB` (default 256) to both (untimed, one PATCH), then pulls it from each: the first pull right
 * after the push, then the second, in the order A B then B A (A = Slipway in even rounds, the
 * reference in odd ones). Prints one JSON line per pull (MB/s, the server's CPU per GiB served,
 * other-process and steal CPU during it) and a summary per kind of pull: each server's median
 * MB/s and CPU per GiB, and the median of the per-round ratios (slipway / reference for MB/s,
 * reference / slipway for CPU: above 1 favours Slipway). Same client (bench/rawpull.ts) for both.
 */
import { installCleanup } from './cleanup.js';
import { RegistryClient } from './client.js';
import { PayloadFactory, type Blob } from './payload.js';
import { CpuWindow, cpuSeconds } from './procstat.js';
import { pullBlob } from './rawpull.js';
import { mbPerSecond, round } from './stats.js';
import { referenceAvailable, REFERENCE_BIN, startReference } from './servers/reference.js';
import { startSlipway } from './servers/slipway.js';
import type { Target } from './servers/target.js';
import { pushSinglePatch } from './workloads/upload.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const REPO = 'bench/pulls';
const KINDS = ['first', 'second'] as const;

interface Side {
  target: Target;
  client: RegistryClient;
}

interface Pull {
  server: Target['name'];
  kind: (typeof KINDS)[number];
  round: number;
  mb_s: number;
  cpu_s_per_gib: number;
  other_cpu_pct: number;
  steal_cpu_pct: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** One timed GET of `blob` from `side`, byte count checked. */
async function pullOnce(side: Side, blob: Blob, kind: Pull['kind'], r: number): Promise<Pull> {
  const { target, client } = side;
  const headers: Record<string, string> = client.authorization ? { authorization: client.authorization } : {};
  const window = new CpuWindow(target.pid);
  const cpu0 = cpuSeconds(target.pid);
  const t0 = performance.now();
  const got = await pullBlob(client.resolve(`/v2/${REPO}/blobs/${blob.digest}`), headers, 15_000);
  const ms = performance.now() - t0;
  if (got.bytes !== blob.size) throw new Error(`${target.name}: ${got.bytes} of ${blob.size} bytes`);
  const w = window.end();
  const cpu = cpuSeconds(target.pid) - cpu0;
  return { server: target.name, kind, round: r, mb_s: mbPerSecond(blob.size, ms), cpu_s_per_gib: round(cpu / (blob.size / GiB), 2), other_cpu_pct: w.other_cpu_pct, steal_cpu_pct: w.steal_cpu_pct };
}

async function main(): Promise<number> {
  installCleanup();
  const rounds = Number(process.argv[2] ?? 6);
  const size = Number(process.argv[3] ?? 256) * MiB;
  if (!referenceAvailable()) throw new Error(`reference registry not found at ${REFERENCE_BIN}; apt-get install docker-registry`);
  const payloads = new PayloadFactory(16 * MiB);
  const sides: Side[] = [];
  for (const start of [startSlipway, startReference]) {
    const target = await start();
    sides.push({ target, client: new RegistryClient(target.registry, target.authorization, 4) });
  }
  const pulls: Pull[] = [];
  try {
    for (let r = 0; r < rounds; r++) {
      const blob = payloads.blob(size, `pull-ab-${r}-${Date.now()}`);
      for (const s of sides) await pushSinglePatch(s.client, REPO, blob, 180_000);
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const [i, kind] of KINDS.entries()) {
        for (const s of i === 0 ? order : [...order].reverse()) {
          const p = await pullOnce(s, blob, kind, r);
          pulls.push(p);
          process.stdout.write(JSON.stringify({ bench: 'pull_ab', ...p }) + '\n');
        }
      }
    }
  } finally {
    for (const s of sides) {
      await s.client.close();
      await s.target.stop();
    }
  }
  for (const kind of KINDS) {
    const of = (server: Target['name']) => pulls.filter((p) => p.kind === kind && p.server === server);
    const s = of('slipway');
    const r = of('reference');
    const ratios = s.map((p, i) => p.mb_s / r[i]!.mb_s);
    const cpuRatios = s.map((p, i) => r[i]!.cpu_s_per_gib / p.cpu_s_per_gib);
    const summary = {
      bench: 'pull_ab_summary', kind, rounds, blob_mib: size / MiB,
      slipway_mb_s: round(median(s.map((p) => p.mb_s)), 1), reference_mb_s: round(median(r.map((p) => p.mb_s)), 1), ratio_median: round(median(ratios), 2),
      ratios: ratios.map((x) => round(x, 2)),
      slipway_cpu_s_per_gib: round(median(s.map((p) => p.cpu_s_per_gib)), 2), reference_cpu_s_per_gib: round(median(r.map((p) => p.cpu_s_per_gib)), 2), cpu_ratio_median: round(median(cpuRatios), 2),
      other_cpu_pct: [Math.min(...pulls.map((p) => p.other_cpu_pct)), Math.max(...pulls.map((p) => p.other_cpu_pct))],
      steal_cpu_pct: [Math.min(...pulls.map((p) => p.steal_cpu_pct)), Math.max(...pulls.map((p) => p.steal_cpu_pct))],
    };
    process.stdout.write(JSON.stringify(summary) + '\n');
    process.stderr.write(`${kind} pull of ${size / MiB} MiB right after its push, ${rounds} rounds: slipway ${summary.slipway_mb_s} MB/s at ${summary.slipway_cpu_s_per_gib} CPU-s/GiB, reference ${summary.reference_mb_s} MB/s at ${summary.reference_cpu_s_per_gib}; ratio (median of rounds) ${summary.ratio_median} [${summary.ratios.join(', ')}], CPU ratio ${summary.cpu_ratio_median}; other ${summary.other_cpu_pct.join('–')} %, steal ${summary.steal_cpu_pct.join('–')} %\n`);
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`pull-ab: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  },
);
