/**
 * Opens the blob store the settings name (server/blob-store-settings.ts): the data directory's
 * filesystem backend (the default) or an S3 bucket, checked at start so that bad or unreachable
 * settings stop the start with a message naming the setting. The S3 client takes its
 * credentials from the AWS SDK's default chain and bounds every request by SLIPWAY_S3_TIMEOUT,
 * so an unreachable store fails requests (UNAVAILABLE, 503) instead of hanging them.
 */
import type { S3BlobBackend } from '../engine/blobs/s3-backend.js';
import type { BlobBackend } from '../engine/blobs/contract.js';
import type { HashFactory } from '../engine/blobs/running-hash.js';
import { probeBucket, s3ClientSettings, type BlobStoreSettings } from './blob-store-settings.js';

/** An opened blob store. */
export interface OpenedBlobStore<B extends BlobBackend = BlobBackend> {
  /** The bytes, through the blob contract. */
  backend: B;
  /** Lifetime (seconds) of the presigned URLs blob GETs redirect to; undefined: bytes are served by Slipway. */
  redirectExpirySeconds?: number;
  /**
   * Readiness check of the medium: resolves when it answers (S3: HeadBucket within the request
   * timeout); undefined for the filesystem (the data directory has its own checks).
   * @throws Error with the store's answer.
   */
  check?(): Promise<void>;
  /** Releases the client's connections. Idempotent. */
  close(): void;
}

/**
 * Opens the store of `settings`. For `fs`, `fsBackend()` makes the filesystem backend (the
 * caller's: it roots it in the data directory). For `s3`, builds the client, probes the bucket.
 * @param newHash running sha256 of upload sessions (the server's hash thread)
 * @param node the node whose upload sessions the S3 backend creates (SLIPWAY_NODE_NAME; its keys' `<node>` segment)
 * @throws Error naming the setting when the bucket is missing, refused or does not answer.
 */
export async function openBlobStore<F extends BlobBackend>(settings: BlobStoreSettings, fsBackend: () => F, newHash?: HashFactory, node?: string): Promise<OpenedBlobStore<F | S3BlobBackend>> {
  if (settings.kind === 'fs') return { backend: fsBackend(), close: () => {} };
  // Loaded only for an S3 store: the AWS SDK costs a filesystem node about 17 MiB of RSS.
  const { S3BlobBackend } = await import('../engine/blobs/s3-backend.js');
  const backend = new S3BlobBackend({
    client: s3ClientSettings(settings),
    bucket: settings.bucket,
    prefix: settings.prefix,
    partSize: settings.partSizeBytes,
    uploadConcurrency: settings.uploadConcurrency,
    putLimit: settings.putLimitBytes,
    ...(newHash ? { newHash } : {}),
    ...(node ? { node } : {}),
  });
  try {
    await probeBucket(backend.client, settings);
  } catch (e) {
    backend.client.destroy();
    throw e;
  }
  return {
    backend,
    ...(settings.redirect ? { redirectExpirySeconds: settings.redirectExpirySeconds } : {}),
    check: () => probeBucket(backend.client, settings),
    close: () => backend.client.destroy(),
  };
}
