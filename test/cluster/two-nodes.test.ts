/**
 * Two Slipway nodes on one real PostgreSQL (cluster mode, SLIPWAY_DATABASE_URL) and one data
 * directory (the server key and the filesystem blob store are shared that way until S3 and the
 * shared-key settings land): started together on an empty database, both come up and the schema
 * is migrated once; a token created on A authenticates on B; a revocation on A is refused on B
 * at B's very next request (through B's read cache and its per-request barrier); an app and an image pushed through A are
 * served by B; skopeo pushes through A and pulls byte-identical through B, and B releases it.
 */
import t from 'tap';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { postgresSkip } from '../helpers/postgres.js';
import { startTwoInProcessNodes } from '../helpers/cluster.js';
import { basic, bearer, createApp, http } from '../helpers/http.js';
import { api } from '../helpers/oauth.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { SCHEMA_VERSION } from '../../engine/migrations.js';

const skip = postgresSkip();

t.test('two nodes on one PostgreSQL', { skip }, async (t) => {
  // Both start at once on the empty database.
  const { a, b, db, key: operatorKey } = await startTwoInProcessNodes(t);

  t.test('started together: both up, one operator, the schema migrated once', async (t) => {
    t.equal([a, b].filter((n) => n.server.bootstrap !== null).length, 1, 'exactly one node created the operator account');
    const c = new pg.Client({ connectionString: db.connectionString });
    await c.connect();
    t.teardown(() => c.end());
    t.same((await c.query("SELECT value FROM slipway_kv WHERE keyspace = 'meta' AND key = 'schema'")).rows, [{ value: SCHEMA_VERSION }], 'domain schema current');
    t.same((await c.query('SELECT version FROM slipway_schema')).rows, [{ version: 1 }], 'table schema current, one row');
    const operators = await c.query("SELECT count(*)::int AS n FROM slipway_kv WHERE keyspace = 'accounts'");
    t.equal(operators.rows[0].n, 1, 'one account record');
    for (const n of [a, b]) {
      const ready = await http('GET', `${n.urls.admin}/readyz`);
      t.equal(ready.status, 200, `node ready: ${ready.text}`);
    }
  });

  t.test('a token created on one node authenticates on the other; a revocation is refused at the next request', async (t) => {
    for (let round = 0; round < 10; round++) {
      const [from, to] = round % 2 === 0 ? [a, b] : [b, a];
      const created = await api(from, 'POST', '/oauth/authorizations', operatorKey, { description: `round ${round}` });
      t.equal(created.status, 201, `round ${round}: authorization created`);
      const token = created.json.access_token.token as string;
      const onOther = await api(to, 'GET', '/account', token);
      t.equal(onOther.status, 200, `round ${round}: token from one node accepted by the other`);
      const revoked = await api(from, 'DELETE', `/oauth/authorizations/${created.json.id}`, operatorKey);
      t.equal(revoked.status, 200, `round ${round}: revoked`);
      const after = await api(to, 'GET', '/account', token);
      t.equal(after.status, 401, `round ${round}: revoked on one node, refused by the other at once`);
    }
  });

  t.test('a registry token minted on A for an authorization revoked on B is refused by A at once', async (t) => {
    t.equal((await createApp(a.api, operatorKey, 'jwt-app')).status, 201);
    const created = await api(b, 'POST', '/oauth/authorizations', operatorKey, { description: 'registry' });
    const token = created.json.access_token.token as string;
    const minted = await http('GET', `${a.urls.registry}/token?scope=repository:jwt-app/web:pull`, { headers: basic('_', token) });
    t.equal(minted.status, 200, 'A mints a registry token');
    const url = `${b.urls.registry}/v2/jwt-app/web/tags/list`;
    t.not((await http('GET', url, { headers: bearer(minted.json.token) })).status, 401, 'B accepts the token minted on A');
    t.equal((await api(b, 'DELETE', `/oauth/authorizations/${created.json.id}`, operatorKey)).status, 200);
    for (const n of [a, b]) {
      const after = await http('GET', `${n.urls.registry}/v2/jwt-app/web/tags/list`, { headers: bearer(minted.json.token) });
      t.equal(after.status, 401, 'the registry token of a revoked authorization is refused at the next request');
    }
  });

  t.test('an app created through A is served by B; an image pushed through A pulls from B', async (t) => {
    t.equal((await createApp(a.api, operatorKey, 'shared-app')).status, 201);
    const seen = await api(b, 'GET', '/apps/shared-app', operatorKey);
    t.equal(seen.status, 200);
    t.equal(seen.json.name, 'shared-app');
    const img = await buildImage(join(a.server.config.dataDir, 'img'), sampleSpec());
    await pushBuiltImage({ registry: a.urls.registry, auth: basic('_', operatorKey) }, 'shared-app/web', 'v1', img);
    const token = (await http('GET', `${b.urls.registry}/token?scope=repository:shared-app/web:pull`, { headers: basic('_', operatorKey) })).json?.token as string;
    t.ok(token, 'B issues a registry token');
    const m = await http('GET', `${b.urls.registry}/v2/shared-app/web/manifests/v1`, { headers: { ...bearer(token), accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    t.equal(m.status, 200);
    t.equal(m.headers['docker-content-digest'], img.manifestDigest, 'same manifest digest through B');
    const blob = await http('GET', `${b.urls.registry}/v2/shared-app/web/blobs/${img.layers[0]!.digest}`, { headers: bearer(token) });
    t.equal(blob.status, 200);
    t.ok(blob.bytes.equals(img.layers[0]!.bytes), 'layer bytes identical through B');
  });

  t.test('skopeo pushes through A and pulls byte-identical through B; B releases the image', { skip: skopeoSkip() }, async (t) => {
    t.equal((await createApp(a.api, operatorKey, 'skopeo-app')).status, 201);
    const img = await buildImage(join(a.server.config.dataDir, 'skopeo-img'), sampleSpec());
    const push = await skopeo(['copy', '--dest-creds', `_:${operatorKey}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${new URL(a.urls.registry).host}/skopeo-app/web:latest`]);
    t.equal(push.code, 0, push.stderr);
    const back = join(a.server.config.dataDir, 'skopeo-back');
    const pull = await skopeo(['copy', '--src-creds', `_:${operatorKey}`, '--src-tls-verify=false', `docker://${new URL(b.urls.registry).host}/skopeo-app/web:latest`, `dir:${back}`]);
    t.equal(pull.code, 0, pull.stderr);
    t.ok(readFileSync(join(back, 'manifest.json')).equals(img.manifest), 'manifest byte-identical');
    for (const l of img.layers) t.ok(readFileSync(join(back, l.digest.slice(7))).equals(l.bytes), `layer ${l.digest.slice(7, 19)} byte-identical`);
    const release = await api(b, 'PATCH', '/apps/skopeo-app/formation', operatorKey, { updates: [{ type: 'web', docker_image: img.configDigest }] }, { accept: 'application/vnd.slipway+json; version=3.container-releases' });
    t.equal(release.status, 200, `formation release on B of the image pushed through A: ${release.text.slice(0, 200)}`);
    const onA = await api(a, 'GET', '/apps/skopeo-app/releases', operatorKey);
    t.equal(onA.json?.length, 1, 'A sees the release made on B');
  });
});
