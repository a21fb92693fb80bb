/**
 * The servers of the growth benchmark (bench/growth/run.ts), each on a data directory kept for
 * the whole run so that it can be restarted on its data (start-up time) and garbage-collected:
 * Slipway on the embedded store (LMDB + files) or on PostgreSQL + S3 (Ceph RGW), and the
 * reference (distribution 2.8.2, bench/servers/reference.ts) on its filesystem driver or on its
 * S3 driver (a bucket of its own on the same RGW).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { CreateBucketCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { startNode, type BenchNode } from '../cluster-nodes.js';
import { REFERENCE_BIN, referenceEnv, startReference, type ReferenceS3, type ReferenceTarget } from '../servers/reference.js';
import { basicAuth } from '../client.js';
import { trackDir } from '../cleanup.js';

const CLI = fileURLToPath(new URL('../../server/cli.js', import.meta.url));

/** What one GC run freed, and its wall time. */
export interface GcResult { wallMs: number; blobs: number; bytes: number }

/** A server under test that can be restarted on its data. */
export interface GrowthServer {
  /** `slipway`, `slipway@base` (another build, `--base`), `reference` or `reference (s3)`. */
  readonly name: string;
  /** Whether it is a Slipway build (V8 figures, heap snapshots). */
  readonly slipway: boolean;
  /** Registry base URL (changes on restart: free ports). */
  registry: string;
  /** PID of the server process now. */
  pid: number;
  /** Authorization header for registry requests, if any. */
  authorization?: string;
  /** Admin base URL serving /metrics (Slipway only). */
  admin?: string;
  /** Milliseconds from spawn to serving, of the last start. */
  startupMs: number;
  /** Stops the server and starts it again on the same data; sets `startupMs`. */
  restart(): Promise<void>;
  /** One garbage collection after deletions (the reference's needs the server stopped: it stops and restarts it). */
  gc(): Promise<GcResult>;
  /** Bytes on disk under the data directory (du), or null when the data is elsewhere (PostgreSQL, S3). */
  dataBytes(): number | null;
  stop(): Promise<void>;
}

/** Where Slipway keeps its data: `embedded` (data dir) or `cluster` (PostgreSQL + S3, test/helpers starters). */
export type Backend = 'embedded' | 'cluster';

/** Apparent bytes under `dir` (`du -sb`). */
function duBytes(dir: string): number {
  return Number(execFileSync('du', ['-sb', dir], { encoding: 'utf8' }).split('\t')[0]);
}

/**
 * Starts Slipway on a fresh data directory with `env` (the cluster's database and S3 settings,
 * or none), no online GC schedule and a GC grace of 0 (so the GC step frees what was deleted),
 * and creates the app `bench` with the operator's key. `build`: another build's server/cli.js
 * (default this checkout's) and the name its figures carry (default `slipway`).
 * @throws Error when the node does not start or the app cannot be created.
 */
export async function startGrowthSlipway(backend: Backend, env: Record<string, string>, build?: { name: string; cli?: string }): Promise<GrowthServer> {
  const cli = build?.cli ?? CLI;
  const dataDir = mkdtempSync(join(tmpdir(), 'slipway-growth-'));
  trackDir(dataDir);
  const fullEnv = { SLIPWAY_GC_INTERVAL: '0', SLIPWAY_GC_GRACE: '0', ...env };
  const start = async (): Promise<[BenchNode, number]> => {
    const t0 = performance.now();
    const node = await startNode(dataDir, fullEnv, cli);
    return [node, performance.now() - t0];
  };
  let [node, ms] = await start();
  const apiKey = node.apiKey;
  if (!apiKey) throw new Error('slipway gave no operator API key on a fresh data directory');
  const res = await request(`${node.urls.api}/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', accept: 'application/vnd.slipway+json; version=3' },
    body: JSON.stringify({ name: 'bench' }),
  });
  const text = await res.body.text();
  if (res.statusCode !== 201) throw new Error(`POST ${node.urls.api}/apps answered ${res.statusCode}: ${text.slice(0, 300)}`);
  const server: GrowthServer = {
    name: build?.name ?? 'slipway', slipway: true,
    registry: node.urls.registry, pid: node.pid, admin: node.urls.admin, startupMs: ms,
    authorization: basicAuth('_', apiKey),
    async restart() {
      await node.stop();
      [node, ms] = await start();
      Object.assign(server, { registry: node.urls.registry, pid: node.pid, admin: node.urls.admin, startupMs: ms });
    },
    async gc() {
      const t0 = performance.now();
      const out = await run(process.execPath, [cli, 'gc', '--json', '--data', dataDir], { ...process.env, SLIPWAY_LOG_LEVEL: 'warn', ...fullEnv });
      const wallMs = performance.now() - t0;
      const line = out.split('\n').filter((l) => l.startsWith('{')).pop();
      if (!line) throw new Error(`slipway gc printed no JSON:\n${out.slice(-2000)}`);
      const r = JSON.parse(line) as { blobs: { deleted: number; bytes: number }; orphans: { deleted: number; bytes: number } };
      return { wallMs, blobs: r.blobs.deleted + r.orphans.deleted, bytes: r.blobs.bytes + r.orphans.bytes };
    },
    dataBytes: () => (backend === 'embedded' ? duBytes(dataDir) : null),
    stop: () => node.stop(),
  };
  return server;
}

/**
 * Total size (bytes) of the objects of `bucket` under `prefix` (ListObjectsV2, 1,000 a page).
 * @throws the SDK's errors.
 */
async function bucketBytes(client: S3Client, bucket: string, prefix: string): Promise<number> {
  let bytes = 0;
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) bytes += o.Size ?? 0;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return bytes;
}

/** An S3 store for the reference: where (`store`, whose bucket this creates) and a client to measure it with. */
export interface GrowthReferenceS3 { store: ReferenceS3; client: S3Client }

/**
 * Starts the reference on a directory kept for the run: on its filesystem driver, or with `s3`
 * on its S3 driver (the bucket is created first; `dataBytes` and GC's bytes freed are then the
 * objects' sizes under the driver's root, `reference/`).
 * @throws Error when the server does not start, or the SDK's errors creating the bucket.
 */
export async function startGrowthReference(s3?: GrowthReferenceS3): Promise<GrowthServer> {
  const dir = mkdtempSync(join(tmpdir(), 'reference-growth-'));
  trackDir(dir);
  if (s3) {
    try {
      await s3.client.send(new CreateBucketCommand({ Bucket: s3.store.bucket }));
    } catch (e) {
      if ((e as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw e;
    }
  }
  const start = async (): Promise<[ReferenceTarget, number]> => {
    const t0 = performance.now();
    const t = await startReference(dir, s3?.store);
    return [t, performance.now() - t0];
  };
  let [target, ms] = await start();
  const stored = (): Promise<number> => (s3 ? bucketBytes(s3.client, s3.store.bucket, 'reference/') : Promise.resolve(duBytes(target.root)));
  const server: GrowthServer = {
    name: s3 ? 'reference (s3)' : 'reference', slipway: false,
    registry: target.registry, pid: target.pid, startupMs: ms,
    async restart() {
      await target.stop();
      [target, ms] = await start();
      Object.assign(server, { registry: target.registry, pid: target.pid, startupMs: ms });
    },
    async gc() {
      // distribution's garbage-collect runs on a stopped (or read-only) registry.
      await target.stop();
      const before = await stored();
      const t0 = performance.now();
      const out = await run(REFERENCE_BIN, ['garbage-collect', target.config], referenceEnv(s3 !== undefined));
      const wallMs = performance.now() - t0;
      const bytes = before - await stored();
      const blobs = out.split('\n').filter((l) => l.includes('blob eligible for deletion')).length;
      [target, ms] = await start();
      Object.assign(server, { registry: target.registry, pid: target.pid, startupMs: ms });
      return { wallMs, blobs, bytes };
    },
    dataBytes: () => (s3 ? null : duBytes(target.root)),
    stop: () => target.stop(),
  };
  return server;
}

/** Cluster settings for Slipway: a new server key, the database URL and the S3 settings. */
export function clusterEnv(databaseUrl: string, s3: Record<string, string>): Record<string, string> {
  return { SLIPWAY_DATABASE_URL: databaseUrl, SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64'), ...s3 };
}

/** Runs a command to its end; resolves with stdout+stderr, rejects on a non-zero exit. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    p.stdout.on('data', (d: Buffer) => chunks.push(d));
    p.stderr.on('data', (d: Buffer) => chunks.push(d));
    p.on('error', reject);
    p.on('close', (code) => {
      const out = Buffer.concat(chunks).toString('utf8');
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}:\n${out.slice(-2000)}`));
    });
  });
}
