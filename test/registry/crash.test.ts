/**
 * Crash safety (docs/storage.md (Blob commit order)): SIGKILL the server while uploads stream and manifest PUTs
 * are in flight, restart it on the same data directory, and prove that every blob file matches
 * its digest, every manifest reachable by tag has all its blobs (matching their digests), stale
 * upload bytes are gone, and the registry keeps working.
 */
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startSpawned, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { pushBlob, putManifest, startUpload, withDigest, type Target } from '../helpers/registry.js';

const tmp = tempDir();
t.teardown(() => tmp.cleanup());

// Killing the server cuts streamed request bodies; undici reports that from its body writer as
// an unhandled rejection. Expected here, and only socket errors are tolerated, only mid-kill.
let killing = false;
process.on('unhandledRejection', (e) => {
  const code = (e as { code?: string }).code ?? '';
  if (!(killing && /^(ECONNRESET|EPIPE|ECONNREFUSED|UND_ERR_SOCKET|UND_ERR_CLOSED)$/.test(code))) throw e;
});

/** A body that yields `total` bytes slowly, so the kill lands mid-stream. */
async function* slowBody(total: number, hash: ReturnType<typeof createHash>) {
  const chunk = 256 * 1024;
  for (let sent = 0; sent < total; sent += chunk) {
    const b = randomBytes(Math.min(chunk, total - sent));
    hash.update(b);
    yield b;
    await new Promise((r) => setTimeout(r, 5)); // deliberate: a slow body, so the kill lands mid-stream
  }
}

async function chaos(server: SpawnedSlipway, target: Target, round: number): Promise<void> {
  const img = await buildImage(join(tmp.dir, `img-${round}`), sampleSpec());
  for (const b of [img.config, ...img.layers.map((l) => l.bytes)]) await pushBlob(target, 'crashapp/web', b);
  const inflight: Array<Promise<unknown>> = [];
  // Streamed uploads that will be cut off.
  for (let i = 0; i < 4; i++) {
    inflight.push((async () => {
      const loc = await startUpload(target, 'crashapp/web');
      const h = createHash('sha256');
      await http('PATCH', loc, { body: slowBody(64 * 1024 * 1024, h) as any });
      await http('PUT', withDigest(loc, 'sha256:' + h.digest('hex')));
    })());
  }
  // Manifest PUTs, one tag after another, racing the kill.
  let stored!: () => void;
  const firstStored = new Promise<void>((resolve) => { stored = resolve; });
  inflight.push((async () => {
    for (let i = 0; i < 10_000; i++) {
      if ((await putManifest(target, 'crashapp/web', `r${round}-${i}`, img.manifest)).status === 201) stored();
    }
  })());
  // Completed monolithic blobs racing the kill.
  inflight.push((async () => {
    for (let i = 0; i < 10_000; i++) await pushBlob(target, 'crashapp/worker', randomBytes(200_000));
  })());
  // Kill once manifests are being stored, a little later each round, with everything in flight.
  await firstStored;
  await new Promise((r) => setTimeout(r, 100 + round * 200)); // deliberate: the kill's timing is the subject
  killing = true;
  await server.kill();
  await Promise.allSettled(inflight);
  // Kept: socket errors of the killed connections may still arrive; there is no condition to wait on.
  await new Promise((r) => setTimeout(r, 200));
  killing = false;
}

function blobFiles(dir: string): string[] {
  const root = join(dir, 'blobs', 'sha256');
  let out: string[] = [];
  try {
    for (const p of readdirSync(root)) out = out.concat(readdirSync(join(root, p)).map((f) => join(root, p, f)));
  } catch { /* no blobs yet */ }
  return out;
}

t.test('SIGKILL during uploads and manifest PUTs leaves a consistent store', async (t) => {
  let server = await startSpawned({ dataDir: tmp.dir });
  const key = server.apiKey!;
  await createApp(server.urls.api, key, 'crashapp');
  for (let round = 0; round < 3; round++) {
    const target: Target = { registry: server.urls.registry, auth: basic('_', key) };
    await chaos(server, target, round);
    server = await startSpawned({ dataDir: tmp.dir });
  }
  t.teardown(() => server.stop());
  const target: Target = { registry: server.urls.registry, auth: basic('_', key) };

  const files = blobFiles(tmp.dir);
  t.ok(files.length > 5, `blob files exist (${files.length})`);
  let bad = 0;
  for (const f of files) {
    if ('sha256:' + createHash('sha256').update(readFileSync(f)).digest('hex') !== 'sha256:' + f.split('/').pop()) bad++;
  }
  t.equal(bad, 0, 'every blob file matches its digest');

  const tags = (await http('GET', `${target.registry}/v2/crashapp/web/tags/list`, { headers: target.auth })).json.tags as string[];
  t.ok(tags.length > 0, `manifests were stored before the kills (${tags.length} tags)`);
  const checked = new Set<string>();
  for (const tag of tags) {
    const m = await http('GET', `${target.registry}/v2/crashapp/web/manifests/${tag}`, { headers: target.auth });
    t.equal(m.status, 200);
    const doc = JSON.parse(m.text);
    for (const d of [doc.config.digest, ...doc.layers.map((l: { digest: string }) => l.digest)]) {
      if (checked.has(d)) continue;
      checked.add(d);
      const b = await http('GET', `${target.registry}/v2/crashapp/web/blobs/${d}`, { headers: target.auth });
      t.equal(b.status, 200, `blob ${d.slice(0, 19)} of tag ${tag} exists`);
      t.equal(sha256(b.bytes), d, `blob ${d.slice(0, 19)} matches its digest`);
    }
  }

  const leftovers = readdirSync(join(tmp.dir, 'uploads'));
  const live = new Set<string>();
  for (const f of leftovers) {
    for (const repo of ['crashapp/web', 'crashapp/worker']) {
      const s = await http('GET', `${target.registry}/v2/${repo}/blobs/uploads/${f}`, { headers: target.auth });
      if (s.status === 204) live.add(f);
    }
  }
  t.equal(leftovers.length, live.size, 'every upload file belongs to a live session');

  const after = randomBytes(100_000);
  t.equal((await pushBlob(target, 'crashapp/web', after)).status, 201, 'pushes work after recovery');
  const img = await buildImage(join(tmp.dir, 'img-after'), sampleSpec());
  for (const b of [img.config, ...img.layers.map((l) => l.bytes)]) await pushBlob(target, 'crashapp/web', b);
  t.equal((await putManifest(target, 'crashapp/web', 'after', img.manifest)).status, 201);
});
