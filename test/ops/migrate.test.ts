/**
 * `slipway migrate` through the real CLI binary: a data directory made by a real server run (an
 * image pushed with the registry API, an app, an OAuth client, an authorization with tokens) is
 * copied into a real PostgreSQL (test/helpers/postgres.ts) and a real Ceph RGW
 * (test/helpers/ceph-rgw.ts). The copy refuses while the server runs; afterwards the counts are
 * equal, every record reads back equal through the PostgreSQL metadata contract, every blob in
 * the bucket hashes to its digest; a re-run copies nothing; an interrupted run (records and a
 * blob missing from the targets, a record changed) is completed; a target record the data
 * directory does not have fails the verification. Last, a node started on the migrated database
 * (SLIPWAY_DATABASE_URL) serves the pushed image, the app, the client and the token.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { S3Client, CreateBucketCommand } from '@aws-sdk/client-s3';
import { startSpawned } from '../helpers/harness.js';
import { runCli, tempDir } from '../helpers/server.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { V3 } from '../helpers/oauth.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startCephRgw, cephSkip } from '../helpers/ceph-rgw.js';
import { openStore } from '../../engine/store.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { storedKeyspace } from '../../engine/storage/metadata.js';
import { SCHEMA_VERSION } from '../../engine/migrations.js';
import { S3BlobBackend, s3ClientConfig } from '../../engine/blobs/s3-backend.js';
import { scanBlobRecords } from '../../engine/blobs/refs.js';
import { sameValue } from '../../server/ops/migrate.js';
import type { Digest } from '../../engine/digest.js';

const skip = postgresSkip() || cephSkip();

t.test('slipway migrate into PostgreSQL and Ceph RGW', { skip }, async (t) => {
  const tmp = tempDir('slipway-migrate-');
  t.teardown(() => tmp.cleanup());
  const dataDir = join(tmp.dir, 'data');

  // A data directory made by a real server run.
  const server = await startSpawned({ dataDir });
  let serverStopped = false;
  t.teardown(async () => { if (!serverStopped) await server.stop(); });
  const key = server.apiKey!;
  t.equal((await createApp(server.urls.api, key, 'migapp')).status, 201, 'app created');
  const call = (method: string, path: string, body: unknown) => http(method, server.urls.api + path, {
    headers: { ...bearer(key), accept: V3, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  const client = await call('POST', '/oauth/clients', { name: 'Migrated client', redirect_uri: 'http://127.0.0.1:9/cb' });
  t.equal(client.status, 201, 'OAuth client registered');
  const authz = await call('POST', '/oauth/authorizations', { description: 'migrated token', scope: ['global'] });
  t.equal(authz.status, 201, 'authorization with a token created');
  const img = await pushBuiltImage({ registry: server.urls.registry, auth: bearer(key) }, 'migapp/web', 'v1', await buildImage(join(tmp.dir, 'img'), sampleSpec()));

  const [pg, rgw] = await Promise.all([startPostgres(), startCephRgw()]);
  t.teardown(() => Promise.all([pg.stop(), rgw.stop()]));
  const s3 = new S3Client(s3ClientConfig({ endpoint: rgw.endpoint, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } }));
  t.teardown(() => s3.destroy());
  await s3.send(new CreateBucketCommand({ Bucket: 'slipway-migrated' }));
  const env = {
    SLIPWAY_S3_ENDPOINT: rgw.endpoint, SLIPWAY_S3_BUCKET: 'slipway-migrated', SLIPWAY_S3_PREFIX: 'node1/',
    AWS_ACCESS_KEY_ID: rgw.accessKeyId, AWS_SECRET_ACCESS_KEY: rgw.secretAccessKey,
  };
  const args = ['migrate', '--to-database', pg.connectionString, '--to-blob-store', 's3', '--data', dataDir];
  const migrateJson = async () => {
    const r = await runCli([...args, '--json'], env);
    return { ...r, report: r.code <= 1 && r.stdout.trim() ? JSON.parse(r.stdout) : undefined };
  };

  for (const [label, bad, message] of [
    ['no target', ['migrate', '--data', dataDir], /needs --to-database/],
    ['not a postgres URL', ['migrate', '--to-database', 'mysql://x/y', '--data', dataDir], /postgres:\/\/ or postgresql:\/\/ URL/],
    ['unknown blob store', ['migrate', '--to-database', pg.connectionString, '--to-blob-store', 'gcs', '--data', dataDir], /must be s3/],
    ['no data directory', ['migrate', '--to-database', pg.connectionString, '--data', join(tmp.dir, 'nothing')], /not a Slipway data directory/],
  ] as Array<[string, string[], RegExp]>) {
    const r = await runCli(bad, env);
    t.equal(r.code, 1, `${label}: exit 1`);
    t.match(r.stderr, message, `${label}: says why`);
  }
  const noBucket = await runCli(args, { ...env, SLIPWAY_S3_BUCKET: 'no-such-bucket' });
  t.match(noBucket.stderr, /bucket "no-such-bucket" does not exist/, 'a missing bucket is named before anything is copied');

  const busy = await runCli(args, env);
  t.equal(busy.code, 1, 'refused while the server has the data directory open');
  t.match(busy.stderr, /in use by process \d+/);
  const pgEmpty = await PostgresMetadataStore.open({ connectionString: pg.connectionString });
  t.same(await pgEmpty.keyspaceNames(), [], 'nothing was copied');
  await pgEmpty.close();
  await server.stop();
  serverStopped = true;

  const first = await runCli(args, env);
  t.equal(first.code, 0, `first run succeeds: ${first.stderr}`);
  t.match(first.stdout, /Verified: \d+ keyspace\(s\) with equal counts/);
  t.match(first.stdout, /Blobs: 4 copied/, 'config and three layers copied');

  // Read back through the PostgreSQL contract, against the data directory.
  const source = await openStore(dataDir);
  const target = await PostgresMetadataStore.open({ connectionString: pg.connectionString });
  t.teardown(() => target.close());
  const lmdb = source.metadata as LmdbMetadataStore;
  // Keyspaces with records: LMDB lists every database ever opened (a setting read but never
  // written leaves an empty one), PostgreSQL the keyspaces that hold rows.
  const names = lmdb.keyspaceNames().filter((n) => n !== 'uploads' && [...lmdb.env.openDB<Buffer, string>(n, { encoding: 'binary' }).getKeys({ limit: 1 })].length > 0);
  t.ok(names.includes('manifests') && names.includes('clients') && names.includes('tokens') && names.includes('apps'), 'the run made manifests, clients, tokens and apps');
  t.same(await target.keyspaceNames(), names, 'the same keyspaces');
  for (const name of names) {
    const ks = storedKeyspace(name);
    const a = await source.metadata.range(ks), b = await target.range(ks);
    t.equal(b.length, a.length, `${name}: ${a.length} record(s) in both`);
    t.same(b.map((e) => e.key), a.map((e) => e.key), `${name}: the same keys in the same order`);
    t.ok(a.every((e, i) => sameValue(e.value, b[i]!.value)), `${name}: every record equal`);
  }
  const bucket = new S3BlobBackend({ client: s3, bucket: 'slipway-migrated', prefix: 'node1/' });
  const digests: Digest[] = [];
  for await (const { key: d, value } of scanBlobRecords(source.metadata)) {
    digests.push(d as Digest);
    const chunks: Buffer[] = [];
    for await (const c of await bucket.read(d as Digest)) chunks.push(c as Buffer);
    const bytes = Buffer.concat(chunks);
    t.equal(bytes.length, value.size, `${d.slice(7, 19)}: size`);
    t.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, d, `${d.slice(7, 19)}: the bucket's bytes hash to the digest`);
  }
  t.same(digests.sort(), [img.configDigest, ...img.layers.map((l) => l.digest)].sort(), 'every blob of the image');
  const manifest = await target.get(storedKeyspace('manifests'), img.manifestDigest) as { text: string };
  t.ok(Buffer.from(manifest.text).equals(img.manifest), 'the manifest bytes read back from PostgreSQL exactly');

  await source.close(); // migrate refuses a data directory another process has open

  const again = await migrateJson();
  t.equal(again.code, 0);
  t.equal(again.report.records.copied, 0, 'a re-run copies no record');
  t.equal(again.report.blobs.copied, 0, 'and no blob');
  t.equal(again.report.blobs.present, 4);
  t.same(again.report.problems, []);
  const human = await runCli(args, env);
  t.match(human.stdout, /Nothing new to copy/, 'and says so');

  // An interrupted run: records and a blob missing, a record changed; the next run completes it.
  await target.transact(async (tx) => {
    tx.remove(storedKeyspace('meta'), 'schema');
    tx.remove(storedKeyspace('tags'), (await tx.range(storedKeyspace('tags')))[0]!.key);
    const app = (await tx.range(storedKeyspace('apps')))[0]!;
    tx.put(storedKeyspace('apps'), app.key, { ...(app.value as object), name: 'changed' });
  });
  await bucket.delete(img.layers[0]!.digest as Digest);
  const resumed = await migrateJson();
  t.equal(resumed.code, 0);
  t.equal(resumed.report.blobs.copied, 1, 'the missing blob copied');
  t.equal(resumed.report.records.copied, 3, 'the missing and changed records written');
  t.equal(resumed.report.keyspaces.meta.copied, 1, 'the schema stamp written again');
  t.same(resumed.report.problems, []);
  t.equal(await target.get(storedKeyspace('meta'), 'schema'), SCHEMA_VERSION);

  // A record the data directory does not have: the target is not a copy of it.
  await target.transact((tx) => tx.put(storedKeyspace('apps'), 'stray', { id: 'stray' }));
  const extra = await migrateJson();
  t.equal(extra.code, 1, 'verification fails');
  t.match(extra.report.problems.join('\n'), /apps: "stray" is in the target but not in the data directory/);
  await target.transact((tx) => tx.remove(storedKeyspace('apps'), 'stray'));

  // A node on the migrated database (SLIPWAY_DATABASE_URL; blobs in the data directory's files,
  // which the migration left in place) serves what the embedded node stored.
  const node = await startSpawned({ dataDir, databaseUrl: pg.connectionString });
  t.teardown(() => node.stop());
  const pulled = await http('GET', `${node.urls.registry}/v2/migapp/web/manifests/v1`, { headers: bearer(key) });
  t.equal(pulled.status, 200, 'the tag resolves on the new node');
  t.ok(pulled.bytes.equals(img.manifest), 'the manifest pulls byte-identical');
  const layer = await http('GET', `${node.urls.registry}/v2/migapp/web/blobs/${img.layers[0]!.digest}`, { headers: bearer(key) });
  t.ok(layer.bytes.equals(img.layers[0]!.bytes), 'a layer pulls byte-identical');
  const token = authz.json.access_token.token as string;
  const apps = await http('GET', `${node.urls.api}/apps`, { headers: { ...bearer(token), accept: V3 } });
  t.equal(apps.status, 200, 'the migrated authorization\'s token is accepted');
  t.same(apps.json.map((a: { name: string }) => a.name), ['migapp'], 'and lists the migrated app');
  const clients = await http('GET', `${node.urls.api}/oauth/clients`, { headers: { ...bearer(key), accept: V3 } });
  t.same(clients.json.map((c: { name: string }) => c.name), ['Migrated client'], 'the OAuth client is there');
});
