/**
 * The S3 blob store settings: every bad value is refused with a message naming the setting, and
 * the start-up probe tells a missing bucket, refused credentials and an unreachable endpoint
 * apart on a real Ceph RADOS Gateway (a dead port answers within the request timeout, no hang).
 */
import t from 'tap';
import { createServer } from 'node:net';
import { S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import { loadBlobStoreSettings, probeBucket, s3ClientSettings, type S3Settings } from '../../server/blob-store-settings.js';
import { startCephRgw, cephSkip } from '../helpers/ceph-rgw.js';
import { loadConfig } from '../../server/config.js';
import { PART_HEADROOM } from '../../engine/blobs/s3-budget.js';

const MIB = 1024 * 1024;

const base = { SLIPWAY_BLOB_STORE: 's3', SLIPWAY_S3_BUCKET: 'slipway-blobs', SLIPWAY_S3_ENDPOINT: 'http://127.0.0.1:7480' };

t.test('defaults: the filesystem; s3 with its defaults', async (t) => {
  t.same(loadBlobStoreSettings({}), { kind: 'fs' });
  const s = loadBlobStoreSettings(base);
  t.match(s, { kind: 's3', bucket: 'slipway-blobs', region: 'us-east-1', prefix: '', pathStyle: true, partSizeBytes: 8 * 1024 * 1024, uploadConcurrency: 4, putLimitBytes: 32 * 1024 * 1024, redirect: false, redirectExpirySeconds: 300, requestTimeoutSeconds: 10 });
  t.match(loadBlobStoreSettings({ SLIPWAY_BLOB_STORE: 's3', SLIPWAY_S3_BUCKET: 'b-1', AWS_REGION: 'eu-west-1' }), { region: 'eu-west-1', pathStyle: false }, 'AWS: region from the SDK variable, virtual-hosted addressing');
  t.match(loadBlobStoreSettings({ ...base, SLIPWAY_S3_PREFIX: 'reg/', SLIPWAY_S3_PART_SIZE: '16', SLIPWAY_S3_REDIRECT: 'on', SLIPWAY_S3_REDIRECT_EXPIRY: '60' }), { prefix: 'reg/', partSizeBytes: 16 * 1024 * 1024, putLimitBytes: 64 * 1024 * 1024, redirect: true, redirectExpirySeconds: 60 });
  t.match(loadBlobStoreSettings({ ...base, SLIPWAY_S3_PUT_LIMIT: '8' }), { putLimitBytes: 8 * 1024 * 1024 }, 'put limit down to the part size');
  t.match(loadBlobStoreSettings({ ...base, SLIPWAY_S3_PART_SIZE: '2048', SLIPWAY_S3_UPLOAD_CONCURRENCY: '4' }), { putLimitBytes: 5120 * 1024 * 1024 }, 'default put limit at most 5 GiB');
});

t.test('bad values name their setting', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ SLIPWAY_BLOB_STORE: 'gcs' }, /SLIPWAY_BLOB_STORE: expected one of fs, s3, got "gcs"/],
    [{ SLIPWAY_S3_BUCKET: 'slipway-x' }, /environment variable SLIPWAY_S3_BUCKET is set but blob_store \(SLIPWAY_BLOB_STORE\) is not s3/],
    [{ SLIPWAY_BLOB_STORE: 's3' }, /s3.bucket \(SLIPWAY_S3_BUCKET\) is required when environment variable SLIPWAY_BLOB_STORE is s3/],
    [{ ...base, SLIPWAY_S3_BUCKET: 'Bad_Bucket' }, /SLIPWAY_S3_BUCKET: expected a bucket name .*got "Bad_Bucket"/],
    [{ ...base, SLIPWAY_S3_ENDPOINT: 'ftp://x' }, /SLIPWAY_S3_ENDPOINT: expected an http or https URL, got "ftp:\/\/x"/],
    [{ ...base, SLIPWAY_S3_PREFIX: 'noslash' }, /SLIPWAY_S3_PREFIX: expected empty or a relative key prefix ending in \/.*got "noslash"/],
    [{ ...base, SLIPWAY_S3_PART_SIZE: '4' }, /SLIPWAY_S3_PART_SIZE: expected an integer 5-5120 \(MiB\), got "4"/],
    [{ ...base, SLIPWAY_S3_UPLOAD_CONCURRENCY: '0' }, /SLIPWAY_S3_UPLOAD_CONCURRENCY: expected .*got "0"/],
    [{ ...base, SLIPWAY_S3_PUT_LIMIT: '7' }, /SLIPWAY_S3_PUT_LIMIT: expected a size in MiB from the part size \(8\) to 5120, got 7/],
    [{ ...base, SLIPWAY_S3_REDIRECT: 'maybe' }, /SLIPWAY_S3_REDIRECT: expected on or off, got "maybe"/],
    [{ ...base, SLIPWAY_S3_REDIRECT_EXPIRY: '604801' }, /SLIPWAY_S3_REDIRECT_EXPIRY: expected .*got "604801"/],
    [{ ...base, SLIPWAY_S3_TIMEOUT: '0' }, /SLIPWAY_S3_TIMEOUT: expected .*got "0"/],
    [{ ...base, SLIPWAY_S3_REGION: 'EU WEST' }, /SLIPWAY_S3_REGION: expected .*got "EU WEST"/],
  ];
  for (const [env, message] of cases) t.throws(() => loadBlobStoreSettings(env), message, JSON.stringify(env));
});

t.test('the upload memory budget must hold one part beside the receive buffers', async (t) => {
  const least = Math.ceil((8 * MIB + PART_HEADROOM) / MIB);
  t.throws(() => loadConfig({ ...base, SLIPWAY_UPLOAD_MEMORY: String(least - 1) }), new RegExp(`environment variable SLIPWAY_UPLOAD_MEMORY: ${least - 1} MiB cannot hold one S3 part .*set at least ${least}`));
  t.equal(loadConfig({ ...base, SLIPWAY_UPLOAD_MEMORY: String(least) }).uploadMemoryMiB, least, 'exactly enough is accepted');
  t.equal(loadConfig({ SLIPWAY_UPLOAD_MEMORY: '1' }).uploadMemoryMiB, 1, 'the filesystem store has no such floor');
});

t.test('the start-up probe on a real RGW', { skip: cephSkip() }, async (t) => {
  const rgw = await startCephRgw();
  t.teardown(() => rgw.stop());
  const env = { SLIPWAY_BLOB_STORE: 's3', SLIPWAY_S3_ENDPOINT: rgw.endpoint, SLIPWAY_S3_BUCKET: 'probe-ok', SLIPWAY_S3_TIMEOUT: '2' };
  const credentials = { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey };
  const clientFor = (s: S3Settings, creds = credentials) => {
    const c = new S3Client({ ...s3ClientSettings(s), credentials: creds });
    t.teardown(() => c.destroy());
    return c;
  };
  const ok = loadBlobStoreSettings(env) as S3Settings;
  await clientFor(ok).send(new CreateBucketCommand({ Bucket: 'probe-ok' }));
  await t.resolves(probeBucket(clientFor(ok), ok), 'an existing bucket passes');
  const missing = loadBlobStoreSettings({ ...env, SLIPWAY_S3_BUCKET: 'probe-missing' }) as S3Settings;
  await t.rejects(probeBucket(clientFor(missing), missing), /SLIPWAY_S3_BUCKET: bucket "probe-missing" does not exist/);
  await t.rejects(probeBucket(clientFor(ok, { accessKeyId: rgw.accessKeyId, secretAccessKey: 'wrong' }), ok), /access to bucket "probe-ok" .* refused \(403\)/);
  // A port that accepts connections and never answers: the probe gives up within the timeout.
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  t.teardown(() => silent.close());
  const port = (silent.address() as { port: number }).port;
  const dead = loadBlobStoreSettings({ ...env, SLIPWAY_S3_ENDPOINT: `http://127.0.0.1:${port}`, SLIPWAY_S3_TIMEOUT: '1' }) as S3Settings;
  const started = Date.now();
  await t.rejects(probeBucket(clientFor(dead), dead), /SLIPWAY_S3_ENDPOINT: the object store at http:\/\/127\.0\.0\.1:\d+ did not answer/);
  t.ok(Date.now() - started < 10_000, `an unanswering store is reported in ${Date.now() - started} ms, not a hang`);
});
