/**
 * The blob contract suite against the S3 backend on a real Ceph RADOS Gateway started by the
 * harness (one bucket, a fresh key prefix per subtest), plus what only S3 has: presigned GET
 * URLs, the requests a session costs (one PutObject up to `putLimit`, a multipart upload past
 * it), signed payloads the store checks (a part changed after its hash was taken, a PutObject
 * signed with another digest: both refused, nothing committed), and settings checks. Skipped
 * only when Ceph is not installed outside CI.
 */
import t from 'tap';
import { randomBytes, createHash } from 'node:crypto';
import { S3Client, CreateBucketCommand, ListMultipartUploadsCommand, type S3ClientConfig } from '@aws-sdk/client-s3';
import { S3BlobBackend, s3ClientConfig, MIN_PART_SIZE } from '../../engine/blobs/s3-backend.js';
import type { Digest } from '../../engine/digest.js';
import { blobContractSuite } from '../helpers/blob-contract-suite.js';
import { startCephRgw, cephSkip } from '../helpers/ceph-rgw.js';
import { waitFor } from '../helpers/daemons.js';

const skip = cephSkip();

async function readAll(s: AsyncIterable<unknown>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

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
    heldBytes: 2 * MIN_PART_SIZE,
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

  /** A backend on its own client whose sent commands are recorded in `sent`. */
  const counting = (prefix: string, extra: { putLimit?: number } = {}) => {
    const sent: string[] = [];
    const own = new S3Client(s3ClientConfig({ endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } } as S3ClientConfig));
    own.middlewareStack.add((next, context) => (args) => { sent.push(context.commandName!.replace(/Command$/, '')); return next(args); }, { step: 'initialize', name: 'count' });
    t.teardown(() => own.destroy());
    return { sent, backend: new S3BlobBackend({ client: own, bucket: Bucket, prefix, partSize: MIN_PART_SIZE, uploadConcurrency: 2, ...extra }) };
  };
  const openUploads = async (prefix: string) => (await client.send(new ListMultipartUploadsCommand({ Bucket, Prefix: prefix }))).Uploads?.length ?? 0;

  t.test('a session up to putLimit is one PutObject; past it, a multipart upload', async (t) => {
    const { sent, backend } = counting('count/');
    t.equal(backend.putLimit, 2 * MIN_PART_SIZE, 'default putLimit: part size × upload concurrency');
    for (const [size, want] of [
      [0, ['HeadObject', 'PutObject']],
      [2 * MIN_PART_SIZE, ['HeadObject', 'PutObject']],
      [2 * MIN_PART_SIZE + 1, ['CreateMultipartUpload', 'UploadPart', 'UploadPart', 'UploadPart', 'HeadObject', 'CompleteMultipartUpload', 'CopyObject', 'DeleteObject']],
    ] as Array<[number, string[]]>) {
      const bytes = randomBytes(size);
      const d = `sha256:${createHash('sha256').update(bytes).digest('hex')}` as Digest;
      sent.length = 0;
      const w = await backend.create(`c${size}`);
      for (let at = 0; at < size; at += 1_000_003) await w.append(bytes.subarray(at, at + 1_000_003));
      if (size > 2 * MIN_PART_SIZE) await waitFor('the multipart upload past putLimit', async () => (await openUploads('count/')) === 1);
      else t.equal(await openUploads('count/'), 0, `${size} B: no multipart upload up to putLimit`);
      await w.commit(d);
      await new Promise((r) => setTimeout(r, 100)); // the session object's delete goes out after the answer
      t.same([...sent].sort(), [...want].sort(), `${size} B: ${want.join(', ')}`);
      t.ok((await readAll(await backend.read(d))).equals(bytes), `${size} B: read back identical`);
    }
    t.equal(await openUploads('count/'), 0, 'no multipart upload left');
  });

  t.test('a part whose bytes change after its hash was taken is refused by the store; nothing is committed', async (t) => {
    class Tampering extends S3BlobBackend {
      override async payloadHash(bytes: Buffer): Promise<string> {
        const hex = await super.payloadHash(bytes);
        if (bytes.length === MIN_PART_SIZE) bytes[12345] ^= 0xff; // after hashing, before sending
        return hex;
      }
    }
    const b = new Tampering({ client, bucket: Bucket, prefix: 'tamper/', partSize: MIN_PART_SIZE, uploadConcurrency: 2, putLimit: MIN_PART_SIZE });
    const bytes = randomBytes(2 * MIN_PART_SIZE + 10);
    const d = `sha256:${createHash('sha256').update(bytes).digest('hex')}` as Digest;
    const w = await b.create('t1');
    const done = (async () => {
      for (let at = 0; at < bytes.length; at += 1_048_576) await w.append(Buffer.from(bytes.subarray(at, at + 1_048_576)));
      return w.commit(d);
    })();
    await t.rejects(done, { name: 'XAmzContentSHA256Mismatch' }, 'the upload fails with the store\'s refusal of the part');
    await w.abort(); // what the upload engine does with a session whose write failed
    t.equal(await b.stat(d), undefined, 'nothing under the digest');
    t.same(await collect(b.list()), [], 'no blob');
    t.equal(await openUploads('tamper/'), 0, 'the multipart upload was aborted');
  });

  t.test('a PutObject signed with a digest other than its bytes is refused; nothing is committed', async (t) => {
    const b = make('forged/');
    const bytes = randomBytes(100_000);
    const other = `sha256:${createHash('sha256').update(Buffer.from('other bytes')).digest('hex')}` as Digest;
    await t.rejects(b.publish(other, bytes.length, [bytes.subarray(0, 50_000), bytes.subarray(50_000)], () => true), { name: 'XAmzContentSHA256Mismatch' });
    t.equal(await b.stat(other), undefined, 'nothing under the claimed digest');
  });

  t.test('bad settings are refused naming the setting', async (t) => {
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, partSize: 1024 }), /partSize/);
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, uploadConcurrency: 0 }), /uploadConcurrency/);
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, prefix: 'x' }), /prefix/);
    t.throws(() => new S3BlobBackend({ client, bucket: Bucket, partSize: MIN_PART_SIZE, putLimit: MIN_PART_SIZE - 1 }), /putLimit/);
  });
});
