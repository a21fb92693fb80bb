/**
 * `npm run bench:cluster`: the request paths of a node on the embedded LMDB store, one node on
 * PostgreSQL, and two nodes on that PostgreSQL, in one run (bench/README.md "Cluster mode").
 * For each setup, with 64 keep-alive connections spread evenly over the nodes (closed loop):
 * manifest GET by tag, blob HEAD, `GET /account` with an OAuth bearer token; sequentially: warm
 * push (HEAD both blobs, PUT the manifest, alternating nodes); then one large blob pushed through
 * every node at once and pulled back through another node. Each figure comes with CPU seconds
 * per request of the nodes and of PostgreSQL (utime+stime from /proc, postmaster and backends),
 * the requests/s one core of each would carry at that cost, and over the same window the CPU of
 * this client, of every other process on the machine, and steal.
 * The reference registry (Debian's docker-registry, bench/servers/reference.ts) answers the same
 * manifest GET and blob HEAD loads at the start and at the end of the run (`reference` rows),
 * and each Slipway read figure is printed with its ratio to their mean.
 * Settings: BENCH_CLUSTER_SECONDS (measured seconds per load figure, default 5),
 * BENCH_CLUSTER_BLOB_MIB (large blob per node, default 256), BENCH_CLUSTER_S3=1 (nodes on a
 * Ceph RGW bucket instead of one shared data directory; RGW's CPU then counts as "other").
 * PostgreSQL runs durable (fsync and synchronous_commit on). Prints JSON lines, then a table.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { request } from 'undici';
import pg from 'pg';
import { installCleanup, removeDir, trackDir } from './cleanup.js';
import { buildSmallImage, MANIFEST_V2, type SmallImage } from './image.js';
import { cpuSeconds, systemSeconds } from './procstat.js';
import { buildRequest, RawConnection } from './rawhttp.js';
import { round } from './stats.js';
import { closedLoop } from './workloads/load.js';
import { pushSmallImage, warmPushOnce } from './warm-push.js';
import { postgresSeconds, postmasterPid, startNode, type BenchNode } from './cluster-nodes.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { startS3Store } from '../test/helpers/s3-store.js';
import { referenceAvailable, startReference } from './servers/reference.js';

const SECONDS = Number(process.env.BENCH_CLUSTER_SECONDS ?? 5);
const BLOB_MIB = Number(process.env.BENCH_CLUSTER_BLOB_MIB ?? 256);
const CONNECTIONS = 64;
const REPO = 'bench/web';
const API_ACCEPT = 'application/vnd.slipway+json; version=3';

/** One setup under test. */
interface Setup { name: string; nodes: BenchNode[]; pgPid?: number; pgStats?: pg.Client; auth: string; token: string }

/** CPU readings at one moment. */
interface Snapshot { t: number; nodes: number; pg: number; client: NodeJS.CpuUsage; busy: number; steal: number; xacts: number }

/**
 * Transactions PostgreSQL has counted so far (pg_stat_database, commits and rollbacks; a
 * statement outside a transaction is one), minus this reading's own. Backends publish their
 * counts about once a second, so this waits until two readings 300 ms apart agree (at most 12 s).
 */
async function transactions(s: Setup): Promise<number> {
  if (!s.pgStats) return 0;
  const read = async () => Number((await s.pgStats!.query("SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()")).rows[0].n);
  let last = await read();
  let own = 1;
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await read();
    own++;
    if (now - last <= 1) return now - own;
    last = now;
  }
  return last - own;
}

async function snapshot(s: Setup): Promise<Snapshot> {
  const xacts = await transactions(s);
  return { ...readings(s), xacts };
}

/** The CPU readings of a snapshot, taken at once (no waiting). */
function readings(s: Setup): Omit<Snapshot, 'xacts'> {
  const sys = systemSeconds();
  return { t: performance.now(), nodes: s.nodes.reduce((a, n) => a + cpuSeconds(n.pid), 0), pg: s.pgPid ? postgresSeconds(s.pgPid) : 0, client: process.cpuUsage(), busy: sys.busy, steal: sys.steal };
}

/** CPU per unit of work between two snapshots, and the machine's other load in % of one CPU. */
async function costs(a: Snapshot, s: Setup, units: number, large = false): Promise<Record<string, number>> {
  const c = process.cpuUsage(a.client);
  const b = { ...readings(s), xacts: await transactions(s) };
  const secs = (b.t - a.t) / 1000;
  const client = (c.user + c.system) / 1e6;
  const nodes = b.nodes - a.nodes;
  const pg = b.pg - a.pg;
  const other = Math.max(0, b.busy - a.busy - nodes - pg - client);
  const pct = (x: number) => Math.round((x / secs) * 100);
  return {
    node_cpu_ms_per_unit: round((nodes / units) * 1000, 4), pg_cpu_ms_per_unit: round((pg / units) * 1000, 4),
    // Units one CPU second carries: requests, or for a large blob MB (10^6 bytes; units are GiB).
    per_node_core: nodes > 0 ? Math.round((units * (large ? 1073.74 : 1)) / nodes) : 0,
    per_db_core: pg > 0 ? Math.round((units * (large ? 1073.74 : 1)) / pg) : 0,
    db_transactions_per_unit: round((b.xacts - a.xacts) / units, 2),
    node_cpu_pct: pct(nodes), pg_cpu_pct: pct(pg), client_cpu_pct: pct(client), other_cpu_pct: pct(other), steal_cpu_pct: pct(b.steal - a.steal),
  };
}

const rows: Array<Record<string, unknown>> = [];
function emit(row: Record<string, unknown>): void {
  rows.push(row);
  console.log(JSON.stringify(row));
}

/** 64 raw connections over the nodes; each loop checks its answer with `ok`. */
async function load(s: Setup, figure: string, urlOf: (n: BenchNode) => URL, method: 'GET' | 'HEAD', headers: Record<string, string>, ok: (status: number, bytes: number) => boolean): Promise<void> {
  const conns = Array.from({ length: CONNECTIONS }, (_, i) => {
    const url = urlOf(s.nodes[i % s.nodes.length]!);
    return { conn: new RawConnection(url), req: buildRequest(method, url, headers) };
  });
  const fn = async (i: number) => { const r = await conns[i]!.conn.send(conns[i]!.req, method === 'HEAD'); return ok(r.status, r.bytes); };
  try {
    await closedLoop(CONNECTIONS, 1000, 2e6, fn);
    const a = await snapshot(s);
    const r = await closedLoop(CONNECTIONS, SECONDS * 1000, 2e6, fn);
    const cpu = await costs(a, s, r.requests);
    if (r.errors > 0) throw new Error(`${figure}: ${r.errors} of ${r.requests} wrong answers (${r.firstError ?? 'status or length'})`);
    emit({ bench: 'cluster', setup: s.name, figure, nodes: s.nodes.length, rps: r.rps, p50_ms: r.p50, p99_ms: r.p99, requests: r.requests, ...cpu });
  } finally {
    for (const c of conns) c.conn.close();
  }
}

async function call(method: string, url: string, headers: Record<string, string>, body?: Buffer | Readable, length?: number): Promise<{ status: number; bytes: number; text: string; digest: string }> {
  const r = await request(url, { method: method as 'GET', headers: { ...headers, ...(length !== undefined ? { 'content-length': String(length) } : {}) }, body });
  const h = createHash('sha256');
  let bytes = 0;
  let text = '';
  for await (const chunk of r.body) { h.update(chunk as Buffer); bytes += (chunk as Buffer).length; if (text.length < 300) text += (chunk as Buffer).toString('utf8', 0, 300); }
  return { status: r.statusCode, bytes, text, digest: 'sha256:' + h.digest('hex') };
}

/** Warm push, sequential: HEAD config and layer, PUT the manifest under a new tag; nodes alternate. */
async function warmPush(s: Setup, img: SmallImage): Promise<void> {
  const auth = { authorization: s.auth };
  const lat: number[] = [];
  const a = await snapshot(s);
  const deadline = performance.now() + SECONDS * 1000;
  for (let i = 0; performance.now() < deadline; i++) {
    const n = s.nodes[i % s.nodes.length]!;
    const t0 = performance.now();
    await warmPushOnce(n.urls.registry, REPO, auth, img, `warm-${s.name}-${i}`);
    lat.push(performance.now() - t0);
  }
  const cpu = await costs(a, s, lat.length);
  lat.sort((x, y) => x - y);
  emit({ bench: 'cluster', setup: s.name, figure: 'warm_push', nodes: s.nodes.length, pushes: lat.length, p50_ms: round(lat[Math.floor(lat.length / 2)]!, 2), p99_ms: round(lat[Math.ceil(lat.length * 0.99) - 1]!, 2), unit: 'push (2 HEAD + 1 PUT)', ...cpu });
}

/** One large blob per node pushed through it at once, then each pulled through the next node. */
async function largeBlobs(s: Setup): Promise<void> {
  const auth = { authorization: s.auth };
  const blobs = s.nodes.map(() => {
    const chunk = randomBytes(1024 * 1024);
    const h = createHash('sha256');
    for (let i = 0; i < BLOB_MIB; i++) h.update(chunk);
    return { chunk, digest: 'sha256:' + h.digest('hex') };
  });
  const total = BLOB_MIB * 1024 * 1024;
  const body = (chunk: Buffer) => Readable.from((function* () { for (let i = 0; i < BLOB_MIB; i++) yield chunk; })());
  for (const phase of ['push', 'pull'] as const) {
    const a = await snapshot(s);
    const t0 = performance.now();
    await Promise.all(s.nodes.map(async (n, i) => {
      const b = blobs[i]!;
      if (phase === 'push') {
        const r = await call('POST', `${n.urls.registry}/v2/${REPO}/blobs/uploads/?digest=${b.digest}`, { ...auth, 'content-type': 'application/octet-stream' }, body(b.chunk), total);
        if (r.status !== 201) throw new Error(`large push: ${r.status} ${r.text}`);
      } else {
        const via = s.nodes[(i + 1) % s.nodes.length]!;
        const r = await call('GET', `${via.urls.registry}/v2/${REPO}/blobs/${b.digest}`, auth);
        if (r.status !== 200 || r.digest !== b.digest) throw new Error(`large pull: ${r.status}, ${r.bytes} bytes, digest ${r.digest === b.digest ? 'ok' : 'WRONG'}`);
      }
    }));
    const secs = (performance.now() - t0) / 1000;
    const cpu = await costs(a, s, (total * s.nodes.length) / 1024 ** 3, true);
    emit({ bench: 'cluster', setup: s.name, figure: `large_${phase}`, nodes: s.nodes.length, mib_per_node: BLOB_MIB, mb_per_s_per_node: round(total / 1e6 / secs, 1), mb_per_s_total: round((total * s.nodes.length) / 1e6 / secs, 1), unit: 'GiB', ...cpu });
  }
}

/** Pushes the small image through the first node and makes an OAuth token. */
async function prepare(s: Setup, apiKey: string, img: SmallImage): Promise<void> {
  const n = s.nodes[0]!;
  const app = await call('POST', `${n.urls.api}/apps`, { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: API_ACCEPT }, Buffer.from(JSON.stringify({ name: 'bench' })));
  if (app.status !== 201 && app.status !== 422 && app.status !== 409) throw new Error(`POST /apps ${app.status} ${app.text}`);
  await pushSmallImage(n.urls.registry, REPO, { authorization: s.auth }, img);
  const r = await request(`${n.urls.api}/oauth/authorizations`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: API_ACCEPT }, body: JSON.stringify({ description: 'bench' }) });
  const j = await r.body.json() as { access_token?: { token: string } };
  if (r.statusCode !== 201 || !j.access_token) throw new Error(`POST /oauth/authorizations ${r.statusCode}`);
  s.token = j.access_token.token;
}

async function measure(s: Setup, img: SmallImage): Promise<void> {
  process.stderr.write(`bench: ${s.name}\n`);
  await load(s, 'manifest_get', (n) => new URL(`${n.urls.registry}/v2/${REPO}/manifests/latest`), 'GET', { authorization: s.auth, accept: MANIFEST_V2 }, (st, b) => st === 200 && b === img.manifest.length);
  await load(s, 'blob_head', (n) => new URL(`${n.urls.registry}/v2/${REPO}/blobs/${img.layer.digest}`), 'HEAD', { authorization: s.auth }, (st) => st === 200);
  await load(s, 'account_get', (n) => new URL(`${n.urls.api}/account`), 'GET', { authorization: `Bearer ${s.token}`, accept: API_ACCEPT }, (st) => st === 200);
  await warmPush(s, img);
  await largeBlobs(s);
}

/** The reference registry's manifest GET and blob HEAD (no auth), as setup `name`. */
async function measureReference(name: string, img: SmallImage): Promise<void> {
  if (!referenceAvailable()) return;
  const ref = await startReference();
  try {
    for (const b of [img.config, img.layer]) {
      // POST opens a session (distribution ignores a monolithic body), PUT sends the bytes.
      const open = await request(`${ref.registry}/v2/${REPO}/blobs/uploads/`, { method: 'POST' });
      await open.body.dump();
      const at = new URL(String(open.headers.location), ref.registry);
      at.searchParams.set('digest', b.digest);
      const r = await call('PUT', at.href, { 'content-type': 'application/octet-stream' }, b.bytes, b.bytes.length);
      if (r.status !== 201) throw new Error(`reference blob push ${r.status} ${r.text}`);
    }
    const m = await call('PUT', `${ref.registry}/v2/${REPO}/manifests/latest`, { 'content-type': MANIFEST_V2 }, img.manifest, img.manifest.length);
    if (m.status !== 201) throw new Error(`reference manifest push ${m.status} ${m.text}`);
    const node: BenchNode = { urls: { registry: ref.registry, api: '', upload: '', admin: '' }, pid: ref.pid, stop: () => ref.stop() };
    const s: Setup = { name, nodes: [node], auth: 'none', token: '' };
    process.stderr.write(`bench: ${name}\n`);
    await load(s, 'manifest_get', (n) => new URL(`${n.urls.registry}/v2/${REPO}/manifests/latest`), 'GET', { accept: MANIFEST_V2 }, (st, b) => st === 200 && b === img.manifest.length);
    await load(s, 'blob_head', (n) => new URL(`${n.urls.registry}/v2/${REPO}/blobs/${img.layer.digest}`), 'HEAD', {}, (st) => st === 200);
  } finally {
    await ref.stop();
  }
}

/** Each Slipway read figure's ratio to the reference's mean of the same figure (rps_vs_reference). */
function addRatios(): void {
  for (const figure of ['manifest_get', 'blob_head']) {
    const refs = rows.filter((r) => String(r.setup).startsWith('reference') && r.figure === figure).map((r) => Number(r.rps));
    if (refs.length === 0) continue;
    const mean = refs.reduce((a, b) => a + b, 0) / refs.length;
    for (const r of rows) if (r.figure === figure && !String(r.setup).startsWith('reference')) r.rps_vs_reference = round(Number(r.rps) / mean, 2);
  }
}

async function main(): Promise<void> {
  installCleanup();
  const img = await buildSmallImage();
  const dir = (p: string) => { const d = mkdtempSync(join(tmpdir(), p)); trackDir(d); return d; };
  const basic = (key: string) => 'Basic ' + Buffer.from(`_:${key}`).toString('base64');
  console.log(JSON.stringify({ bench: 'cluster-environment', seconds: SECONDS, blob_mib: BLOB_MIB, connections: CONNECTIONS, s3: process.env.BENCH_CLUSTER_S3 === '1', note: 'one machine: client, nodes, PostgreSQL (durable) share its CPUs; per_node_core / per_db_core = units one CPU second of that process carries at the measured cost; *_pct in % of one CPU over the window' }));

  await measureReference('reference-a', img);
  const lmdbDir = dir('slipway-bench-lmdb-');
  const solo = await startNode(lmdbDir, {});
  try {
    const s: Setup = { name: 'lmdb-1', nodes: [solo], auth: basic(solo.apiKey!), token: '' };
    await prepare(s, solo.apiKey!, img);
    await measure(s, img);
  } finally {
    await solo.stop();
    removeDir(lmdbDir);
  }

  const db = await startPostgres({ durable: true });
  const s3 = process.env.BENCH_CLUSTER_S3 === '1' ? await startS3Store() : undefined;
  const nodes: BenchNode[] = [];
  let stats: pg.Client | undefined;
  try {
    const shared = dir('slipway-bench-cluster-');
    const env = { SLIPWAY_DATABASE_URL: db.connectionString, SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64'), ...(s3 ? s3.env('bench/', { SLIPWAY_S3_PART_SIZE: '16' }) : {}) };
    nodes.push(await startNode(shared, env));
    const apiKey = nodes[0]!.apiKey!;
    const pgPid = postmasterPid(join(db.dir, 'data'));
    const pgStats = new pg.Client({ connectionString: db.connectionString });
    await pgStats.connect();
    stats = pgStats;
    const one: Setup = { name: s3 ? 'pgs3-1' : 'pg-1', nodes: [nodes[0]!], pgPid, pgStats, auth: basic(apiKey), token: '' };
    await prepare(one, apiKey, img);
    await measure(one, img);
    nodes.push(await startNode(shared, env));
    await measure({ ...one, name: s3 ? 'pgs3-2' : 'pg-2', nodes: [...nodes] }, img);
  } finally {
    await stats?.end();
    for (const n of nodes) await n.stop();
    await s3?.stop();
    await db.stop();
  }
  await measureReference('reference-b', img);
  addRatios();
  for (const r of rows) if (r.rps_vs_reference !== undefined) console.log(JSON.stringify({ bench: 'cluster-ratio', setup: r.setup, figure: r.figure, rps: r.rps, rps_vs_reference: r.rps_vs_reference, p99_ms: r.p99_ms }));
  process.stderr.write('\nu = request (push for warm_push, GiB for large_*); /core = u per CPU second (MB for large_*)\nsetup       figure        rps/MB/s  ×ref  p50 ms  p99 ms  node ms/u  pg ms/u  /node core  /db core  db tx/u  other%  steal%\n');
  for (const r of rows) {
    const rate = r.rps ?? r.mb_per_s_per_node ?? '';
    process.stderr.write(`${String(r.setup).padEnd(11)} ${String(r.figure).padEnd(13)} ${String(rate).padStart(8)} ${String(r.rps_vs_reference ?? '').padStart(5)} ${String(r.p50_ms ?? '').padStart(7)} ${String(r.p99_ms ?? '').padStart(7)} ${String(r.node_cpu_ms_per_unit).padStart(10)} ${String(r.pg_cpu_ms_per_unit).padStart(8)} ${String(r.per_node_core).padStart(11)} ${String(r.per_db_core).padStart(9)} ${String(r.db_transactions_per_unit).padStart(8)} ${String(r.other_cpu_pct).padStart(7)} ${String(r.steal_cpu_pct).padStart(7)}\n`);
  }
}

main().then(() => process.exit(0), (e) => { process.stderr.write(`bench: ${(e as Error).stack ?? String(e)}\n`); process.exit(1); });
