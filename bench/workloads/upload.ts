/**
 * Blob upload flows, identical for every server: each follows the Location it is given
 * (relative or absolute, same or other host), as a registry client does.
 */
import type { RegistryClient } from '../client.js';
import { lengthOf, streamOf, type Blob } from '../payload.js';

const OCTET = 'application/octet-stream';

/** Throws unless a completed upload's reply names the expected digest. */
function checkCreated(status: number, headers: Record<string, string>, digest: string, what: string): void {
  if (status !== 201) throw new Error(`${what}: completing the upload answered ${status}`);
  const got = headers['docker-content-digest'];
  if (got && got !== digest) throw new Error(`${what}: server says digest ${got}, expected ${digest}`);
}

/** POST, one PATCH carrying the whole blob (streamed), then PUT ?digest=. */
export async function pushSinglePatch(client: RegistryClient, repo: string, blob: Blob, timeoutMs: number): Promise<void> {
  const start = await client.startUpload(repo);
  const patched = await client.expect([202], 'PATCH', start, {
    headers: { 'content-type': OCTET, 'content-length': String(blob.size) },
    body: streamOf(blob.chunks.flat()),
    timeoutMs,
  });
  const loc = client.location(patched, start);
  const done = await client.call('PUT', client.withDigest(loc, blob.digest), { headers: { 'content-length': '0' }, timeoutMs });
  checkCreated(done.status, done.headers, blob.digest, `single-PATCH push to ${repo}: ${done.body.toString().slice(0, 300)}`);
}

/** POST, one PATCH per chunk with Content-Range, then PUT ?digest=. Bounded by `timeoutMs` overall. */
export async function pushChunked(client: RegistryClient, repo: string, blob: Blob, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let loc = await client.startUpload(repo);
  let offset = 0;
  for (const chunk of blob.chunks) {
    if (performance.now() > deadline) throw new Error(`chunked push to ${repo} exceeded ${timeoutMs} ms at offset ${offset}`);
    const len = lengthOf(chunk);
    const r = await client.expect([202], 'PATCH', loc, {
      headers: { 'content-type': OCTET, 'content-length': String(len), 'content-range': `${offset}-${offset + len - 1}` },
      body: streamOf(chunk),
      timeoutMs,
    });
    loc = client.location(r, loc);
    offset += len;
  }
  const done = await client.call('PUT', client.withDigest(loc, blob.digest), { headers: { 'content-length': '0' }, timeoutMs });
  checkCreated(done.status, done.headers, blob.digest, `chunked push to ${repo}: ${done.body.toString().slice(0, 300)}`);
}

/** POST, then PUT ?digest= carrying the whole blob (a single-request upload). */
export async function pushPostPut(client: RegistryClient, repo: string, blob: Blob | { size: number; digest: string; bytes: Buffer }, timeoutMs: number): Promise<void> {
  const start = await client.startUpload(repo);
  const body = 'bytes' in blob ? blob.bytes : streamOf(blob.chunks.flat());
  const done = await client.call('PUT', client.withDigest(start, blob.digest), {
    headers: { 'content-type': OCTET, 'content-length': String(blob.size) },
    body,
    timeoutMs,
  });
  checkCreated(done.status, done.headers, blob.digest, `POST+PUT push to ${repo}: ${done.body.toString().slice(0, 300)}`);
}

/** Pushes every blob of `blobs` with POST + PUT (pushPostPut), `inFlight` at a time, in order. */
export async function pushEach(client: RegistryClient, repo: string, blobs: readonly Blob[], inFlight: number, timeoutMs: number): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < blobs.length) await pushPostPut(client, repo, blobs[next++]!, timeoutMs);
  }));
}
