/**
 * A manifest PUT whose image inspection finds a blob missing while every blob is still linked:
 * GC collected the blob and another push uploaded it again between the worker's read and the
 * check (seen in CI as a 500 on the cluster's GC-under-pushes test). The inspection runs once
 * more over the new bytes; a blob still missing then is MANIFEST_BLOB_UNKNOWN (the client pushes
 * it again), never an internal error; other failures pass through unchanged, and a blob GC
 * unlinked is named as before. The inspector here stands in for the worker's answer, so each
 * case is exact; the last case goes through the real worker pool (a missing blob must cross the
 * thread boundary as BLOB_UNKNOWN with its digest); the race itself runs in
 * test/cluster/gc-under-pushes.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { engineFixture, digestOf } from '../helpers/engine.js';
import { Registry, type ImageInspector } from '../../engine/registry/registry.js';
import { fail } from '../../engine/errors.js';
import type { Digest } from '../../engine/digest.js';
import { WorkerPool } from '../../workers/pool.js';

const MEDIA = 'application/vnd.docker.distribution.manifest.v2+json';
const AMD64 = { config: { architecture: 'amd64', os: 'linux', entrypoint: null, cmd: ['/bin/sh'], workingDir: '/', env: [], user: '', ignoredInstructions: [] }, scans: {} };

/** An engine whose inspector throws `failures` (in order) before answering an amd64 image; counts its calls. */
async function setup(t: Parameters<typeof engineFixture>[0], failures: Error[]) {
  const e = await engineFixture(t);
  let calls = 0;
  const inspect: ImageInspector = async () => {
    const f = failures[calls++];
    if (f) throw f;
    return AMD64 as Awaited<ReturnType<ImageInspector>>;
  };
  const registry = new Registry(e.store.metadata, e.blobs, e.clock, inspect);
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: randomBytes(8).toString('hex') }));
  const layer = randomBytes(3000);
  for (const b of [config, layer]) await e.upload('race/web', b);
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: MEDIA,
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: digestOf(config) },
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: layer.length, digest: digestOf(layer) }],
  }));
  return { ...e, registry, manifest, layer: digestOf(layer), calls: () => calls };
}

/** What the worker pool throws for a blob missing when the worker read it (workers/pool.ts). */
const missing = (d: Digest) => fail('BLOB_UNKNOWN', `blob unknown: ${d}`, { digest: d });

/** The error `p` rejects with; throws (failing the test) when it resolves. */
async function rejection(p: Promise<unknown>): Promise<{ code?: string; message: string; detail?: unknown }> {
  try {
    await p;
  } catch (e) {
    return e as { code?: string; message: string; detail?: unknown };
  }
  throw new Error('expected a rejection');
}

t.test('a blob missing once while still linked: inspected again, the manifest is stored', async (t) => {
  const e = await setup(t, [missing('sha256:' + '1'.repeat(64) as Digest)]);
  const digest = await e.registry.putManifest('race/web', 'app-race', 'v1', e.manifest, MEDIA);
  t.equal(digest, digestOf(e.manifest));
  t.equal(e.calls(), 2, 'the inspection ran twice');
  t.equal(await e.registry.resolveManifest('race/web', 'v1'), digest, 'the tag names the manifest');
});

t.test('a blob missing on both reads: MANIFEST_BLOB_UNKNOWN naming it, nothing stored', async (t) => {
  const e = await setup(t, [missing(e0()), missing(e0())]);
  const err = await rejection(e.registry.putManifest('race/web', 'app-race', 'v1', e.manifest, MEDIA));
  t.equal(err.code, 'MANIFEST_BLOB_UNKNOWN');
  t.match(err.message, e0());
  t.same(err.detail, { digest: e0() });
  t.equal(e.calls(), 2, 'two attempts, no more');
  const gone = await rejection(Promise.resolve().then(() => e.registry.resolveManifest('race/web', 'v1')));
  t.equal(gone.code, 'MANIFEST_UNKNOWN', 'the tag was not written');
});

t.test('a blob GC unlinked meanwhile: MANIFEST_BLOB_UNKNOWN naming that blob, no second inspection', async (t) => {
  const e = await setup(t, []);
  let calls = 0;
  const registry = new Registry(e.store.metadata, e.blobs, e.clock, async () => {
    calls++;
    await e.registry.unlinkBlob('race/web', e.layer); // what GC's transaction does to the links
    throw missing(e.layer);
  });
  const err = await rejection(registry.putManifest('race/web', 'app-race', 'v1', e.manifest, MEDIA));
  t.equal(err.code, 'MANIFEST_BLOB_UNKNOWN');
  t.match(err.message, /deleted while the manifest was checked/);
  t.same(err.detail, { digest: e.layer });
  t.equal(calls, 1);
});

t.test('other inspection failures pass through unchanged, after one attempt', async (t) => {
  const e = await setup(t, [fail('MANIFEST_INVALID', 'config is not JSON')]);
  const err = await rejection(e.registry.putManifest('race/web', 'app-race', 'v1', e.manifest, MEDIA));
  t.equal(err.code, 'MANIFEST_INVALID');
  t.equal(err.message, 'config is not JSON');
  t.equal(e.calls(), 1);
});

t.test('through the worker pool: a linked layer whose bytes are gone is MANIFEST_BLOB_UNKNOWN naming it', async (t) => {
  const e = await setup(t, []);
  const pool = new WorkerPool({ maxThreads: 1 });
  t.teardown(() => pool.close());
  const registry = new Registry(e.store.metadata, e.blobs, e.clock, (r) => pool.inspectImage({ kind: 'fs', dataDir: e.tmp.dir }, r));
  await e.blobs.delete(e.layer); // the bytes only: record and link stay, as between GC's removal and a re-upload
  const err = await rejection(registry.putManifest('race/web', 'app-race', 'v1', e.manifest, MEDIA));
  t.equal(err.code, 'MANIFEST_BLOB_UNKNOWN', 'a client error, not a 500');
  t.same(err.detail, { digest: e.layer });
  t.match(err.message, e.layer);
});

/** The digest the scripted failures name. */
function e0(): Digest {
  return ('sha256:' + 'e'.repeat(64)) as Digest;
}
