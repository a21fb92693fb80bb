/**
 * Contention on one repository (docs/storage.md "Contention"): CI systems push and clean up
 * images in parallel, and every image of an app shares its base layer, so every manifest PUT and
 * DELETE changes that layer's reference count. 8 and 32 concurrent manifest PUTs, then DELETEs
 * by digest, into one repository and spread over 10 repositories, on the embedded store and on
 * a real PostgreSQL: not one 5xx, every pushed image pulls back, every deleted one is gone.
 * Before the contention gate (engine/storage/contention-gate.ts) DELETEs failed with 503
 * "transaction conflicted with concurrent changes 16 times".
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { startInProcess } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { pushBlob, putManifest, type Target } from '../helpers/registry.js';
import { memImage, servedIntact, type MemImage } from '../helpers/cluster.js';
import { postgresSkip, startPostgres } from '../helpers/postgres.js';

/** Runs `tasks` with at most `width` in flight; returns their results in order. */
async function limited<T>(width: number, tasks: Array<() => Promise<T>>): Promise<T[]> {
  const out: T[] = new Array(tasks.length);
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  }));
  return out;
}

/** The p99 of `ms` (milliseconds). */
function p99(ms: number[]): number {
  const s = [...ms].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(s.length * 0.99) - 1)]!;
}

async function contend(t: Test, databaseUrl?: string): Promise<void> {
  const s = await startInProcess(databaseUrl ? { databaseUrl } : {});
  t.teardown(() => s.stop());
  const key = s.apiKey!;
  t.equal((await createApp(s.api, key, 'contend')).status, 201);
  const target: Target = { registry: s.urls.registry, auth: basic('_', key) };
  const base = randomBytes(4096);
  for (const width of [8, 32]) {
    for (const spread of [1, 10]) {
      const repos = Array.from({ length: spread }, (_, i) => `contend/p${width}x${i}`);
      const uploads: number[] = [];
      for (const repo of repos) uploads.push((await pushBlob(target, repo, base)).status);
      const images: Array<{ repo: string; img: MemImage }> = Array.from({ length: width * 2 }, (_, i) => ({
        repo: repos[i % spread]!,
        img: memImage(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: randomBytes(8).toString('hex') })), [base, randomBytes(512)]),
      }));
      for (const { repo, img } of images) {
        for (const b of img.blobs.slice(0, 1).concat(img.blobs.slice(2))) uploads.push((await pushBlob(target, repo, b)).status);
      }
      t.ok(uploads.every((st) => st === 201), `${uploads.length} blob uploads 201`);
      const label = `${width} at a time, ${spread === 1 ? 'one repository' : '10 repositories'}`;
      const timed = async (f: () => Promise<{ status: number; text: string }>) => {
        const t0 = performance.now();
        const r = await f();
        return { status: r.status, text: r.text, ms: performance.now() - t0 };
      };
      const puts = await limited(width, images.map(({ repo, img }, i) => () => timed(() => putManifest(target, repo, `t${i}`, img.manifest))));
      t.same(puts.filter((r) => r.status !== 201).map((r) => `${r.status} ${r.text.slice(0, 160)}`), [], `${label}: every manifest PUT 201`);
      for (const { repo, img } of images.slice(0, 4)) t.same(await servedIntact(s.urls.registry, key, repo, img.digest, img), [], `${repo} pulls back intact`);
      const dels = await limited(width, images.map(({ repo, img }) => () => timed(() => http('DELETE', `${s.urls.registry}/v2/${repo}/manifests/${img.digest}`, { headers: target.auth }))));
      t.same(dels.filter((r) => r.status !== 202).map((r) => `${r.status} ${r.text.slice(0, 160)}`), [], `${label}: every manifest DELETE 202`);
      const gone = await Promise.all(images.map(({ repo, img }) => http('HEAD', `${s.urls.registry}/v2/${repo}/manifests/${img.digest}`, { headers: target.auth })));
      t.ok(gone.every((r) => r.status === 404), `${label}: every deleted manifest is gone`);
      t.comment(`${databaseUrl ? 'postgres' : 'lmdb'} ${label}: PUT p99 ${p99(puts.map((r) => r.ms)).toFixed(1)} ms, DELETE p99 ${p99(dels.map((r) => r.ms)).toFixed(1)} ms`);
    }
  }
}

t.test('embedded store (LMDB)', (t) => contend(t));

const skip = postgresSkip();
t.test('PostgreSQL', { skip }, async (t) => {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  await contend(t, db.connectionString);
});
