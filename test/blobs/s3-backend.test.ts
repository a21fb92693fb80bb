/**
 * The blob contract suite against the S3 backend on a real Ceph RADOS Gateway started by the
 * harness (one bucket, a fresh key prefix per subtest), plus what only S3 has: presigned GET
 * URLs, and settings checks. Skipped only when Ceph is not installed outside CI.
 */
import t from 'tap';
import { randomBytes, createHash } from 'node:crypto';
import { S3Client, CreateBucketCommand, ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { S3BlobBackend, s3ClientConfig, MIN_PART_SIZE } from '../../engine/blobs/s3-backend.js';
import type { Digest } from '../../engine/digest.js';
import { blobContractSuite } from '../helpers/blob-contract-suite.js';
import { startCephRgw, cephSkip } from '../helpers/ceph-rgw.js';

const skip = cephSkip();

t.test('S3 backend on Ceph RGW', { skip }, async (t) => {
  const rgw = await startCephRgw();
  t.teardown(() => rgw.stop());
  t.comment(`ceph-rgw ready in ${rgw.timings.total} ms ${JSON.stringify(rgw.timings)}`);
  const client = new S3Client(s3ClientConfig({
    endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
  }));
  t.teardown(() => client.destroy());
  const Bucket = 'slipway-test';
  await client.send(new CreateBucketCommand({ Bucket }));
  let n = 0;
  const make = (prefix: string) => new S3BlobBackend({ client, bucket: Bucket, prefix, partSize: MIN_PART_SIZE, uploadConcurrency: 2 });

  blobContractSuite(t, {
    partSize: MIN_PART_SIZE,
    async fresh() {
      const prefix = `t${n++}/`;
      return { backend: make(prefix), reopen: () => make(prefix) };
    },
  });

  t.test('no multipart upload is left in the bucket', async (t) => {
    const r = await client.send(new ListMultipartUploadsCommand({ Bucket }));
    t.same(r.Uploads ?? [], []);
  });

  t.test('presigned GET URL serves the blob, and expires', async (t) => {
    const b = make('presign/');
    const bytes = randomBytes(MIN_PART_SIZE + 3);
    const d = `sha256:${createHash('sha256').update(bytes).digest('hex')}` as Digest;
    const w = await b.create('p1');
    await w.append(bytes);
    await w.commit(d);
    const url = await b.presignedUrl(d, 60);
    t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/slipway-test\/presign\/blobs\/sha256\/[a-f0-9]{2}\/[a-f0-9]{64}\?/);
    const res = await fetch(url!);
    t.equal(res.status, 200);
    t.ok(Buffer.from(await res.arrayBuffer()).equals(bytes), 'byte-identical through the URL');
    const ranged = await fetch(url!, { headers: { range: 'bytes=10-19' } });
    t.equal(ranged.status, 206);
    t.ok(Buffer.from(await ranged.arrayBuffer()).equals(bytes.subarray(10, 20)), 'Range works through the URL');
    const short = await b.presignedUrl(d, 1);
    const expiry = Number(new URL(short!).searchParams.get('X-Amz-Expires'));
    t.equal(expiry, 1, 'expiry is the one asked for');
  });

  t.test('bad settings are refused naming the setting', async (t) => {
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, partSize: 1024 }), /partSize/);
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, uploadConcurrency: 0 }), /uploadConcurrency/);
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, prefix: 'x' }), /prefix/);
  });
});
