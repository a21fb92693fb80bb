/**
 * The Node registry libraries `docker-registry-client` (joyent, 3.4.0) and
 * `@renovatebot/docker-registry-client` (3.3.0), unmodified, push and pull an image (config and
 * layer blobs, a schema 2 manifest) through Slipway's registry host. Both follow the upload
 * `Location` by sending its absolute URL as the request target (`PUT http://host:port/v2/…`,
 * absolute-form, RFC 9112 §3.2.2) to the registry host; before the listener accepted that form
 * they could not upload a blob at all (400 "malformed request line").
 */
import t from 'tap';
import { createRequire } from 'node:module';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { startInProcess } from '../helpers/harness.js';
import { createApp } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { tempDir } from '../helpers/server.js';

const require = createRequire(import.meta.url);

/** The part of both libraries' RegistryClientV2 this test uses (callback style, as they ship). */
interface RegistryClient {
  blobUpload(opts: { digest: string; stream: Readable; contentLength: number; contentType?: string }, cb: (e: Error | null) => void): void;
  putManifest(opts: { manifest: string; ref: string }, cb: (e: Error | null, res: unknown, digest: string) => void): void;
  getManifest(opts: { ref: string; maxSchemaVersion: number }, cb: (e: Error | null, manifest: Record<string, unknown>, res: unknown, body: string) => void): void;
  createBlobReadStream(opts: { digest: string }, cb: (e: Error | null, stream: Readable) => void): void;
  close(): void;
}
interface ClientModule {
  createClientV2(opts: { name: string; scheme: string; username: string; password: string; insecure: boolean; maxSchemaVersion: number; log: unknown }): RegistryClient;
}
const LIBRARIES: Array<[string, string]> = [['joyent', 'docker-registry-client'], ['renovate', '@renovatebot/docker-registry-client']];

const call = <T>(fn: (cb: (e: Error | null, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((e, v) => (e ? reject(e) : resolve(v))));

async function readAll(s: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

const tmp = tempDir();
// Plain HTTP: both libraries check the token endpoint's certificate even when told `insecure`,
// and the test has no CA to give them for the self-signed one.
const server = await startInProcess({ dataDir: tmp.dir, env: { SLIPWAY_REGISTRY_TLS: 'off' } });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
const key = server.apiKey!;
if ((await createApp(server.urls.api, key, 'npmclients')).status !== 201) throw new Error('cannot create the app');
const registryHost = new URL(server.urls.registry).host;
// A quiet bunyan logger (the libraries' own dependency) instead of their default info logger on stdout.
const bunyan = require(require.resolve('bunyan', { paths: [require.resolve('docker-registry-client')] })) as { createLogger(o: object): unknown };
const log = bunyan.createLogger({ name: 'registry-client', level: (process.env.REGISTRY_CLIENT_LOG as 'fatal') ?? 'fatal', stream: process.stderr });

for (const [label, module] of LIBRARIES) {
  t.test(`${label} (${module}) pushes and pulls an image`, async (t) => {
    const lib = require(module) as ClientModule;
    const image = await buildImage(join(tmp.dir, `img-${label}`), sampleSpec({ layers: [{ files: { 'app/hello.txt': `hello from ${label}\n` } }] }));
    const client = lib.createClientV2({ name: `${registryHost}/npmclients/${label}`, scheme: new URL(server.urls.registry).protocol.slice(0, -1), username: '_', password: key, insecure: true, maxSchemaVersion: 2, log });
    t.teardown(() => client.close());
    for (const blob of [{ digest: image.configDigest, bytes: image.config }, ...image.layers]) {
      await call<void>((cb) => client.blobUpload({ digest: blob.digest, stream: Readable.from([blob.bytes]), contentLength: blob.bytes.length }, (e) => cb(e, undefined)));
      t.pass(`uploaded ${blob.digest.slice(0, 19)} (${blob.bytes.length} bytes)`);
    }
    const digest = await new Promise<string>((resolve, reject) =>
      client.putManifest({ manifest: image.manifest.toString(), ref: 'v1' }, (e, _res, d) => (e ? reject(e) : resolve(d))));
    t.equal(digest, image.manifestDigest, 'the manifest digest the registry answers');

    const pulled = await new Promise<{ manifest: Record<string, unknown>; body: string }>((resolve, reject) =>
      client.getManifest({ ref: 'v1', maxSchemaVersion: 2 }, (e, manifest, _res, body) => (e ? reject(e) : resolve({ manifest, body }))));
    t.equal(sha256(pulled.body), image.manifestDigest, 'the manifest pulled by tag is the one pushed, byte for byte');
    const layers = pulled.manifest.layers as Array<{ digest: string }>;
    t.same(layers.map((l) => l.digest), image.layers.map((l) => l.digest));
    for (const blob of [{ digest: image.configDigest, bytes: image.config }, ...image.layers]) {
      const stream = await call<Readable>((cb) => client.createBlobReadStream({ digest: blob.digest }, cb));
      t.ok((await readAll(stream)).equals(blob.bytes), `pulled ${blob.digest.slice(0, 19)} byte for byte`);
    }
  });
}
