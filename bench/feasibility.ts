/**
 * The end of a bench run: the machine's limits measured in it (bench/limits.ts), the pull
 * client's limit (bench/pull-limit.ts), and for each pull target measured right after its push
 * whether it is reachable on this machine: `pull_after_push_feasibility` (pull_1gib ≥ 1.2 × the
 * reference) and `pull_concurrent_feasibility` (pull_concurrent ≥ 1.2 × the reference). Pushed
 * bytes are in the page cache on both servers, so a target is reachable from the store when
 * page-cache reads (`page_cache_read`) are at least what it needs, and from the client when the
 * bench's own pull client is: its speed against a server serving from memory, or its fastest
 * pull of the same shape from either registry in this run when that was faster (the trivial
 * server, one Node thread writing 4 MiB buffers, can be the slower side). The disk's `O_DIRECT`
 * read is shown beside them: the pace of a pull of a blob that is not in the cache. Each line
 * also sets the push's CPU per GiB (which pays for caching the pushed bytes) against its target,
 * the reference's in the same run divided by its ratio (report.ts `TARGETS`). For each push
 * target, `<figure>_feasibility` says whether the disk's write-and-sync speed measured in the run
 * leaves room for it. For each load
 * target (`manifest_get_64c`, `manifest_get_64c_raw`, `blob_head_64c`), `<figure>_feasibility`
 * says whether its client against a server that only answers (bench/load-limit.ts) drives the
 * req/s the ratio needs, and with what p99.
 */
import { cpus } from 'node:os';
import { pushDiskLimit, type Limit } from './limits.js';
import type { LoadClient, LoadLimit } from './load-limit.js';
import type { PullLimit } from './pull-limit.js';
import type { PushLimit } from './push-limit.js';
import type { StoringLimit } from './storing-limit.js';
import { TARGETS, type Report } from './report.js';
import { threadCells } from './procstat.js';

/** What the feasibility lines read from the run. */
export interface RunLimits {
  limits: Limit[];
  pullLimits: PullLimit[];
  /** The concurrent push client against a sink (bench/push-limit.ts), when measured. */
  pushLimit?: PushLimit;
  /** The concurrent push against the least storing server (bench/storing-limit.ts), per way of hashing, when measured. */
  storingLimits?: StoringLimit[];
  sha256Rate: number;
  /** CPU seconds per GiB of sha256 in this run (the floor under the push CPU). */
  hashSecondsPerGiB: number;
  /** The load clients against a server that only answers (bench/load-limit.ts), when measured. */
  loadLimits?: LoadLimit[];
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const GiB = 1024 ** 3;

/** The target of figure `bench` (report.ts `TARGETS`, the one list of them). @throws Error when `bench` has none of that kind. */
function target(bench: string, kind: 'ratio' | 'max'): number {
  const v = TARGETS[bench]?.[kind];
  if (v === undefined) throw new Error(`bench/report.ts TARGETS has no ${kind} for ${bench}`);
  return v;
}

/** Prints the limits and the pull client's limits (stderr). */
function printTable({ limits, pullLimits, sha256Rate, hashSecondsPerGiB }: RunLimits): void {
  if (limits.length > 0) {
    process.stderr.write(`\nmachine limits measured in this run (1 process, ${limits.length} figures; CPU = this process's utime+stime per GiB):\n`);
    for (const l of limits) process.stderr.write(`  ${l.bench.padEnd(28)} ${String(l.value).padStart(8)} MB/s  ${l.cpu_seconds_per_gib.toFixed(2)} CPU-s/GiB (${l.system_seconds_per_gib.toFixed(2)} system)  ${l.note}${l.rounds_mb_s ? ` [rounds ${l.rounds_mb_s.join(', ')} MB/s]` : ''}\n`);
    process.stderr.write(`  sha256                       ${String(sha256Rate).padStart(8)} MB/s  ${hashSecondsPerGiB.toFixed(2)} CPU-s/GiB\n`);
  }
  if (pullLimits.length > 0) {
    process.stderr.write(`\npull client limits (this run; the client against a server serving from memory, servers/trivial-blob.ts):\n`);
    for (const p of pullLimits) {
      process.stderr.write(`  ${p.bench.padEnd(28)} ${String(p.value).padStart(8)} MB/s  client ${p.client_cpu_s_per_gib.toFixed(2)} CPU-s/GiB, trivial server ${p.server_cpu_s_per_gib.toFixed(2)}  (${p.blobs} x ${p.blob_bytes / 2 ** 20} MiB, fastest of rounds ${p.rounds_mb_s?.join(', ') ?? '-'} MB/s; other ${p.other_cpu_pct}%, steal ${p.steal_cpu_pct}%)\n`);
    }
  }
}

/**
 * One feasibility line for push figure `bench` (needs `ratio` × the reference): reachable when
 * the disk's buffered write with fdatasync (`buffered_write_sync`, how Slipway stores pushed
 * bytes before it acknowledges them; for `push_concurrent`, `disk_write_sync_concurrent`, the
 * same files written and synced as many at once) is at least that fast in this run. The
 * reference does not sync, so its pushes are not bounded by that figure.
 */
function pushFeasibility(run: RunLimits, report: Report, bench: string, ratio: number): void {
  const ref = report.figures.find((f) => f.bench === bench && f.server === 'reference');
  const mine = report.figures.find((f) => f.bench === bench && f.server === 'slipway');
  const disk = pushDiskLimit(run.limits, bench === 'push_concurrent');
  if (!ref || !disk) return;
  const needs = r2(ratio * ref.value);
  const client = bench === 'push_concurrent' ? run.pushLimit?.value : undefined;
  const diskOk = needs <= disk.value;
  const clientOk = client === undefined || needs <= client;
  report.note({ bench: `${bench}_feasibility`, needs_mb_s: needs, ratio, reference_mb_s: ref.value, disk_write_sync_mb_s: disk.value, push_client_mb_s: client, slipway_mb_s: mine?.value, reachable: diskOk && clientOk });
  const verdicts = [
    `the disk takes ${disk.value} MB/s written and synced${disk.bench === 'disk_write_sync_concurrent' ? ' (the same files, as many at once)' : ''}: ${diskOk ? 'enough' : 'NOT enough while every blob is synced before it is acknowledged (the reference does not sync)'}`,
    ...(client === undefined ? [] : [`the client pushes ${client} MB/s to a server that discards the bytes: ${clientOk ? 'enough' : 'NOT enough'}`]),
  ];
  process.stderr.write(`${bench}_feasibility: ${ratio} × the reference needs ${needs} MB/s; in this run ${verdicts.join('; ')}${mine ? `; Slipway ran at ${mine.value} MB/s (${r2(mine.value / disk.value)} of the disk${client ? `, ${r2(mine.value / client)} of the client` : ''})` : ''}\n`);
  if (bench === 'push_concurrent') cpuFloor(run, report, disk, needs, mine);
}

/**
 * The concurrent push's CPU floor on this machine's CPUs, each part measured in this run: the
 * push client's CPU per GiB and the sink's (receiving the bytes and nothing else) against a
 * server that discards them (bench/push-limit.ts), sha256's, and the disk limit's writing and
 * syncing the same files (`disk_write_sync_concurrent`). With every CPU busy on nothing else, a
 * server storing those bytes as Slipway does (hashed, written through the page cache, synced)
 * pushes at most CPUs / that sum GiB per second; Slipway's own CPU per GiB in its push, with the
 * same client, gives its ceiling at full use of the CPUs. Both are printed beside what the target
 * needs: the first says whether the target is reachable here at all, the second how far Slipway's
 * own costs are from it.
 */
function cpuFloor(run: RunLimits, report: Report, disk: Limit, needs: number, mine: { value: number; [k: string]: unknown } | undefined): void {
  const push = run.pushLimit;
  if (!push) return;
  const n = cpus().length;
  const mbPerGiB = GiB / 1e6;
  const floor = r2(push.client_cpu_s_per_gib + push.server_cpu_s_per_gib + run.hashSecondsPerGiB + disk.cpu_seconds_per_gib);
  const most = Math.round((n / floor) * mbPerGiB);
  const server = typeof mine?.server_cpu_s_per_gib === 'number' ? mine.server_cpu_s_per_gib : undefined;
  const ceiling = server === undefined ? undefined : Math.round((n / (push.client_cpu_s_per_gib + server)) * mbPerGiB);
  report.note({ bench: 'push_concurrent_cpu_floor', cpus: n, client_cpu_s_per_gib: push.client_cpu_s_per_gib, receive_cpu_s_per_gib: push.server_cpu_s_per_gib, sha256_cpu_s_per_gib: run.hashSecondsPerGiB, write_sync_cpu_s_per_gib: disk.cpu_seconds_per_gib, floor_cpu_s_per_gib: floor, most_mb_s: most, needs_mb_s: needs, slipway_cpu_s_per_gib: server, slipway_ceiling_mb_s: ceiling, slipway_mb_s: mine?.value });
  const storing = (run.storingLimits ?? []).map((l) => ({ mode: l.mode, lanes: l.lanes, mb_s: l.value, rounds_mb_s: l.rounds_mb_s, server_cpu_s_per_gib: l.server_cpu_s_per_gib, client_cpu_s_per_gib: l.client_cpu_s_per_gib, other_cpu_pct: l.other_cpu_pct, steal_cpu_pct: l.steal_cpu_pct }));
  if (storing.length > 0) {
    const best = storing.reduce((a, b) => (b.mb_s > a.mb_s ? b : a));
    report.note({ bench: 'push_concurrent_storing_limit', needs_mb_s: needs, best_mb_s: best.mb_s, best_mode: best.mode, reachable: best.mb_s >= needs, slipway_mb_s: mine?.value, storing });
    for (const l of run.storingLimits ?? []) process.stderr.write(`threads storing-sink ${l.mode} (${l.value} MB/s): ${threadCells(l.threads)}\n`);
    process.stderr.write(`push_concurrent_storing_limit: the least storing server (bench/storing-limit.ts: hash, write, sync, rename, nothing else) with the same client, ${best.lanes} bodies at once: ${storing.map((s) => `hash ${s.mode} ${s.mb_s} MB/s at ${s.server_cpu_s_per_gib} CPU-s/GiB (other ${s.other_cpu_pct}%, steal ${s.steal_cpu_pct}%)`).join(', ')}; fastest ${best.mb_s} against the ${needs} needed (${best.mb_s >= needs ? 'reachable' : 'NOT reachable'})${mine ? `; Slipway ran at ${mine.value} (${r2(mine.value / best.mb_s)} of it)` : ''}\n`);
  }
  process.stderr.write(`push_concurrent_cpu_floor: on ${n} CPUs, client ${push.client_cpu_s_per_gib} + receiving ${push.server_cpu_s_per_gib} + sha256 ${run.hashSecondsPerGiB} + writing and syncing ${disk.cpu_seconds_per_gib} = ${floor} CPU-s/GiB -> at most ${most} MB/s with every CPU busy (needs ${needs}: ${most >= needs ? 'reachable' : 'NOT reachable'})${ceiling === undefined ? '' : `; Slipway's ${server} CPU-s/GiB with the same client -> at most ${ceiling} MB/s (${ceiling >= needs ? 'reachable' : 'NOT reachable'}), it ran at ${mine!.value}`}\n`);
}

/**
 * One feasibility line for pull figure `bench` (needs `ratio` × the reference), with the disk
 * limit `diskBench` and the raw client limit `clientBench`.
 */
function pullFeasibility(run: RunLimits, report: Report, line: { name: string; bench: string; ratio: number; diskBench: string; clientBench: string; sameShape: string[] }): void {
  const ref = report.figures.find((f) => f.bench === line.bench && f.server === 'reference');
  const mine = report.figures.find((f) => f.bench === line.bench && f.server === 'slipway');
  const cache = run.limits.find((l) => l.bench === 'page_cache_read');
  const disk = run.limits.find((l) => l.bench === line.diskBench);
  const trivial = run.pullLimits.find((p) => p.bench === line.clientBench);
  // The client pulled at least this fast in this run: against the trivial server, or against
  // either registry in a pull of the same shape (the trivial server can be the slower side).
  const seen = report.figures.filter((f) => line.sameShape.includes(f.bench) && f.unit === 'MB/s').sort((a, b) => b.value - a.value)[0];
  const clientBest = Math.max(trivial?.value ?? 0, seen?.value ?? 0);
  const client = trivial || seen ? { value: clientBest, client_cpu_s_per_gib: trivial?.client_cpu_s_per_gib, from: seen && seen.value > (trivial?.value ?? 0) ? `${seen.bench} on ${seen.server}` : line.clientBench } : undefined;
  const push = report.figures.find((f) => f.bench === 'server_cpu_per_gib_push' && f.server === 'slipway');
  const refPush = report.figures.find((f) => f.bench === 'server_cpu_per_gib_push' && f.server === 'reference');
  if (!ref || (!cache && !client)) return;
  const need = Math.round(line.ratio * ref.value);
  const verdict = (what: string, v: number | undefined) => (v === undefined ? `${what} not measured` : `${what} ${v} MB/s -> ${v >= need ? 'reachable' : 'NOT reachable'}`);
  const pushRatio = target('server_cpu_per_gib_push', 'ratio');
  const pushBound = refPush ? r2(refPush.value / pushRatio) : undefined;
  process.stderr.write(`${line.bench}: ${line.ratio} x reference ${ref.value} = ${need} MB/s needed (slipway ${mine?.value ?? '-'}); ${verdict('page cache (page_cache_read)', cache?.value)}; ${verdict(`client (at least, from ${client?.from ?? line.clientBench})`, client?.value)}`
    + `; a blob not in the cache reads at the disk's ${disk?.value ?? '-'} MB/s (${line.diskBench})`
    + (push && pushBound !== undefined ? `; push CPU with the bytes cached ${push.value} CPU-s/GiB vs target ${pushBound} (the reference's ${refPush!.value} / ${pushRatio}) -> ${push.value <= pushBound ? 'within' : 'over'}` : '') + '\n');
  report.note({
    bench: line.name, reference_mb_s: ref.value, slipway_mb_s: mine?.value, needed_mb_s: need,
    page_cache_read_mb_s: cache?.value, reachable_from_cache: cache ? cache.value >= need : undefined,
    disk_limit: line.diskBench, disk_read_direct_mb_s: disk?.value,
    client_limit: client?.from, client_limit_mb_s: client?.value, trivial_server_pull_mb_s: trivial?.value, client_cpu_s_per_gib: client?.client_cpu_s_per_gib, reachable_from_client: client ? client.value >= need : undefined,
    push_cpu_s_per_gib: push?.value, push_cpu_target: pushBound,
  });
}

/**
 * One feasibility line for load figure `bench` (`<bench>_rps` needs `ratio` × the reference's,
 * `<bench>_p99` at most `p99Ms`): reachable when `client` against a server that only answers
 * drives at least that many req/s in this run; its p99 there is the least the client's own
 * queueing adds.
 */
function loadFeasibility(run: RunLimits, report: Report, bench: string, client: LoadClient, ratio: number, p99Ms: number): void {
  const ref = report.figures.find((f) => f.bench === `${bench}_rps` && f.server === 'reference');
  const mine = report.figures.find((f) => f.bench === `${bench}_rps` && f.server === 'slipway');
  const limit = run.loadLimits?.find((l) => l.client === client);
  if (!ref || !limit) return;
  const needs = Math.round(ratio * ref.value);
  const reachable = needs <= limit.rps;
  report.note({ bench: `${bench}_feasibility`, client, needs_rps: needs, ratio, reference_rps: ref.value, client_limit_rps: limit.rps, client_limit_p99_ms: limit.p99, slipway_rps: mine?.value, reachable, p99_target_ms: p99Ms });
  process.stderr.write(`${bench}_feasibility: ${ratio} × the reference needs ${needs} req/s; the ${client} client drives ${limit.rps} req/s (p99 ${limit.p99} ms, target ${p99Ms}) against a server that only answers: ${reachable ? 'reachable' : 'NOT reachable'}${mine ? `; Slipway ran at ${mine.value} req/s (${r2(mine.value / limit.rps)} of the client's limit)` : ''}\n`);
}

/** Prints the limits and both pull feasibility lines, and records the lines as notes. */
export function printFeasibility(run: RunLimits, report: Report): void {
  printTable(run);
  process.stderr.write('\n');
  for (const bench of ['push_1gib_single_patch', 'push_1gib_chunked_16mib', 'push_concurrent']) pushFeasibility(run, report, bench, target(bench, 'ratio'));
  pullFeasibility(run, report, { name: 'pull_after_push_feasibility', bench: 'pull_1gib', ratio: target('pull_1gib', 'ratio'), diskBench: 'disk_read_direct', clientBench: 'pull_limit_raw_single', sameShape: ['pull_1gib', 'pull_1gib_second', 'pull_1gib_cached'] });
  pullFeasibility(run, report, { name: 'pull_concurrent_feasibility', bench: 'pull_concurrent', ratio: target('pull_concurrent', 'ratio'), diskBench: 'disk_read_direct_concurrent', clientBench: 'pull_limit_raw_concurrent', sameShape: ['pull_concurrent'] });
  for (const [bench, client] of [['manifest_get_64c', 'undici'], ['manifest_get_64c_raw', 'raw'], ['blob_head_64c', 'raw']] as const) loadFeasibility(run, report, bench, client, target(`${bench}_rps`, 'ratio'), target(`${bench}_p99`, 'max'));
}
