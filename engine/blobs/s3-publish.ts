/**
 * How the S3 backend (s3-backend.ts) makes a session's verified bytes visible under the blob's
 * final key `<prefix>blobs/sha256/<2 hex>/<hex>`, once the running digest matched the client's:
 *
 * - a session kept whole in memory (at most `S3BlobBackend.putLimit` bytes, s3-writer.ts) is one
 *   PutObject of its buffers, whose SigV4 payload hash is the blob's digest itself
 *   (s3-client.ts `signedPayload`): the store checks the bytes it receives against the digest
 *   the client asked for, and nothing is hashed again;
 * - a multipart session is completed under its session key and copied server-side (CopyObject up
 *   to 5 GiB, UploadPartCopy of 1 GiB ranges beyond): S3 has no rename, and the final key was not
 *   known when the upload started. RGW's copy within a bucket shares the data.
 *
 * Before either, one HeadObject of the final key: an existing copy of the same size is reused
 * when the caller's `reuse` agrees (dedupe; nothing is written then), replaced otherwise. Each
 * commit stores its own random `x-amz-meta-slipway-commit`, the blob's `version` (GC deletes the
 * copy it saw, never a replacement). The caller holds the digest's lock around this.
 */
import {
  PutObjectCommand, CopyObjectCommand, CreateMultipartUploadCommand, UploadPartCopyCommand,
  CompleteMultipartUploadCommand, type S3Client, type CompletedPart,
} from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import type { Digest } from '../digest.js';
import type { BlobStat } from './contract.js';
import { signedPayload } from './s3-client.js';

/** User metadata naming one commit of a blob: its `BlobStat.version`. */
export const COMMIT_META = 'slipway-commit';
/** The largest object CopyObject copies in one request: 5 GiB. */
const MAX_COPY_OBJECT = 5 * 1024 ** 3;
/** Range copied per UploadPartCopy for larger objects: 1 GiB. */
const COPY_PART = 1024 ** 3;

/** What publishing needs of the backend. */
export interface PublishTarget {
  client: S3Client;
  bucket: string;
  keyOf(digest: Digest): string;
  stat(digest: Digest): Promise<BlobStat | undefined>;
  abortUpload(key: string, uploadId: string): Promise<void>;
}

/** A session's bytes to publish: its buffers in order (one PutObject), or its multipart upload. */
export type PublishSource = readonly Buffer[] | { key: string; complete: () => Promise<void> };

/**
 * Makes verified bytes visible under `digest` (see the file header). Returns false when a
 * committed copy of the same size was reused (`reuse` agreed, asked at most once); nothing was
 * completed or written then.
 * @param size the session's bytes (the sum of the buffers' lengths for a PutObject)
 * @throws the store's errors (UNAVAILABLE through the client's middleware); a failed large copy
 *   aborts its multipart upload
 */
export async function publishBlob(target: PublishTarget, digest: Digest, size: number, source: PublishSource, reuse: (existing: BlobStat) => boolean | Promise<boolean>): Promise<boolean> {
  const { client, bucket: Bucket } = target;
  const existing = await target.stat(digest);
  if (existing && existing.size === size && (await reuse(existing))) return false;
  const Key = target.keyOf(digest);
  // Each commit's own version (the ETag of identical bytes is the same), so that GC's delete of
  // the copy it saw never takes a replacement committed since.
  const Metadata = { [COMMIT_META]: randomBytes(12).toString('hex') };
  if (Array.isArray(source)) {
    const bodies = source as readonly Buffer[];
    const hex = digest.slice('sha256:'.length);
    await client.send(signedPayload(new PutObjectCommand({ Bucket, Key, ContentLength: size, Metadata }), hex, bodies.length ? bodies : [Buffer.alloc(0)]));
    return true;
  }
  const session = source as { key: string; complete: () => Promise<void> };
  await session.complete();
  const CopySource = `${Bucket}/${encodeURI(session.key)}`;
  if (size <= MAX_COPY_OBJECT) {
    await client.send(new CopyObjectCommand({ Bucket, Key, CopySource, MetadataDirective: 'REPLACE', Metadata }));
    return true;
  }
  const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key, Metadata }));
  try {
    const Parts: CompletedPart[] = [];
    for (let start = 0, n = 1; start < size; start += COPY_PART, n++) {
      const end = Math.min(size, start + COPY_PART) - 1;
      const r = await client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: n, CopySource, CopySourceRange: `bytes=${start}-${end}` }));
      Parts.push({ PartNumber: n, ETag: r.CopyPartResult?.ETag });
    }
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } }));
  } catch (e) {
    await target.abortUpload(Key, UploadId!).catch(() => {});
    throw e;
  }
  return true;
}
