/**
 * Slipway on S3 for tests: a Ceph RADOS Gateway (ceph-rgw.ts) with one bucket, the
 * SLIPWAY_BLOB_STORE=s3 settings that point a server at it, and a backend on the same bucket
 * and prefix for checks of what the store holds. Credentials reach the server the way they
 * reach it in production, through the AWS SDK's default chain: AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY in the environment (set in this process for in-process servers; a
 * spawned server inherits it).
 */
import { S3Client, CreateBucketCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { S3BlobBackend, s3ClientConfig } from '../../engine/blobs/s3-backend.js';
import { startCephRgw, type CephRgw } from './ceph-rgw.js';
import { waitFor } from './daemons.js';

/** A running RGW with a bucket for one test file. */
export interface S3Store {
  rgw: CephRgw;
  client: S3Client;
  bucket: string;
  /** SLIPWAY_* settings for a server on `prefix` (plus `extra`, e.g. SLIPWAY_S3_REDIRECT). */
  env(prefix: string, extra?: Record<string, string>): Record<string, string>;
  /** A backend on the bucket and `prefix`, to check what the store holds. */
  backend(prefix: string): S3BlobBackend;
  /** Multipart uploads still open under `prefix` (abandoned parts). */
  openMultipart(prefix: string): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts RGW, creates the bucket `slipway` (retried for up to 30 s while radosgw comes up), and
 * exports the S3 user's keys as AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in this process.
 * @throws Error when the bucket cannot be created; RGW is stopped first
 */
export async function startS3Store(opts: { memstoreBytes?: number } = {}): Promise<S3Store> {
  const rgw = await startCephRgw(opts);
  process.env.AWS_ACCESS_KEY_ID = rgw.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = rgw.secretAccessKey;
  const client = new S3Client(s3ClientConfig({ endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } }));
  const bucket = 'slipway';
  try {
    // radosgw may answer HTTP before it serves S3: a CreateBucket then got a 404 with a body that
    // is not S3's XML. Retried until it takes (an attempt whose answer was lost may have created it).
    await waitFor('radosgw to create the bucket', async () => {
      try {
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
      } catch (e) {
        if ((e as { name?: string }).name !== 'BucketAlreadyOwnedByYou') throw e;
      }
      return true;
    }, { timeoutMs: 30_000, intervalMs: 200 });
  } catch (e) {
    // The caller has no handle to stop what started: left running, the daemons would hold the
    // test process open until tap's timeout.
    client.destroy();
    await rgw.stop();
    throw e;
  }
  return {
    rgw, client, bucket,
    env: (prefix, extra = {}) => ({
      SLIPWAY_BLOB_STORE: 's3', SLIPWAY_S3_ENDPOINT: rgw.endpoint, SLIPWAY_S3_BUCKET: bucket, SLIPWAY_S3_PREFIX: prefix,
      // SLIPWAY_S3_PUT_LIMIT at the part size: sessions past one part are multipart uploads, as
      // the tests of multipart sessions (crashes, reapers, aborts) need; '' gives the default.
      SLIPWAY_S3_PART_SIZE: '5', SLIPWAY_S3_PUT_LIMIT: '5', SLIPWAY_S3_TIMEOUT: '5', ...extra,
    }),
    backend: (prefix) => new S3BlobBackend({ client, bucket, prefix }),
    openMultipart: async (prefix) => (await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }))).Uploads?.length ?? 0,
    stop: async () => { client.destroy(); await rgw.stop(); },
  };
}
