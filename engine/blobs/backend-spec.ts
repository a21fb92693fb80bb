/**
 * A serialisable description of a blob backend (contract.ts), so that a worker thread can open
 * its own instance of the server's backend and read blobs by digest (workers/inspect-image.ts)
 * instead of being handed file paths. Plain data only: it crosses `postMessage`.
 */
import type { S3ClientConfig } from '@aws-sdk/client-s3';
import type { BlobBackend } from './contract.js';

/** Where a backend keeps its bytes: the filesystem's data directory, or an S3 bucket. */
export type BlobBackendSpec =
  | { kind: 'fs'; dataDir: string }
  | {
    kind: 's3';
    /** Client settings (plain values: endpoint, region, static credentials, addressing). */
    client: S3ClientConfig;
    bucket: string;
    prefix: string;
    partSize: number;
    uploadConcurrency: number;
    putLimit?: number;
    /** The node whose sessions the backend creates (s3-backend.ts `S3BackendOptions.node`). */
    node?: string;
  };

/**
 * Opens a backend from its description (the S3 SDK is loaded only for an S3 one). Readers of a
 * second instance see the same committed blobs as the first.
 */
export async function openBlobBackend(spec: BlobBackendSpec): Promise<BlobBackend> {
  if (spec.kind === 'fs') {
    const { FsBlobBackend } = await import('./fs-backend.js');
    return new FsBlobBackend(spec.dataDir);
  }
  const { S3BlobBackend } = await import('./s3-backend.js');
  return new S3BlobBackend({ client: spec.client, bucket: spec.bucket, prefix: spec.prefix, partSize: spec.partSize, uploadConcurrency: spec.uploadConcurrency, ...(spec.putLimit === undefined ? {} : { putLimit: spec.putLimit }), node: spec.node });
}
