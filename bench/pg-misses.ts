/**
 * What a read the node's cache misses costs on PostgreSQL, against a hit, by
 * `SLIPWAY_DATABASE_READ_STATEMENTS` (engine/storage/statement-batch.ts), in one run:
 *
 *   npx tsc -p . && node dist/bench/pg-misses.js [--images 3000] [--rounds 3] [--settings 1,2,1000]
 *
 * One Slipway node on a durable PostgreSQL 15 (test/helpers/postgres.ts, `shared_buffers` 1 GB as
 * in bench/growth) and blobs on its filesystem; `--images` images of the growth benchmark
 * (bench/growth/images.ts) pushed once. Then, per round and per setting (the settings in turn,
 * so that the machine's drift falls on each alike): the node restarted with the setting (an
 * empty read cache), 1,000 untimed GETs of one tag (the GET path compiled), then a manifest GET
 * by tag of every other image once, 8 raw connections: each a miss (`first`); then as many GETs
 * of random ones, all in the cache now (`hits`). Per phase: p50/p99 ms, requests/s, the node's
 * CPU per GET (µs, /proc), and from its /metrics the misses' statements per read and the read
 * barrier's round trips per request, and the CPU % of one core other processes (PostgreSQL's
 * among them) and the hypervisor took meanwhile. One JSON line per phase and a table on stderr.
 */
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { installCleanup } from './cleanup.js';
import { RegistryClient } from './client.js';
import { cpuSeconds, CpuWindow } from './procstat.js';
import { pushImagesUpTo, type GrowthImage } from './growth/images.js';
import { metricSample } from './growth/memory.js';
import { firstReads, manifestGets, warmGetPath, type GetFigures } from './growth/reads.js';
import { startGrowthSlipway } from './growth/servers.js';

const CONNECTIONS = 8;

/** The counters of the node's /metrics this bench reads. */
async function counters(admin: string): Promise<{ reads: number; statements: number; barriers: number }> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const value = (name: string) => metricSample(text, name) ?? NaN;
  return { reads: value('slipway_database_miss_reads_total'), statements: value('slipway_database_miss_statements_total'), barriers: value('slipway_database_read_barrier_round_trips_total') };
}

/** Runs `phase` against the node `pid`: its figures with CPU per GET and the counters' change per GET. */
async function measured(pid: number, admin: string, gets: number, phase: () => Promise<GetFigures>) {
  const m0 = await counters(admin);
  const [c0, window] = [cpuSeconds(pid), new CpuWindow(pid)];
  const f = await phase();
  const [c1, cpu] = [cpuSeconds(pid), window.end()];
  const m1 = await counters(admin);
  return {
    p50_ms: f.p50, p99_ms: f.p99, rps: f.rps,
    node_cpu_us_per_get: Math.round(((c1 - c0) / gets) * 1e6),
    statements_per_miss: m1.reads > m0.reads ? Number(((m1.statements - m0.statements) / (m1.reads - m0.reads)).toFixed(3)) : null,
    misses_per_get: Number(((m1.reads - m0.reads) / gets).toFixed(3)),
    barrier_round_trips_per_get: Number(((m1.barriers - m0.barriers) / gets).toFixed(3)),
    other_cpu_pct: cpu.other_cpu_pct, steal_cpu_pct: cpu.steal_cpu_pct,
  };
}

async function main(): Promise<void> {
  installCleanup();
  const { values } = parseArgs({ options: { images: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '3' }, settings: { type: 'string', default: '1,2,1000' } } });
  const n = Number(values.images), rounds = Number(values.rounds);
  const settings = values.settings!.split(',').map((s) => s.trim());
  const { startPostgres } = await import('../test/helpers/postgres.js');
  const db = await startPostgres({ durable: true, settings: { shared_buffers: '1GB' } });
  // The setting comes from this process's environment at each start (startNode passes it on).
  const server = await startGrowthSlipway('cluster', { SLIPWAY_DATABASE_URL: db.connectionString, SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64') });
  try {
    const client = new RegistryClient(server.registry, server.authorization, CONNECTIONS);
    const images: GrowthImage[] = [];
    const t0 = performance.now();
    await pushImagesUpTo(client, 7, images, n, CONNECTIONS);
    await client.close();
    console.error(`pg-misses: ${n} images pushed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const rows: string[] = [];
    for (let round = 1; round <= rounds; round++) {
      for (const setting of settings) {
        process.env.SLIPWAY_DATABASE_READ_STATEMENTS = setting;
        await server.restart();
        await warmGetPath(server.registry, server.authorization, images[0]!.repo, [images[0]!.tag], 1000, CONNECTIONS, round);
        const rest = images.slice(1);
        const first = await measured(server.pid, server.admin!, rest.length, () => firstReads(server.registry, server.authorization, rest, rest.length, CONNECTIONS, round));
        const hits = await measured(server.pid, server.admin!, rest.length, () => manifestGets(server.registry, server.authorization, rest, rest.length, CONNECTIONS, round, 0));
        for (const [phase, f] of [['first', first], ['hits', hits]] as const) {
          console.log(JSON.stringify({ bench: 'pg_misses', round, read_statements: Number(setting), phase, images: n, ...f }));
          rows.push(`${round}  ${setting.padEnd(8)} ${phase.padEnd(6)} ${String(f.p50_ms).padEnd(7)} ${String(f.p99_ms).padEnd(7)} ${String(f.rps).padEnd(6)} ${String(f.node_cpu_us_per_get).padEnd(7)} ${String(f.statements_per_miss ?? '-').padEnd(10)} ${String(f.barrier_round_trips_per_get).padEnd(9)} ${f.other_cpu_pct}/${f.steal_cpu_pct}`);
        }
      }
    }
    console.error('round setting  phase  p50 ms  p99 ms  req/s  cpu µs  stmt/miss  barrier/GET  other/steal %');
    for (const r of rows) console.error(r);
  } finally {
    await server.stop();
    await db.stop();
  }
}

await main();
