/**
 * A small valid image (v2 schema 2): one gzip tar layer built with tar-stream and node:zlib,
 * an amd64/linux config with the layer's real diff_id, and the manifest bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

/** Media type of the manifest (PUT Content-Type). */
export const MANIFEST_V2 = 'application/vnd.docker.distribution.manifest.v2+json';

/** A blob of the image. */
export interface SmallBlob {
  digest: string;
  bytes: Buffer;
}

/** The image: its config, layer and manifest. */
export interface SmallImage {
  config: SmallBlob;
  layer: SmallBlob;
  manifest: Buffer;
  manifestDigest: string;
}

const sha256 = (b: Buffer) => 'sha256:' + createHash('sha256').update(b).digest('hex');

/** An uncompressed tar of `files`. */
async function tarOf(files: Record<string, Buffer | string>): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => { chunks.push(c as Buffer); });
  const done = new Promise<void>((resolve, reject) => {
    pack.on('end', () => resolve());
    pack.on('error', reject);
  });
  for (const [name, content] of Object.entries(files)) {
    await new Promise<void>((resolve, reject) => pack.entry({ name, mtime: new Date(0), mode: 0o644 }, content, (e) => (e ? reject(e) : resolve())));
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

/** Builds the benchmark image (random content, so each call gives new digests). */
export async function buildSmallImage(): Promise<SmallImage> {
  const raw = await tarOf({
    'etc/hostname': 'bench\n',
    'app/data.bin': randomBytes(32 * 1024),
    'app/readme.txt': 'slipway benchmark image\n',
  });
  const gz = gzipSync(raw);
  const layer = { digest: sha256(gz), bytes: gz };
  const configBytes = Buffer.from(JSON.stringify({
    architecture: 'amd64',
    os: 'linux',
    config: { Env: ['PATH=/usr/bin:/bin'], Cmd: ['/bin/sh'] },
    rootfs: { type: 'layers', diff_ids: [sha256(raw)] },
    history: [{ created_by: 'slipway bench' }],
  }));
  const config = { digest: sha256(configBytes), bytes: configBytes };
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    mediaType: MANIFEST_V2,
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: configBytes.length, digest: config.digest },
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: gz.length, digest: layer.digest }],
  }));
  return { config, layer, manifest, manifestDigest: sha256(manifest) };
}
