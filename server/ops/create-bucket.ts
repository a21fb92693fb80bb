/**
 * `slipway s3 create-bucket`: creates the bucket named by the s3.* settings (CreateBucket; on AWS
 * outside us-east-1 with the region as its location constraint), then checks that it answers
 * (HeadBucket, as every node does at start). A bucket that already answers to these credentials
 * is fine (exit 0, "already exists"); one owned by another account is an error.
 */
import type { S3Settings } from '../blob-store-settings.js';
import { probeBucket, s3ClientSettings } from '../blob-store-settings.js';

/**
 * Creates the bucket of `s`.
 * @returns whether it was created now or existed already
 * @throws Error naming the bucket and the store's answer when it cannot be created or does not answer.
 */
export async function createBucket(s: S3Settings): Promise<'created' | 'exists'> {
  const { S3Client, CreateBucketCommand, HeadBucketCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client(s3ClientSettings(s));
  const bounded = () => ({ abortSignal: AbortSignal.timeout(s.requestTimeoutSeconds * 1000) });
  try {
    // HeadBucket first: S3 in us-east-1 and Ceph RGW answer 200 to a CreateBucket of a bucket
    // the caller already owns, so only a HeadBucket tells "already exists" apart.
    try {
      await client.send(new HeadBucketCommand({ Bucket: s.bucket }), bounded());
      return 'exists';
    } catch {
      // Absent (404) or not ours to see: CreateBucket gives the store's own answer.
    }
    try {
      await client.send(new CreateBucketCommand({
        Bucket: s.bucket,
        ...(s.endpoint === undefined && s.region !== 'us-east-1' ? { CreateBucketConfiguration: { LocationConstraint: s.region as never } } : {}),
      }), bounded());
    } catch (e) {
      const name = (e as Error).name;
      if (name === 'BucketAlreadyExists') throw new Error(`bucket "${s.bucket}" exists and belongs to another account; choose another s3.bucket`);
      throw new Error(`cannot create bucket "${s.bucket}" at ${s.endpoint ?? `AWS S3 (${s.region})`}: ${name}: ${(e as Error).message}`);
    }
    await probeBucket(client, s);
    return 'created';
  } finally {
    client.destroy();
  }
}
