/**
 * Cluster test plumbing: two `slipway serve` nodes on one real PostgreSQL and one real Ceph RGW
 * bucket (SLIPWAY_BLOB_STORE=s3), each with its own data directory (only its upload sessions
 * live there) and one shared server key (SLIPWAY_SERVER_KEY); plus image pushes that retry the
 * way a client does when GC took a blob between its upload and the manifest PUT, and the checks
 * that what was acknowledged is served intact by a node.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Test } from 'tap';
import { startInProcess, startSpawned, type InProcessSlipway, type SpawnedSlipway } from './harness.js';
import { startPostgres, type Postgres } from './postgres.js';
import { startS3Store, type S3Store } from './s3-store.js';
import { tempDir, runCli } from './server.js';
import { basic, errCode, http } from './http.js';
import { pushBlob, putManifest, type Target } from './registry.js';
import { sha256 } from './image.js';

/**
 * Starts the stores nodes share: a real PostgreSQL and a real Ceph RGW (`s3Options`: its
 * memstore size), both stopped by `t`'s teardown.
 */
export async function startSharedStores(t: Test, s3Options: Parameters<typeof startS3Store>[0] = {}): Promise<{ db: Postgres; s3: S3Store }> {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const s3 = await startS3Store(s3Options);
  t.teardown(() => s3.stop());
  return { db, s3 };
}

/** A running two-node cluster. */
export interface Cluster {
  db: Postgres;
  s3: S3Store;
  a: SpawnedSlipway;
  b: SpawnedSlipway;
  /** The operator's API key (from the credentials file of whichever node created the operator). */
  operatorKey: string;
  /** Settings every node (and an operator command such as `slipway fsck`) is given. */
  env: Record<string, string>;
  /** Node A's own settings on top of `env` (its node name, `envA`): for starting A again. */
  envA: Record<string, string>;
  /** `slipway fsck --full --json` on the cluster's stores: the parsed report. */
  fsck(): Promise<{ problems: Array<{ kind: string; subject: string; detail: string }>; checked: Record<string, number> }>;
}

/**
 * Starts PostgreSQL, RGW and two spawned nodes at once (both listening before any traffic).
 * `envA`/`envB` add settings per node (e.g. a GC schedule on one). Everything is stopped by `t`'s
 * teardown, nodes first.
 */
export async function startCluster(t: Test, opts: { prefix: string; envA?: Record<string, string>; envB?: Record<string, string> }): Promise<Cluster> {
  const { db, s3 } = await startSharedStores(t);
  const env = { ...s3.env(opts.prefix), SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64'), SLIPWAY_DATABASE_URL: db.connectionString };
  const dirs = [tempDir(), tempDir()];
  t.teardown(() => { for (const d of dirs) d.cleanup(); });
  // Each node its own name (SLIPWAY_NODE_NAME): both run on this host, whose name is the default.
  const own = [{ SLIPWAY_NODE_NAME: 'node-a', ...opts.envA }, { SLIPWAY_NODE_NAME: 'node-b', ...opts.envB }];
  const [a, b] = await Promise.all(own.map((extra, i) => startSpawned({ dataDir: dirs[i]!.dir, env: { ...env, ...extra }, startTimeoutMs: 120_000 })));
  t.teardown(async () => { await Promise.all([a!.stop(), b!.stop()]); });
  const operatorKey = a!.apiKey ?? b!.apiKey;
  if (!operatorKey) throw new Error(`no node wrote the operator's credentials:\n${a!.output()}\n${b!.output()}`);
  return {
    db, s3, a: a!, b: b!, operatorKey, env, envA: own[0]!,
    fsck: async () => {
      const r = await runCli(['fsck', '--full', '--json', '--data', dirs[0]!.dir], env);
      const line = r.stdout.trim().split('\n').pop() ?? '';
      try { return JSON.parse(line); } catch { throw new Error(`fsck: exit ${r.code}\n${r.stdout}\n${r.stderr}`); }
    },
  };
}

/** An image held in memory: config, layers and the manifest naming them. */
export interface MemImage { manifest: Buffer; digest: string; blobs: Buffer[] }

/** A v2 schema 2 manifest over `config` and `layers` (sizes and digests computed here). */
export function memImage(config: Buffer, layers: Buffer[]): MemImage {
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha256(config) },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.length, digest: sha256(l) })),
  }));
  return { manifest, digest: sha256(manifest), blobs: [config, ...layers] };
}

/**
 * What one push ended with: acknowledged (201 on the manifest) or the last refusal; `restarts`
 * names why each earlier attempt was sent again (the manifest PUT's status and error code).
 */
export interface PushOutcome { acked: boolean; attempts: number; last: string; restarts: string[] }

/**
 * Pushes an image the way docker does (HEAD each blob, upload the missing ones, PUT the
 * manifest); when the PUT answers MANIFEST_BLOB_UNKNOWN (GC removed a blob between its upload
 * and the PUT, engine/registry/gc.ts) the client starts over, and after a 503 it waits the
 * Retry-After and sends again (as docker and containerd do), up to `attempts` times in all; a
 * blob upload answered 503 is sent once more after its Retry-After.
 */
export async function pushWithRetry(target: Target, repo: string, tag: string, img: MemImage, attempts = 10): Promise<PushOutcome> {
  let last = '';
  const restarts: string[] = [];
  for (let i = 1; i <= attempts; i++) {
    if (i > 1) restarts.push(last.split(' ', 2).join(' '));
    for (const blob of img.blobs) {
      const head = await http('HEAD', `${target.registry}/v2/${repo}/blobs/${sha256(blob)}`, { headers: target.auth });
      if (head.status === 200) continue;
      let r = await pushBlob(target, repo, blob);
      // A 503 with Retry-After (the upload's transaction kept conflicting, e.g. with GC taking
      // the same blob's record; nothing was recorded): wait as told and upload again, once.
      const retryAfter = r.status === 503 ? Number(r.headers['retry-after']) : NaN;
      if (retryAfter > 0) {
        await new Promise((done) => setTimeout(done, retryAfter * 1000));
        r = await pushBlob(target, repo, blob);
      }
      if (r.status !== 201) throw new Error(`blob upload ${r.status} ${r.text}`);
    }
    const m = await putManifest(target, repo, tag, img.manifest);
    if (m.status === 201) return { acked: true, attempts: i, last: '', restarts };
    last = `${m.status} ${errCode(m) ?? ''} ${m.text.slice(0, 300)}`;
    // A 503 with Retry-After (the store too contended or away; nothing was written): wait as told, send again.
    const retryAfter = m.status === 503 ? Number(m.headers['retry-after']) : NaN;
    if (retryAfter > 0) {
      await new Promise((r) => setTimeout(r, retryAfter * 1000));
      continue;
    }
    if (errCode(m) !== 'MANIFEST_BLOB_UNKNOWN') break;
  }
  return { acked: false, attempts, last, restarts };
}

/**
 * Sends DELETE `url` (a manifest by digest or tag); after a 503 with Retry-After (a transaction
 * that kept conflicting with GC and pushes on hot blob records: nothing was changed) waits as told
 * and sends again, up to `attempts` times in all, as pushWithRetry does for the manifest PUT.
 * @returns the last answer and how many requests were sent
 */
export async function deleteWithRetry(url: string, headers: Record<string, string>, attempts = 10): Promise<{ reply: Awaited<ReturnType<typeof http>>; attempts: number }> {
  for (let i = 1; ; i++) {
    const reply = await http('DELETE', url, { headers });
    const retryAfter = reply.status === 503 ? Number(reply.headers['retry-after']) : NaN;
    if (!(retryAfter > 0) || i >= attempts) return { reply, attempts: i };
    await new Promise((r) => setTimeout(r, retryAfter * 1000));
  }
}

/**
 * Checks through `registry` that `reference` of `repo` is the manifest `img` and that every blob
 * it names is served with bytes whose sha256 is its digest (fetched and hashed here). Returns
 * the problems found (empty when all is well).
 */
export async function servedIntact(registry: string, operatorKey: string, repo: string, reference: string, img: MemImage): Promise<string[]> {
  const auth = basic('_', operatorKey);
  const m = await http('GET', `${registry}/v2/${repo}/manifests/${reference}`, { headers: { ...auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  if (m.status !== 200) return [`${repo}:${reference} manifest ${m.status} ${m.text.slice(0, 120)}`];
  if (!m.bytes.equals(img.manifest)) return [`${repo}:${reference} manifest bytes differ`];
  const problems: string[] = [];
  for (const blob of img.blobs) {
    const d = sha256(blob);
    const r = await http('GET', `${registry}/v2/${repo}/blobs/${d}`, { headers: auth });
    const got = 'sha256:' + createHash('sha256').update(r.bytes).digest('hex');
    if (r.status !== 200 || got !== d) problems.push(`${repo}@${d.slice(7, 19)} ${r.status}, bytes hash to ${got.slice(7, 19)}`);
  }
  return problems;
}

/**
 * Two in-process nodes on one real PostgreSQL and one shared data directory (filesystem blobs),
 * started together; database, directory and nodes are stopped by `t`'s teardown.
 * @returns the nodes, the operator's API key and the database
 */
export async function startTwoInProcessNodes(t: Test): Promise<{ a: InProcessSlipway; b: InProcessSlipway; key: string; db: Postgres }> {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  const shared = tempDir();
  t.teardown(() => shared.cleanup());
  const [a, b] = await Promise.all([0, 1].map(() => startInProcess({ dataDir: shared.dir, databaseUrl: db.connectionString }))) as [InProcessSlipway, InProcessSlipway];
  t.teardown(async () => { await a.stop(); await b.stop(); });
  return { a, b, key: (a.apiKey ?? b.apiKey)!, db };
}
