/**
 * `npm run bench:contention`: concurrent manifest PUTs, then DELETEs by digest, of images that
 * share a base layer (every PUT and DELETE changes that layer's reference count), 8 and 32 at a
 * time, into one repository and spread over 10, on Slipway's embedded store (LMDB), on Slipway
 * with PostgreSQL metadata (when PostgreSQL is installed), and on the reference (distribution
 * 2.8.2, filesystem driver) in the same run (bench/README.md "Contention").
 *
 *   npm run bench:contention -- [--images 320] [--seed N] [--only slipway|postgres|reference]
 *
 * Each case pushes `--images` images' blobs first (untimed), then times every manifest PUT with
 * `width` in flight, checks that each image answers a manifest HEAD by digest, times every DELETE
 * with `width` in flight, and checks that each is gone (404). Servers run one after the other,
 * each on a fresh data directory and first warmed up by 16 untimed image pushes. Prints a JSON line per case on stdout and a table on stderr:
 * p50/p99/max (ms) and the count of 5xx and of other unexpected answers, with the other
 * processes' CPU and the steal over each case.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { installCleanup } from './cleanup.js';
import { RegistryClient } from './client.js';
import { MANIFEST_V2 } from './image.js';
import { CpuWindow } from './procstat.js';
import { referenceAvailable } from './servers/reference.js';
import { percentile, round } from './stats.js';
import { makeImage, pushBlob, pushImage, sharedLayer } from './growth/images.js';
import { clusterEnv, startGrowthReference, startGrowthSlipway, type GrowthServer } from './growth/servers.js';
import { each } from './growth/gc-step.js';
import { formatTable } from './growth/table.js';
import { postgresAvailable, startPostgres } from '../test/helpers/postgres.js';

const { values } = parseArgs({
  options: { images: { type: 'string', default: '320' }, seed: { type: 'string' }, only: { type: 'string' } },
});
const IMAGES = Number(values.images);
if (!Number.isInteger(IMAGES) || IMAGES < 32) throw new Error(`--images: a whole number ≥ 32, not "${values.images}"`);
const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const WIDTHS = [8, 32];
const SPREADS = [1, 10];
/** Concurrency of the untimed blob uploads before each case. */
const SETUP_CONCURRENCY = 8;

/** The timed answers of one kind of request in one case. */
interface Timed { ms: Float64Array; n: number; errors5xx: number; otherErrors: number; first?: string; /** Per request: answered `ok`. */ ok: boolean[] }

/** One case's figures on one server (also a JSON line). */
interface CaseRow {
  bench: 'contention'; server: string; width: number; repositories: number; images: number;
  put_p50_ms: number; put_p99_ms: number; put_max_ms: number; put_5xx: number; put_other_errors: number;
  delete_p50_ms: number; delete_p99_ms: number; delete_max_ms: number; delete_5xx: number; delete_other_errors: number;
  /** The first unexpected answer, if any (status and the start of its body). */
  first_error: string | null;
  load1: number; server_cpu_pct: number; other_cpu_pct: number; steal_cpu_pct: number;
}

/** Sends `count` requests made by `req(i)` `width` at a time, timing each and counting the answers other than `ok`. */
async function timed(client: RegistryClient, count: number, width: number, ok: number, req: (i: number) => [string, string, Record<string, string>, Buffer?]): Promise<Timed> {
  const out: Timed = { ms: new Float64Array(count), n: 0, errors5xx: 0, otherErrors: 0, ok: new Array<boolean>(count).fill(false) };
  await each(Array.from({ length: count }, (_, i) => i), width, async (i) => {
    const [method, path, headers, body] = req(i);
    const t0 = performance.now();
    const r = await client.call(method, path, { headers, body });
    out.ms[out.n++] = performance.now() - t0;
    if (r.status === ok) { out.ok[i] = true; return; }
    if (r.status >= 500) out.errors5xx++;
    else out.otherErrors++;
    out.first ??= `${method} ${path}: ${r.status} ${r.body.toString('utf8').slice(0, 200)}`;
  });
  return out;
}

/** Every image's manifest answers HEAD by digest with `status`. @throws Error naming the first that does not. */
async function expectAll(client: RegistryClient, images: Array<{ repo: string; digest: string }>, status: number): Promise<void> {
  await each(images, SETUP_CONCURRENCY, async ({ repo, digest }) => {
    await client.expect([status], 'HEAD', `/v2/${repo}/manifests/${digest}`, { headers: { accept: MANIFEST_V2 } });
  });
}

/** One case on `server`: `IMAGES` images over `spread` repositories, PUT then DELETE `width` at a time. */
async function runCase(server: GrowthServer, width: number, spread: number, caseIndex: number): Promise<CaseRow> {
  const client = new RegistryClient(server.registry, server.authorization, Math.max(width, SETUP_CONCURRENCY));
  try {
    const repos = Array.from({ length: spread }, (_, i) => `bench/c${width}x${spread}r${i}`);
    const base = sharedLayer(seed + caseIndex);
    for (const repo of repos) await pushBlob(client, repo, base.blob);
    const images = Array.from({ length: IMAGES }, (_, i) => {
      const { blobs, manifest } = makeImage(seed + caseIndex, i, base);
      return { repo: repos[i % spread]!, blobs, manifest, digest: 'sha256:' + createHash('sha256').update(manifest).digest('hex') };
    });
    await each(images, SETUP_CONCURRENCY, async (img) => {
      for (const b of img.blobs) if (b.digest !== base.blob.digest) await pushBlob(client, img.repo, b);
    });
    const load1 = round(loadavg()[0]!, 1);
    const cpu = new CpuWindow(server.pid);
    const puts = await timed(client, IMAGES, width, 201, (i) => ['PUT', `/v2/${images[i]!.repo}/manifests/t${i}`, { 'content-type': MANIFEST_V2 }, images[i]!.manifest]);
    // An image whose PUT failed is counted above, not checked (its HEAD would rightly be 404).
    await expectAll(client, images.filter((_, i) => puts.ok[i]), 200);
    const dels = await timed(client, IMAGES, width, 202, (i) => ['DELETE', `/v2/${images[i]!.repo}/manifests/${images[i]!.digest}`, {}]);
    const c = cpu.end();
    await expectAll(client, images.filter((_, i) => puts.ok[i] && dels.ok[i]), 404);
    const q = (t: Timed, p: number) => round(percentile(t.ms, t.n, p), 1);
    return {
      bench: 'contention', server: server.name, width, repositories: spread, images: IMAGES,
      put_p50_ms: q(puts, 50), put_p99_ms: q(puts, 99), put_max_ms: q(puts, 100), put_5xx: puts.errors5xx, put_other_errors: puts.otherErrors,
      delete_p50_ms: q(dels, 50), delete_p99_ms: q(dels, 99), delete_max_ms: q(dels, 100), delete_5xx: dels.errors5xx, delete_other_errors: dels.otherErrors,
      first_error: puts.first ?? dels.first ?? null,
      load1, server_cpu_pct: c.server_cpu_pct, other_cpu_pct: c.other_cpu_pct, steal_cpu_pct: c.steal_cpu_pct,
    };
  } finally {
    await client.close();
  }
}

/**
 * Pushes a few images untimed, 8 at a time, before the first case: a server in service has run
 * its first requests (worker threads started, code paths compiled) long before a burst of PUTs.
 */
async function warmUp(server: GrowthServer): Promise<void> {
  const client = new RegistryClient(server.registry, server.authorization, SETUP_CONCURRENCY);
  try {
    await each(Array.from({ length: 16 }, (_, i) => i), SETUP_CONCURRENCY, async (i) => { await pushImage(client, seed, 1_000_000 + i, 'bench/warm', `w${i}`); });
  } finally {
    await client.close();
  }
}

const COLUMNS: Array<[string, (r: CaseRow) => unknown]> = [
  ['server', (r) => r.server], ['width', (r) => r.width], ['repos', (r) => r.repositories],
  ['PUT p50/p99/max ms', (r) => `${r.put_p50_ms} / ${r.put_p99_ms} / ${r.put_max_ms}`], ['PUT 5xx/other', (r) => `${r.put_5xx}/${r.put_other_errors}`],
  ['DELETE p50/p99/max ms', (r) => `${r.delete_p50_ms} / ${r.delete_p99_ms} / ${r.delete_max_ms}`], ['DELETE 5xx/other', (r) => `${r.delete_5xx}/${r.delete_other_errors}`],
  ['load1', (r) => r.load1], ['server%', (r) => r.server_cpu_pct], ['other%', (r) => r.other_cpu_pct], ['steal%', (r) => r.steal_cpu_pct],
];

/** The servers asked for, each started when its turn comes (one at a time). */
function servers(): Array<{ name: string; start: () => Promise<{ server: GrowthServer; stop: () => Promise<void> }> }> {
  const out: ReturnType<typeof servers> = [];
  const wanted = (n: string) => !values.only || values.only === n;
  if (wanted('slipway')) {
    out.push({ name: 'slipway', start: async () => { const server = await startGrowthSlipway('embedded', {}); return { server, stop: () => server.stop() }; } });
  }
  if (wanted('postgres')) {
    if (!postgresAvailable()) process.stderr.write('contention: PostgreSQL not installed (apt-get install postgresql-15): slipway on PostgreSQL skipped\n');
    else out.push({ name: 'slipway-postgres', start: async () => {
      const db = await startPostgres({ durable: true });
      const server = await startGrowthSlipway('cluster', clusterEnv(db.connectionString, {}), { name: 'slipway-postgres' });
      return { server, stop: async () => { await server.stop(); await db.stop(); } };
    } });
  }
  if (wanted('reference')) {
    if (!referenceAvailable()) process.stderr.write('contention: docker-registry not installed (apt-get install docker-registry): reference skipped\n');
    else out.push({ name: 'reference', start: async () => { const server = await startGrowthReference(); return { server, stop: () => server.stop() }; } });
  }
  return out;
}

async function main(): Promise<void> {
  installCleanup();
  process.stdout.write(JSON.stringify({ bench: 'contention_environment', seed, images: IMAGES, widths: WIDTHS, spreads: SPREADS, load: loadavg().map((l) => round(l, 2)), node: process.version }) + '\n');
  const rows: CaseRow[] = [];
  for (const { name, start } of servers()) {
    process.stderr.write(`contention: ${name}\n`);
    const { server, stop } = await start();
    try {
      await warmUp(server);
      let caseIndex = 0;
      for (const width of WIDTHS) {
        for (const spread of SPREADS) {
          const row = await runCase(server, width, spread, caseIndex++);
          process.stdout.write(JSON.stringify(row) + '\n');
          rows.push(row);
        }
      }
    } finally {
      await stop();
    }
  }
  process.stderr.write('\n' + formatTable(COLUMNS, rows));
  process.stderr.write(`each case: ${IMAGES} images sharing one base layer; latencies ms; 5xx/other: answers other than 201 (PUT) or 202 (DELETE); server%/other%/steal%: CPU % of one core over the case\n`);
  for (const r of rows) if (r.first_error) process.stderr.write(`${r.server} width ${r.width} over ${r.repositories}: first unexpected answer: ${r.first_error}\n`);
}

main().then(() => process.exit(0), (e) => { process.stderr.write(`contention: ${(e as Error).stack ?? String(e)}\n`); process.exit(1); });
