/** Blob GET (with Range), HEAD and DELETE (distribution spec "Pulling blobs", "Deleting blobs"). */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import type { Admission } from './admission.js';
import type { RouteParams } from './routes.js';
import { parseDigest, type Digest } from '../../engine/digest.js';
import { fail } from '../../engine/errors.js';
import { API_VERSION_HEADER } from './context.js';
import { quarantineBlob, sizeCheck } from '../../engine/blobs/quarantine.js';
import type { BlobRecord } from '../../engine/blobs/records.js';
import { andThen, type MaybePromise } from '../../engine/maybe-sync.js';

/**
 * GET/HEAD of a blob (admitted for pull), with one `bytes=` Range. A HEAD answers synchronously
 * when the store reads synchronously and the backend stats synchronously (engine/maybe-sync.ts).
 */
export function getBlob(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { name: repository, digest: digestParam }: RouteParams): MaybePromise<void> {
  const digest = parseDigest(digestParam);
  return andThen(servableBlob(ctx, repository, digest), (blob) => sendBlob(ctx, ex, digest, blob));
}

/**
 * The record of a blob `repository` may serve, once its bytes are known to be the record's:
 * a pending start-up verification is waited for, and the file's size is checked (a blob whose
 * size differs is quarantined: clients then push it again).
 * @throws BLOB_UNKNOWN
 */
function servableBlob(ctx: RegistryContext, repository: string, digest: Digest): MaybePromise<BlobRecord> {
  return andThen(ctx.registry.statBlob(repository, digest), (first) => {
    const pending = ctx.legacyCheck?.pending(digest);
    const blob = pending ? pending.then(() => ctx.registry.statBlob(repository, digest)) : first;
    return andThen(blob, (rec) => andThen(sizeCheck(ctx.blobs, digest, rec), (check) => {
      if (check.ok) return rec;
      return quarantineBlob(ctx.store.metadata, digest, check.reason, rec).then(() => {
        throw fail('BLOB_UNKNOWN', 'blob unknown to registry', { digest });
      });
    }));
  });
}

/** The response of a servable blob: headers only for HEAD, else its bytes (with one Range). */
function sendBlob(ctx: RegistryContext, ex: Exchange, digest: Digest, blob: BlobRecord): MaybePromise<void> {
  const headers: Record<string, string> = {
    ...API_VERSION_HEADER,
    'content-type': 'application/octet-stream',
    'docker-content-digest': digest,
    etag: `"${digest}"`,
    'accept-ranges': 'bytes',
    'cache-control': 'max-age=31536000',
  };
  if (ex.method === 'HEAD') return ex.send(200, headers, undefined, blob.size);
  const range = parseRange(ex.header('range'), blob.size);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.start + range.length - 1}/${blob.size}`;
  return streamBlob(ctx, ex, digest, headers, range?.start ?? 0, range?.length ?? blob.size, range ? 206 : 200);
}

/** Streams `length` bytes of the blob from `start`. */
async function streamBlob(ctx: RegistryContext, ex: Exchange, digest: Digest, headers: Record<string, string>, start: number, length: number, status: number): Promise<void> {
  // A blob GC deletes meanwhile is still read through the open reader (contract.ts BlobReader).
  const reader = await ctx.blobs.open(digest);
  try {
    await ex.sendBytes(status, headers, reader, start, length);
  } finally {
    await reader.close();
  }
}

/** DELETE of a blob's link to the repository (admitted for delete). */
export async function deleteBlob(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { name: repository, digest: digestParam }: RouteParams): Promise<void> {
  await ctx.registry.unlinkBlob(repository, parseDigest(digestParam));
  ex.send(202, { ...API_VERSION_HEADER });
}

/**
 * One `bytes=` range (RFC 9110 section 14.1.2); multiple ranges are not supported.
 * @returns undefined for no Range header
 * @throws RANGE_NOT_SATISFIABLE (416 with `Content-Range: bytes *\/size`)
 */
export function parseRange(header: string, size: number): { start: number; length: number } | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  const bad = () => fail('RANGE_NOT_SATISFIABLE', `range "${header.slice(0, 60)}" is not satisfiable for a ${size}-byte blob`, { size });
  if (!m || (m[1] === '' && m[2] === '')) throw bad();
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) throw bad();
    const length = Math.min(suffix, size);
    return { start: size - length, length };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || end < start) throw bad();
  return { start, length: end - start + 1 };
}
