/**
 * `slipway s3 create-bucket` on a real Ceph RADOS Gateway, configured by a YAML file whose S3
 * credentials come from s3.access_key_id and a secret file: the bucket is created, a second run
 * says it exists (exit 0), and a node started on the same file passes its bucket probe and is
 * ready. The secret never appears in any output.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startCephRgw, cephSkip } from '../helpers/ceph-rgw.js';
import { tempDir } from '../helpers/server.js';
import { cli, get, ports, ready, serve } from '../helpers/config-cli.js';
import { waitFor } from '../helpers/daemons.js';

t.test('create the bucket from a config file, then start a node on it', { skip: cephSkip() }, async (t) => {
  const rgw = await startCephRgw();
  t.teardown(() => rgw.stop());
  const dir = tempDir('slipway-config-');
  t.teardown(dir.cleanup);
  writeFileSync(join(dir.dir, 's3-secret'), `${rgw.secretAccessKey}\n`, { mode: 0o600 });
  const [admin] = await ports(1);
  const file = join(dir.dir, 'node.yaml');
  writeFileSync(file, [
    'data: data',
    'registry: { port: 0, tls: off }',
    'api: { port: 0 }',
    'auth: { port: 0 }',
    'upload: { port: 0 }',
    `admin: { port: ${admin} }`,
    'blob_store: s3',
    's3:',
    `  endpoint: ${rgw.endpoint}`,
    '  bucket: made-by-slipway',
    '  prefix: cluster/',
    `  access_key_id: ${rgw.accessKeyId}`,
    '  secret_access_key_file: s3-secret',
    '  timeout: 5',
  ].join('\n'));

  const first = await cli(['s3', 'create-bucket', '--config', file]);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, `Bucket made-by-slipway created at ${rgw.endpoint}; it answers.`);
  const second = await cli(['s3', 'create-bucket', '--config', file]);
  t.equal(second.code, 0, second.stderr);
  t.match(second.stdout, 'Bucket made-by-slipway already exists');
  const wrong = join(dir.dir, 'wrong-secret');
  writeFileSync(wrong, 'not-the-secret\n');
  const refused = await cli(['s3', 'create-bucket', '--config', file, '--s3-secret-access-key-file', wrong]);
  t.equal(refused.code, 1, 'wrong credentials: exit 1');
  t.match(refused.stderr, /cannot create bucket "made-by-slipway"/);

  const node = serve(t, ['--config', file], {});
  await ready(node, admin!);
  await waitFor('/readyz 200 (the bucket probe passed)', async () => {
    const r = await get(admin!, '/readyz');
    return 'status' in r && r.status === 200;
  }, { timeoutMs: 60_000 });
  for (const out of [first.stdout, first.stderr, second.stdout, refused.stderr, node.output()]) {
    t.notOk(out.includes(rgw.secretAccessKey), 'never the secret access key');
  }
});
