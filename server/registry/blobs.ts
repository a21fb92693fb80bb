/** Blob GET (with Range), HEAD and DELETE (distribution spec "Pulling blobs", "Deleting blobs"). */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import type { Admission } from './admission.js';
import type { RouteParams } from './routes.js';
import { parseDigest, type Digest } from '../../engine/digest.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import type { BlobReader } from '../../engine/blobs/contract.js';
import { API_VERSION } from './context.js';
import { headSizeCheck, quarantineBlob, sizeCheck } from '../../engine/blobs/quarantine.js';
import type { BlobRecord } from '../../engine/blobs/records.js';
import { andThen, type MaybePromise } from '../../engine/maybe-sync.js';

/**
 * GET/HEAD of a blob (admitted for pull), with one `bytes=` Range. A HEAD answers synchronously
 * when the store reads synchronously and the blob's size check is remembered (quarantine.ts
 * `headSizeCheck`), or when the medium is remote (answered from the record; engine/maybe-sync.ts).
 */
export function getBlob(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { name: repository, digest: digestParam }: RouteParams): MaybePromise<void> {
  const digest = parseDigest(digestParam);
  return andThen(servableBlob(ctx, repository, digest, ex.method === 'HEAD'), (blob) => sendBlob(ctx, ex, digest, blob));
}

/**
 * The record of a blob `repository` may serve, once its bytes are known to be the record's: a
 * pending start-up verification is waited for. A medium that answers a stat at once (the
 * filesystem) has the bytes' size checked on every GET, and on a HEAD unless a check of that
 * blob passed within the last second (quarantine.ts `headSizeCheck`); a blob whose size differs
 * is quarantined: clients then push it again. A remote medium (S3) is checked on GET through
 * the reader's size (streamBlob), and HEAD answers from the record alone (no round trip to the
 * store).
 * @throws BLOB_UNKNOWN
 */
function servableBlob(ctx: RegistryContext, repository: string, digest: Digest, head: boolean): MaybePromise<BlobRecord> {
  return andThen(ctx.registry.statBlob(repository, digest), (first) => {
    const pending = ctx.legacyCheck?.pending(digest);
    const blob = pending ? pending.then(() => ctx.registry.statBlob(repository, digest)) : first;
    if (!ctx.blobs.statsLocally) return blob;
    return andThen(blob, (rec) => {
      const check = head ? headSizeCheck(ctx.blobs, digest, rec, performance.now()) : sizeCheck(ctx.blobs, digest, rec);
      return andThen(check, (c) => c.ok ? rec : refuse(ctx, digest, rec, c.reason));
    });
  });
}

/** The response of a servable blob: headers only for HEAD, a redirect when enabled, else its bytes (with one Range). */
function sendBlob(ctx: RegistryContext, ex: Exchange, digest: Digest, blob: BlobRecord): MaybePromise<void> {
  const headers: Record<string, string> = {
    'docker-distribution-api-version': API_VERSION,
    'content-type': 'application/octet-stream',
    'docker-content-digest': digest,
    etag: `"${digest}"`,
    'accept-ranges': 'bytes',
    'cache-control': 'max-age=31536000',
  };
  if (ex.method === 'HEAD') return ex.send(200, headers, undefined, blob.size);
  const range = parseRange(ex.header('range'), blob.size);
  if (ctx.blobRedirectSeconds !== undefined) return redirectOrStream(ctx, ex, digest, blob, headers, range, ctx.blobRedirectSeconds);
  return streamBlob(ctx, ex, digest, blob, headers, range);
}

/**
 * A 307 to the store's presigned URL (the distribution spec allows a redirect for blob GET,
 * "Pulling blobs"; the client sends its Range to the store, which serves the same bytes), or the
 * bytes when the backend has no URL to give (the filesystem).
 */
async function redirectOrStream(ctx: RegistryContext, ex: Exchange, digest: Digest, blob: BlobRecord, headers: Record<string, string>, range: ByteRangeOf, seconds: number): Promise<void> {
  const url = await ctx.blobs.presignedUrl(digest, seconds);
  if (url !== undefined) return ex.send(307, { 'docker-distribution-api-version': API_VERSION, 'docker-content-digest': digest, location: url, 'cache-control': 'no-store' });
  return streamBlob(ctx, ex, digest, blob, headers, range);
}

type ByteRangeOf = ReturnType<typeof parseRange>;

/** Streams the blob's bytes (or `range` of them, with its Content-Range) through an open reader. */
async function streamBlob(ctx: RegistryContext, ex: Exchange, digest: Digest, blob: BlobRecord, headers: Record<string, string>, range: ByteRangeOf): Promise<void> {
  if (range) headers['content-range'] = `bytes ${range.start}-${range.start + range.length - 1}/${blob.size}`;
  const remote = !ctx.blobs.statsLocally;
  // A blob GC deletes meanwhile is still read through the open reader (contract.ts BlobReader).
  let reader: BlobReader;
  try {
    reader = await ctx.blobs.open(digest, range && { offset: range.start, length: range.length });
  } catch (e) {
    // Recorded but absent from a remote store: quarantined, so HEADs (answered from the record)
    // stop claiming it and clients push it again.
    if (remote && isSlipwayError(e) && e.code === 'BLOB_UNKNOWN') await refuse(ctx, digest, blob, 'object missing from the store');
    throw e;
  }
  if (remote && reader.size !== blob.size) {
    await reader.close();
    await refuse(ctx, digest, blob, `the store holds ${reader.size} bytes, record says ${blob.size}`);
  }
  try {
    await ex.sendBytes(range ? 206 : 200, headers, reader, range?.start ?? 0, range?.length ?? blob.size);
  } finally {
    await reader.close();
  }
}

/** Quarantines the blob for `reason` and answers BLOB_UNKNOWN (clients push it again). */
async function refuse(ctx: RegistryContext, digest: Digest, blob: BlobRecord, reason: string): Promise<never> {
  await quarantineBlob(ctx.store.metadata, digest, reason, blob);
  throw fail('BLOB_UNKNOWN', 'blob unknown to registry', { digest });
}

/** DELETE of a blob's link to the repository (admitted for delete). */
export async function deleteBlob(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { name: repository, digest: digestParam }: RouteParams): Promise<void> {
  await ctx.registry.unlinkBlob(repository, parseDigest(digestParam));
  ex.send(202, { 'docker-distribution-api-version': API_VERSION });
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
