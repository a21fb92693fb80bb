/**
 * Builds container images for tests without a docker engine: layer tars written with
 * tar-stream and gzipped with node:zlib, an image config, and a v2 schema 2 manifest, laid out
 * in skopeo's `dir:` transport format (manifest.json, version, one file per blob named by hex).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

export interface LayerSpec {
  /** path → content; a path whose basename starts with `.wh.` is a whiteout. */
  files: Record<string, string | Buffer>;
  /** The layer blob as it is (test/helpers/hostile-layers.ts); `files` is then ignored. */
  bytes?: Buffer;
  /** gzip level (0-9, default zlib's); 1 makes a large random layer quick to build. */
  level?: number;
}

export interface ImageSpec {
  layers: LayerSpec[];
  architecture?: string;
  os?: string;
  config?: Record<string, unknown>;
}

export interface BuiltImage {
  dir: string;
  manifest: Buffer;
  manifestDigest: string;
  config: Buffer;
  configDigest: string;
  layers: Array<{ digest: string; bytes: Buffer }>;
}

export const sha256 = (b: Buffer | string) => 'sha256:' + createHash('sha256').update(b).digest('hex');

/** A gzip-compressed tar of `files`. */
export async function layerTar(files: Record<string, string | Buffer>, level?: number): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => { chunks.push(c as Buffer); });
  const done = new Promise<void>((resolve) => pack.on('end', () => resolve()));
  for (const [name, content] of Object.entries(files)) {
    await new Promise<void>((resolve, reject) => pack.entry({ name, mtime: new Date(0) }, content, (e) => (e ? reject(e) : resolve())));
  }
  pack.finalize();
  await done;
  return gzipSync(Buffer.concat(chunks), level === undefined ? {} : { level });
}

/** Writes an image under `dir` and returns its digests. */
export async function buildImage(dir: string, spec: ImageSpec): Promise<BuiltImage> {
  mkdirSync(dir, { recursive: true });
  const layers = [];
  for (const l of spec.layers) {
    const bytes = l.bytes ?? await layerTar(l.files, l.level);
    layers.push({ digest: sha256(bytes), bytes });
  }
  const config = Buffer.from(JSON.stringify({
    architecture: spec.architecture ?? 'amd64',
    os: spec.os ?? 'linux',
    config: { Env: ['PATH=/usr/bin:/bin'], Cmd: ['/bin/sh'], ...spec.config },
    rootfs: { type: 'layers', diff_ids: layers.map((l) => sha256(randomBytes(8))) },
    history: [],
  }));
  const configDigest = sha256(config);
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: configDigest },
    layers: layers.map((l) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: l.bytes.length, digest: l.digest })),
  }, null, 3));
  writeFileSync(join(dir, 'version'), 'Directory Transport Version: 1.1\n');
  writeFileSync(join(dir, 'manifest.json'), manifest);
  writeFileSync(join(dir, configDigest.slice(7)), config);
  for (const l of layers) writeFileSync(join(dir, l.digest.slice(7)), l.bytes);
  return { dir, manifest, manifestDigest: sha256(manifest), config, configDigest, layers };
}

/** A small multi-layer amd64 image with some random content so digests differ per call. */
export function sampleSpec(extra: Partial<ImageSpec> = {}): ImageSpec {
  return {
    layers: [
      { files: { 'etc/hostname': 'slipway\n', 'bin/app': randomBytes(200_000) } },
      { files: { 'app/data.bin': randomBytes(1_500_000), 'app/readme.txt': 'hello\n' } },
      { files: { 'app/config.json': JSON.stringify({ n: randomBytes(4).toString('hex') }) } },
    ],
    ...extra,
  };
}
