/**
 * The growth benchmark's images (bench/growth/run.ts): each one a config and two small gzip tar
 * layers of its own (seeded random bytes, so every image adds three distinct blobs), pushed as a
 * client does over plain HTTP: for each blob POST `/blobs/uploads/` then PUT the Location with
 * `digest=` and the body (distribution 2.8 has no monolithic POST), then PUT the manifest.
 */
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { MANIFEST_V2 } from '../image.js';
import type { RegistryClient } from '../client.js';
import { prng } from '../../test/helpers/h1-generator.js';

export { prng };

/** A blob of a growth image. */
export interface GrowthBlob { digest: string; bytes: Buffer }

/** One pushed image: where it lives and what it holds (kept for the reads and the GC check). */
export interface GrowthImage {
  repo: string;
  tag: string;
  manifestDigest: string;
  /** Digests and sizes (bytes) of its config and layers. */
  blobs: Array<{ digest: string; size: number }>;
}

/** Bytes of random file content in each layer's tar. */
const FILE_BYTES = 256;

const sha256 = (b: Buffer): string => 'sha256:' + createHash('sha256').update(b).digest('hex');

/** A ustar header of one regular file `name` of `size` bytes (mtime 0, mode 0644). */
function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 'utf8');
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148);
  h.write('0', 156);
  h.write('ustar\0' + '00', 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return h;
}

const HEADER = tarHeader('app/data.bin', FILE_BYTES);

/** A tar of one file of FILE_BYTES random bytes from `rand`. */
function layerTar(rand: () => number): Buffer {
  const data = Buffer.alloc(512);
  for (let i = 0; i < FILE_BYTES; i += 4) data.writeUInt32LE(Math.floor(rand() * 4294967296), i);
  return Buffer.concat([HEADER, data, Buffer.alloc(1024)]);
}

/** A layer's tar (`raw`) beside the gzip blob pushed. */
export interface GrowthLayer { raw: Buffer; blob: GrowthBlob }

/** A layer of its own for sharing between images (`makeImage`'s `base`), seeded with `seed`. */
export function sharedLayer(seed: number): GrowthLayer {
  const raw = layerTar(prng(seed >>> 0));
  const gz = gzipSync(raw);
  return { raw, blob: { digest: sha256(gz), bytes: gz } };
}

/**
 * The blobs and manifest of image `index` of a run seeded with `seed` (config first, then the two
 * layers). With `base`, the first layer is that shared one (a base image's layer every image of an
 * app carries) and only the second is the image's own.
 */
export function makeImage(seed: number, index: number, base?: GrowthLayer): { blobs: GrowthBlob[]; manifest: Buffer } {
  const rand = prng((seed + Math.imul(index, 0x9e3779b1)) >>> 0);
  const raws = [base ? base.raw : layerTar(rand), layerTar(rand)];
  const layers = raws.map((r) => { const gz = gzipSync(r); return { digest: sha256(gz), bytes: gz }; });
  const configBytes = Buffer.from(JSON.stringify({
    architecture: 'amd64', os: 'linux',
    config: { Env: ['PATH=/usr/bin:/bin'], Cmd: ['/bin/sh'], Labels: { 'growth.index': String(index) } },
    rootfs: { type: 'layers', diff_ids: raws.map(sha256) },
    history: [{ created_by: 'slipway growth bench' }],
  }));
  const config = { digest: sha256(configBytes), bytes: configBytes };
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: MANIFEST_V2,
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: configBytes.length, digest: config.digest },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.bytes.length, digest: l.digest })),
  }));
  return { blobs: [config, ...layers], manifest };
}

/** Uploads one blob: POST a session, PUT its Location with `digest=` and the bytes (201 expected). */
export async function pushBlob(client: RegistryClient, repo: string, blob: GrowthBlob): Promise<void> {
  const loc = await client.startUpload(repo);
  await client.expect([201], 'PUT', client.withDigest(loc, blob.digest), {
    headers: { 'content-type': 'application/octet-stream', 'content-length': String(blob.bytes.length) },
    body: blob.bytes,
  });
}

/**
 * Pushes image `index` into `repo` under `tag`: its three blobs, then its manifest.
 * @throws Error naming the request when an answer is not the expected status.
 */
export async function pushImage(client: RegistryClient, seed: number, index: number, repo: string, tag: string): Promise<GrowthImage> {
  const { blobs, manifest } = makeImage(seed, index);
  for (const b of blobs) await pushBlob(client, repo, b);
  await client.expect([201], 'PUT', `/v2/${repo}/manifests/${tag}`, { headers: { 'content-type': MANIFEST_V2 }, body: manifest });
  return { repo, tag, manifestDigest: sha256(manifest), blobs: blobs.map((b) => ({ digest: b.digest, size: b.bytes.length })) };
}

/** Repositories the growth images are spread over: image `i` goes to `bench/r<i mod 100>` (`growthRepository`). */
export const REPOSITORIES = 100;

/** The repository of growth image `index`: `bench/r00`…`bench/r99` in turn. */
export function growthRepository(index: number): string {
  return `bench/r${String(index % REPOSITORIES).padStart(2, '0')}`;
}

/**
 * Pushes growth images `images.length`…`to - 1` (image `i` into `growthRepository(i)` under tag
 * `v<i>`), `concurrency` at a time, storing each at its index of `images`.
 * @throws as `pushImage`
 */
export async function pushImagesUpTo(client: RegistryClient, seed: number, images: GrowthImage[], to: number, concurrency: number): Promise<void> {
  let next = images.length;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < to) {
      const i = next++;
      images[i] = await pushImage(client, seed, i, growthRepository(i), `v${i}`);
    }
  }));
}

/** PUTs `manifest` (bytes of an image already pushed to `repo`) under each of `tags`, `concurrency` at a time. */
export async function tagMany(client: RegistryClient, repo: string, manifest: Buffer, tags: string[], concurrency: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < tags.length) {
      const tag = tags[next++]!;
      await client.expect([201], 'PUT', `/v2/${repo}/manifests/${tag}`, { headers: { 'content-type': MANIFEST_V2 }, body: manifest });
    }
  }));
}
