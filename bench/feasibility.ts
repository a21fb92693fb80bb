/**
 * The end of a bench run: the machine's limits measured in it (bench/limits.ts), the pull
 * client's limit (bench/pull-limit.ts), and for each pull target measured right after its push
 * whether it is reachable on this machine: `pull_after_push_feasibility` (pull_1gib ≥ 2 × the
 * reference) and `pull_concurrent_feasibility` (pull_concurrent ≥ 1.5 × the reference). A target
 * is reachable from the disk when the disk's `O_DIRECT` read speed at the pull's concurrency is
 * at least what it needs (Slipway's pushed bytes are not in the page cache), and from the client
 * when the bench's own pull client is: its speed against a server serving from memory, or its
 * fastest pull of the same shape from either registry in this run when that was faster (the
 * trivial server, one Node thread writing 4 MiB buffers, can be the slower side). Caching pushed
 * bytes instead would add the buffered write's CPU to every push: the line says whether the push
 * would still meet its CPU bound.
 */
import type { Limit } from './limits.js';
import type { PullLimit } from './pull-limit.js';
import type { Report } from './report.js';

/** What the feasibility lines read from the run. */
export interface RunLimits {
  limits: Limit[];
  pullLimits: PullLimit[];
  sha256Rate: number;
  /** CPU seconds per GiB of sha256 in this run; the push CPU bound is twice it. */
  hashSecondsPerGiB: number;
}

const r2 = (x: number) => Math.round(x * 100) / 100;

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
 * One feasibility line for pull figure `bench` (needs `ratio` × the reference), with the disk
 * limit `diskBench` and the raw client limit `clientBench`.
 */
function pullFeasibility(run: RunLimits, report: Report, line: { name: string; bench: string; ratio: number; diskBench: string; clientBench: string; sameShape: string[] }): void {
  const ref = report.figures.find((f) => f.bench === line.bench && f.server === 'reference');
  const mine = report.figures.find((f) => f.bench === line.bench && f.server === 'slipway');
  const disk = run.limits.find((l) => l.bench === line.diskBench);
  const trivial = run.pullLimits.find((p) => p.bench === line.clientBench);
  // The client pulled at least this fast in this run: against the trivial server, or against
  // either registry in a pull of the same shape (the trivial server can be the slower side).
  const seen = report.figures.filter((f) => line.sameShape.includes(f.bench) && f.unit === 'MB/s').sort((a, b) => b.value - a.value)[0];
  const clientBest = Math.max(trivial?.value ?? 0, seen?.value ?? 0);
  const client = trivial || seen ? { value: clientBest, client_cpu_s_per_gib: trivial?.client_cpu_s_per_gib, from: seen && seen.value > (trivial?.value ?? 0) ? `${seen.bench} on ${seen.server}` : line.clientBench } : undefined;
  const buffered = run.limits.find((l) => l.bench === 'buffered_write_sync');
  const push = report.figures.find((f) => f.bench === 'server_cpu_per_gib_push' && f.server === 'slipway');
  if (!ref || (!disk && !client)) return;
  const need = Math.round(line.ratio * ref.value);
  const verdict = (what: string, v: number | undefined) => (v === undefined ? `${what} not measured` : `${what} ${v} MB/s -> ${v >= need ? 'reachable' : 'NOT reachable'}`);
  const bound = r2(2 * run.hashSecondsPerGiB);
  const cachedPush = push && buffered ? r2(push.value + buffered.cpu_seconds_per_gib) : undefined;
  process.stderr.write(`${line.bench}: ${line.ratio} x reference ${ref.value} = ${need} MB/s needed (slipway ${mine?.value ?? '-'}); ${verdict(`disk (${line.diskBench})`, disk?.value)}; ${verdict(`client (at least, from ${client?.from ?? line.clientBench})`, client?.value)}`
    + (cachedPush !== undefined ? `; caching pushed bytes instead: push ${push!.value} + ${buffered!.cpu_seconds_per_gib} = ${cachedPush} CPU-s/GiB vs bound ${bound} -> ${cachedPush <= bound ? 'within' : 'breaks'} the push CPU bound` : '') + '\n');
  report.note({
    bench: line.name, reference_mb_s: ref.value, slipway_mb_s: mine?.value, needed_mb_s: need,
    disk_limit: line.diskBench, disk_read_direct_mb_s: disk?.value, reachable_from_disk: disk ? disk.value >= need : undefined,
    client_limit: client?.from, client_limit_mb_s: client?.value, trivial_server_pull_mb_s: trivial?.value, client_cpu_s_per_gib: client?.client_cpu_s_per_gib, reachable_from_client: client ? client.value >= need : undefined,
    cache_on_push_cpu_s_per_gib: buffered?.cpu_seconds_per_gib, push_cpu_with_caching: cachedPush, push_cpu_target: bound,
  });
}

/** Prints the limits and both pull feasibility lines, and records the lines as notes. */
export function printFeasibility(run: RunLimits, report: Report): void {
  printTable(run);
  process.stderr.write('\n');
  pullFeasibility(run, report, { name: 'pull_after_push_feasibility', bench: 'pull_1gib', ratio: 2, diskBench: 'disk_read_direct', clientBench: 'pull_limit_raw_single', sameShape: ['pull_1gib', 'pull_1gib_second', 'pull_1gib_cached'] });
  pullFeasibility(run, report, { name: 'pull_concurrent_feasibility', bench: 'pull_concurrent', ratio: 1.5, diskBench: 'disk_read_direct_concurrent', clientBench: 'pull_limit_raw_concurrent', sameShape: ['pull_concurrent'] });
}
