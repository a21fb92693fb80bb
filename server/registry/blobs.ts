/** Blob GET (with Range), HEAD and DELETE (distribution spec "Pulling blobs", "Deleting blobs"). */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from './context.js';
import type { Admission } from './admission.js';
import type { RouteParams } from './routes.js';
import { parseDigest, type Digest } from '../../engine/digest.js';
import { fail, isSlipwayError } from '../../engine/errors.js';
import type { BlobReader } from '../../engine/blobs/contract.js';
import { API_VERSION_HEADER } from './context.js';
import { quarantineBlob, sizeCheck, type BlobCheck } from '../../engine/blobs/quarantine.js';
import type { BlobRecord } from '../../engine/blobs/records.js';

/** GET/HEAD of a blob (admitted for pull), with one `bytes=` Range. */
export async function getBlob(ctx: RegistryContext, ex: Exchange, _admitted: Admission, { name: repository, digest: digestParam }: RouteParams): Promise<void> {
  const digest = parseDigest(digestParam);
  let blob = await ctx.registry.statBlob(repository, digest);
  // Never serve bytes that are not the record's: wait for a pending start-up verification, and
  // check the file's size (quarantining the blob when it differs: clients then push it again).
  const pending = ctx.legacyCheck?.pending(digest);
  if (pending) {
    await pending;
    blob = await ctx.registry.statBlob(repository, digest);
  }
  // A medium that answers a stat at once (the filesystem) has the bytes' size checked on every
  // GET and HEAD; a remote one (S3) on GET through the reader's size, and HEAD answers from the
  // record alone (no round trip to the store).
  const remote = ctx.blobs.statSync === undefined;
  if (!remote) {
    const check = sizeCheck(ctx.blobs, digest, blob);
    await refuseUnlessOk(ctx, digest, blob, check instanceof Promise ? await check : check);
  }
  const headers: Record<string, string> = {
    ...API_VERSION_HEADER,
    'content-type': 'application/octet-stream',
    'docker-content-digest': digest,
    etag: `"${digest}"`,
    'accept-ranges': 'bytes',
    'cache-control': 'max-age=31536000',
  };
  if (ex.method === 'HEAD') return ex.send(200, headers, undefined, blob.size);
  if (ctx.blobRedirectSeconds !== undefined) {
    // The distribution spec allows a redirect for blob GET ("Pulling blobs"); the client
    // sends its Range to the store, which serves the same bytes.
    const url = await ctx.blobs.presignedUrl(digest, ctx.blobRedirectSeconds);
    if (url !== undefined) {
      return ex.send(307, { ...API_VERSION_HEADER, 'docker-content-digest': digest, location: url, 'cache-control': 'no-store' });
    }
  }
  const range = parseRange(ex.header('range'), blob.size);
  if (range) headers['content-range'] = `bytes ${range.start}-${range.start + range.length - 1}/${blob.size}`;
  // A blob GC deletes meanwhile is still read through the open reader (contract.ts BlobReader).
  let reader: BlobReader;
  try {
    reader = await ctx.blobs.open(digest);
  } catch (e) {
    // Recorded but absent from a remote store: quarantined, so HEADs (answered from the record)
    // stop claiming it and clients push it again.
    if (remote && isSlipwayError(e) && e.code === 'BLOB_UNKNOWN') await refuseUnlessOk(ctx, digest, blob, { ok: false, reason: 'object missing from the store' });
    throw e;
  }
  if (remote && reader.size !== blob.size) {
    await reader.close();
    await refuseUnlessOk(ctx, digest, blob, { ok: false, reason: `the store holds ${reader.size} bytes, record says ${blob.size}` });
  }
  try {
    await ex.sendBytes(range ? 206 : 200, headers, reader, range?.start ?? 0, range?.length ?? blob.size);
  } finally {
    await reader.close();
  }
}

/** Quarantines the blob and answers BLOB_UNKNOWN (clients push it again) unless `check` is ok. */
async function refuseUnlessOk(ctx: RegistryContext, digest: Digest, blob: BlobRecord, check: BlobCheck): Promise<void> {
  if (check.ok) return;
  await quarantineBlob(ctx.store.metadata, digest, check.reason, blob);
  throw fail('BLOB_UNKNOWN', 'blob unknown to registry', { digest });
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
