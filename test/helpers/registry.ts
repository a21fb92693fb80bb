/** Registry protocol steps for tests, through the real HTTP interface. */
import type { Test } from 'tap';
import { http, type Reply } from './http.js';
import { sha256, type BuiltImage } from './image.js';

export interface Target {
  registry: string;
  auth: Record<string, string>;
}

/** Monolithic upload: POST ?digest= with the bytes. */
export function pushBlob(t: Target, name: string, bytes: Buffer, digest = sha256(bytes)): Promise<Reply> {
  return http('POST', `${t.registry}/v2/${name}/blobs/uploads/?digest=${digest}`, {
    headers: { ...t.auth, 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) }, body: bytes,
  });
}

/** Opens an upload session; returns its absolute Location. */
export async function startUpload(t: Target, name: string): Promise<string> {
  const r = await http('POST', `${t.registry}/v2/${name}/blobs/uploads/`, { headers: t.auth });
  if (r.status !== 202) throw new Error(`POST upload: ${r.status} ${r.text}`);
  return r.headers.location!;
}

/** Appends `?digest=` (or `&digest=`) to a session Location. */
export function withDigest(location: string, digest: string): string {
  return location + (location.includes('?') ? '&' : '?') + 'digest=' + digest;
}

export function putManifest(t: Target, name: string, reference: string, body: Buffer | string, contentType = 'application/vnd.docker.distribution.manifest.v2+json'): Promise<Reply> {
  return http('PUT', `${t.registry}/v2/${name}/manifests/${reference}`, { headers: { ...t.auth, 'content-type': contentType }, body });
}

/**
 * Pushes a built image by HTTP: every blob by monolithic upload, then the manifest under `tag`.
 * @throws Error naming the step and status when any answer is not 201.
 */
export async function pushBuiltImage(t: Target, name: string, tag: string, img: BuiltImage): Promise<BuiltImage> {
  for (const b of [img.config, ...img.layers.map((l) => l.bytes)]) {
    const r = await pushBlob(t, name, b);
    if (r.status !== 201) throw new Error(`blob push ${r.status} ${r.text}`);
  }
  const m = await putManifest(t, name, tag, img.manifest);
  if (m.status !== 201) throw new Error(`manifest push ${m.status} ${m.text}`);
  return img;
}

/**
 * Asserts how a pushed blob of `name` is served (distribution spec "Pulling blobs", RFC 9110
 * ranges): HEAD with its size and digest, GET of all its bytes, a byte range (206 with its
 * Content-Range), a suffix range, and 416 with `bytes *\/size` for every unsatisfiable range.
 */
export async function assertBlobServed(t: Test, target: Target, name: string, bytes: Buffer): Promise<void> {
  const d = sha256(bytes);
  const url = `${target.registry}/v2/${name}/blobs/${d}`;
  const head = await http('HEAD', url, { headers: target.auth });
  t.equal(head.status, 200);
  t.equal(head.headers['content-length'], String(bytes.length));
  t.equal(head.headers['docker-content-digest'], d);
  const get = await http('GET', url, { headers: target.auth });
  t.ok(get.bytes.equals(bytes), 'GET returns the bytes');
  const part = await http('GET', url, { headers: { ...target.auth, range: 'bytes=1000-1999' } });
  t.equal(part.status, 206);
  t.equal(part.headers['content-range'], `bytes 1000-1999/${bytes.length}`);
  t.ok(part.bytes.equals(bytes.subarray(1000, 2000)));
  const tail = await http('GET', url, { headers: { ...target.auth, range: 'bytes=-10' } });
  t.ok(tail.bytes.equals(bytes.subarray(bytes.length - 10)), 'suffix range');
  for (const range of [`bytes=${bytes.length}-`, 'bytes=5-2', 'items=0-1', 'bytes=-0']) {
    const bad = await http('GET', url, { headers: { ...target.auth, range } });
    t.equal(bad.status, 416, range);
    t.equal(bad.headers['content-range'], `bytes */${bytes.length}`);
  }
}
