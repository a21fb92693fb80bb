import { startPostgres } from '/work/wt-pgcache/dist/test/helpers/postgres.js';
import { startNode } from '/work/wt-pgcache/dist/bench/cluster-nodes.js';
import { buildSmallImage, MANIFEST_V2 } from '/work/wt-pgcache/dist/bench/image.js';
import { request } from 'undici';
import pg from 'pg';
import { mkdtempSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
const db = await startPostgres();
const node = await startNode(mkdtempSync('/tmp/pgc/n-'), { SLIPWAY_DATABASE_URL: db.connectionString, SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64') });
const img = await buildSmallImage();
const auth = 'Basic ' + Buffer.from(`_:${node.apiKey}`).toString('base64');
const API = 'application/vnd.slipway+json; version=3';
const call = async (m, u, h, b) => { const r = await request(u, { method: m, headers: h, body: b }); const t = await r.body.text(); return [r.statusCode, t]; };
console.log(await call('POST', `${node.urls.api}/apps`, { authorization: `Bearer ${node.apiKey}`, 'content-type': 'application/json', accept: API }, JSON.stringify({ name: 'bench' })));
for (const b of [img.config, img.layer]) console.log((await call('POST', `${node.urls.registry}/v2/bench/web/blobs/uploads/?digest=${b.digest}`, { authorization: auth, 'content-type': 'application/octet-stream' }, b.bytes))[0]);
console.log((await call('PUT', `${node.urls.registry}/v2/bench/web/manifests/latest`, { authorization: auth, 'content-type': MANIFEST_V2 }, img.manifest))[0]);
const [st, body] = await call('POST', `${node.urls.api}/oauth/authorizations`, { authorization: `Bearer ${node.apiKey}`, 'content-type': 'application/json', accept: API }, JSON.stringify({ description: 'b' }));
const token = JSON.parse(body).access_token.token;
const c = new pg.Client({ connectionString: db.connectionString }); await c.connect();
await c.query("ALTER SYSTEM SET log_statement='all'"); await c.query("ALTER SYSTEM SET log_min_duration_statement=-1"); await c.query('SELECT pg_reload_conf()');
await new Promise(r => setTimeout(r, 500));
const log = () => readFileSync(`${db.dir}/server.log`, 'utf8');
const steps = [
  ['manifest GET', () => call('GET', `${node.urls.registry}/v2/bench/web/manifests/latest`, { authorization: auth, accept: MANIFEST_V2 })],
  ['blob HEAD', () => call('HEAD', `${node.urls.registry}/v2/bench/web/blobs/${img.layer.digest}`, { authorization: auth })],
  ['account', () => call('GET', `${node.urls.api}/account`, { authorization: `Bearer ${token}`, accept: API })],
  ['warm push', async () => { for (const d of [img.config.digest, img.layer.digest]) await call('HEAD', `${node.urls.registry}/v2/bench/web/blobs/${d}`, { authorization: auth }); return call('PUT', `${node.urls.registry}/v2/bench/web/manifests/w1`, { authorization: auth, 'content-type': MANIFEST_V2 }, img.manifest); }],
];
for (const [name, fn] of steps) {
  for (let i = 0; i < 2; i++) {
    const before = log().length;
    const r = await fn();
    await new Promise(r => setTimeout(r, 1500));
    console.log(`==== ${name} #${i} ${r[0]}`);
    console.log(log().slice(before).split('\n').filter(l => /LOG:|DETAIL/.test(l)).map(l => l.replace(/^.*?(LOG|DETAIL):\s*/, '$1 ').slice(0, 220)).join('\n'));
  }
}
await c.end(); await node.stop(); await db.stop();
process.exit(0);
