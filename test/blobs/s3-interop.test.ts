/**
 * `slipway serve` on S3 (a real Ceph RADOS Gateway) with real clients and real crashes:
 * - skopeo pushes and pulls back byte-identical (a ≥ 200 MB layer with SLIPWAY_TEST_LARGE=1),
 *   also through the 307 to presigned URLs (SLIPWAY_S3_REDIRECT=on);
 * - GC every 50 ms (3 s grace) while pushes run and images are deleted: every manifest the
 *   registry accepted (and did not delete) pulls with every blob matching its digest, and every
 *   blob record has its object;
 * - kill -9 in the middle of chunked pushes, then a restart: no record without its object, the
 *   sessions of the dead process answer BLOB_UPLOAD_UNKNOWN and their multipart uploads are
 *   aborted by the start-up recovery.
 */
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { startS3Store, type S3Store } from '../helpers/s3-store.js';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { tempDir } from '../helpers/server.js';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { pushBlob, putManifest, startUpload, withDigest, type Target } from '../helpers/registry.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { openStore } from '../../engine/store.js';
import { scanBlobRecords } from '../../engine/blobs/refs.js';
import type { Digest } from '../../engine/digest.js';

const skip = cephSkip();
const large = process.env.SLIPWAY_TEST_LARGE === '1';
const MiB = 1024 * 1024;

t.test('slipway serve on S3 (Ceph RGW)', { skip }, async (t) => {
  const s3: S3Store = await startS3Store({ memstoreBytes: (large ? 4 : 2) * 1024 ** 3 });
  t.teardown(() => s3.stop());

  /** A spawned server on `prefix` with an app; stopped at the end of `t`. */
  async function serve(t: Test, prefix: string, extra: Record<string, string> = {}, dataDir?: string) {
    const tmp = dataDir ? undefined : tempDir();
    const server = await startSpawned({ dataDir: dataDir ?? tmp!.dir, env: s3.env(prefix, extra) });
    t.teardown(async () => { await server.stop(); tmp?.cleanup(); });
    return server;
  }

  /** Checks that every blob record of a stopped server's data directory has its object, of its size. */
  async function recordsHaveBytes(t: Test, dataDir: string, prefix: string) {
    const store = await openStore(dataDir);
    const backend = s3.backend(prefix);
    let n = 0, missing = 0;
    try {
      for await (const { key, value } of scanBlobRecords(store.metadata)) {
        n++;
        if ((await backend.stat(key as Digest))?.size !== value.size) missing++;
      }
    } finally {
      await store.close();
    }
    t.ok(n > 0, `blob records exist (${n})`);
    t.equal(missing, 0, 'every blob record has its object, of its size');
  }

  t.test('skopeo push and pull, byte-identical; and through presigned redirects', { skip: skopeoSkip() }, async (t) => {
    for (const redirect of [false, true]) {
      const server = await serve(t, redirect ? 'skopeo-r/' : 'skopeo/', { SLIPWAY_S3_REDIRECT: redirect ? 'on' : 'off', SLIPWAY_LOG_LEVEL: 'info' });
      const key = server.apiKey!;
      t.equal((await createApp(server.urls.api, key, 'app')).status, 201);
      const layers = large ? [{ files: { 'big.bin': randomBytes(210 * MiB) }, level: 1 }, ...sampleSpec().layers] : sampleSpec().layers;
      const img = await buildImage(join(server.dataDir, 'img'), { ...sampleSpec(), layers });
      const ref = `docker://${new URL(server.urls.registry).host}/app/web:latest`;
      const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, ref]);
      t.equal(push.code, 0, push.stderr);
      const back = join(server.dataDir, 'back');
      const pull = await skopeo(['copy', '--src-creds', `_:${key}`, '--src-tls-verify=false', ref, `dir:${back}`]);
      t.equal(pull.code, 0, pull.stderr);
      for (const f of readdirSync(img.dir)) {
        t.ok(readFileSync(join(back, f)).equals(readFileSync(join(img.dir, f))), `${redirect ? 'redirect: ' : ''}${f} byte-identical`);
      }
      const redirects = server.output().split('\n').filter((l) => l.includes('"status":307')).length;
      if (redirect) t.ok(redirects >= img.layers.length, `skopeo followed the 307s (${redirects})`);
      else t.equal(redirects, 0, 'no redirect when off');
      // The AWS SDK warns at every start on a Node.js it no longer supports (below 22): not on a supported one.
      if (Number(process.versions.node.split('.')[0]) >= 22) t.notMatch(server.output(), /NodeVersionSupportWarning/, 'no NodeVersionSupportWarning');
    }
  });

  t.test('GC every 50 ms with a 3 s grace while pushes run and images are deleted', async (t) => {
    const server = await serve(t, 'gc/', { SLIPWAY_GC_INTERVAL: '0.05', SLIPWAY_GC_GRACE: '3', SLIPWAY_LOG_LEVEL: 'info', SLIPWAY_ACCESS_LOG_LEVEL: 'silent' });
    const key = server.apiKey!;
    await createApp(server.urls.api, key, 'gcapp');
    const me: Target = { registry: server.urls.registry, auth: basic('_', key) };
    // Shared layers 0 and 3 belong only to images that are deleted again: they keep falling to zero
    // references, being collected and being pushed again while other pushes HEAD them.
    const shared = Array.from({ length: 6 }, () => randomBytes(300_000));
    const accepted = new Map<string, Buffer[]>();
    let refused = 0;
    const pushOne = async (i: number) => {
      const blobs = [Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', n: i })), shared[i % shared.length]!, randomBytes(50_000 + i)];
      const manifest = JSON.stringify({
        schemaVersion: 2, mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
        config: { mediaType: 'application/vnd.docker.container.image.v1+json', digest: sha256(blobs[0]!), size: blobs[0]!.length },
        layers: blobs.slice(1).map((b) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', digest: sha256(b), size: b.length })),
      });
      for (let attempt = 0; attempt < 20; attempt++) {
        for (const [j, b] of blobs.entries()) {
          if ((await http('HEAD', `${me.registry}/v2/gcapp/web/blobs/${sha256(b)}`, { headers: me.auth })).status === 200) continue;
          const r = j % 2 ? await pushBlob(me, 'gcapp/web', b) : await http('PUT', withDigest(await startUpload(me, 'gcapp/web'), sha256(b)), { body: b, headers: { 'content-length': String(b.length) } });
          if (r.status !== 201) throw new Error(`blob push ${r.status} ${r.text}`);
        }
        const m = await putManifest(me, 'gcapp/web', `t${i}`, manifest);
        if (m.status === 201) {
          // Every third image is deleted again: its blobs fall to zero references under GC.
          if (i % 3 === 0) t.equal((await http('DELETE', `${me.registry}/v2/gcapp/web/manifests/${sha256(manifest)}`, { headers: me.auth })).status, 202);
          else accepted.set(`t${i}`, blobs);
          return;
        }
        if (errCode(m) !== 'MANIFEST_BLOB_UNKNOWN') throw new Error(`manifest push ${m.status} ${m.text}`);
        refused++;
      }
      throw new Error(`t${i} refused 20 times`);
    };
    const collectedSoFar = () => server.output().split('\n').filter((l) => l.includes('"event":"gc"'))
      .reduce((n, l) => n + (JSON.parse(l) as { blobs: { deleted: number } }).blobs.deleted, 0);
    // At least 48 images; past them, pushes and deletions go on until GC has deleted blobs while
    // they run (the grace is 3 s: a fast machine pushes 48 images in less), for at most 60 s.
    const deadline = Date.now() + 60_000;
    let next = 0;
    await Promise.all(Array.from({ length: 6 }, async () => {
      while (next < 48 || (collectedSoFar() === 0 && Date.now() < deadline)) await pushOne(next++);
    }));
    t.comment(`${next} images pushed; ${refused} manifest PUTs refused with MANIFEST_BLOB_UNKNOWN and pushed again`);
    const collected = collectedSoFar();
    t.ok(collected > 0, `GC deleted blobs while the pushes ran (${collected})`);
    for (const [tag, blobs] of accepted) {
      t.equal((await http('GET', `${me.registry}/v2/gcapp/web/manifests/${tag}`, { headers: me.auth })).status, 200, `${tag} pullable`);
      for (const b of blobs) {
        const got = await http('GET', `${me.registry}/v2/gcapp/web/blobs/${sha256(b)}`, { headers: me.auth });
        if (sha256(got.bytes) !== sha256(b)) t.fail(`${tag}: blob ${sha256(b).slice(7, 19)} answered ${got.status}, not its bytes`);
      }
    }
    await server.stop();
    await recordsHaveBytes(t, server.dataDir, 'gc/');
  });

  t.test('kill -9 mid-push, then restart: no record without bytes, abandoned parts aborted', async (t) => {
    const tmp = tempDir();
    t.teardown(() => tmp.cleanup());
    let server: SpawnedSlipway = await serve(t, 'crash/', {}, tmp.dir);
    const key = server.apiKey!;
    await createApp(server.urls.api, key, 'crashapp');
    let me: Target = { registry: server.urls.registry, auth: basic('_', key) };
    const done = await pushBlob(me, 'crashapp/web', randomBytes(6 * MiB));
    t.equal(done.status, 201, 'a blob committed before the crash');
    const sessions: string[] = [];
    const inFlight: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      const loc = await startUpload(me, 'crashapp/web');
      sessions.push(loc);
      const chunk = randomBytes(11 * MiB);
      t.equal((await http('PATCH', loc, { body: chunk, headers: { 'content-range': `0-${chunk.length - 1}`, 'content-length': String(chunk.length) } })).status, 202);
      // A second chunk still streaming when the process dies.
      async function* slow() { for (let k = 0; k < 40; k++) { yield randomBytes(256 * 1024); await new Promise((r) => setImmediate(r)); } }
      inFlight.push(http('PATCH', loc, { body: slow() as never }).catch(() => undefined));
    }
    await waitFor('multipart uploads to be open in the bucket', async () => (await s3.openMultipart('crash/')) >= 3, { timeoutMs: 60_000 });
    await server.kill();
    await Promise.all(inFlight);
    t.ok(await s3.openMultipart('crash/') >= 3, 'the dead process left its multipart uploads');
    server = await serve(t, 'crash/', {}, tmp.dir);
    me = { registry: server.urls.registry, auth: basic('_', key) };
    t.equal(await s3.openMultipart('crash/'), 0, 'start-up recovery aborted every abandoned multipart upload');
    for (const loc of sessions) {
      const st = await http('GET', loc.replace(/^http:\/\/[^/]+/, new URL(server.urls.upload).origin));
      t.equal(errCode(st), 'BLOB_UPLOAD_UNKNOWN', 'a session of the dead process is gone (the client restarts its upload)');
    }
    const got = await http('GET', `${me.registry}/v2/crashapp/web/blobs/${done.headers['docker-content-digest']}`, { headers: me.auth });
    t.equal(sha256(got.bytes), done.headers['docker-content-digest'], 'the committed blob survived');
    const again = randomBytes(6 * MiB);
    t.equal((await pushBlob(me, 'crashapp/web', again)).status, 201, 'pushes work after the restart');
    await server.stop();
    await recordsHaveBytes(t, tmp.dir, 'crash/');
  });
});
