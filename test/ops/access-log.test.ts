/**
 * The access log: one JSON line per request on every host, written to the configured file, with
 * the request id that the response carried as `Request-Id`, the route template, status, bytes,
 * caller ids and client address, and never a credential: an API bearer token, a registry bearer
 * token, Basic `_:<key>`, an upload `_state` and an OAuth `code` are sent and then searched for.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, createApp, http } from '../helpers/http.js';
import { startUpload } from '../helpers/registry.js';

t.test('access log lines carry ids, never secrets', async (t) => {
  const tmp = tempDir();
  const logFile = join(tmp.dir, 'logs', 'slipway.log');
  const server = await startInProcess({ dataDir: join(tmp.dir, 'data'), env: { SLIPWAY_LOG_LEVEL: 'info', SLIPWAY_LOG_FILE: logFile } });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  const secrets: string[] = [key, Buffer.from(`_:${key}`).toString('base64')];

  await createApp(server.urls.api, key, 'logged');
  const account = await http('GET', `${server.urls.api}/account`, { headers: { ...bearer(key), accept: 'application/vnd.slipway+json; version=3' } });
  t.equal(account.status, 200, account.text);
  const accountId: string = account.json.id;

  const v2 = await http('GET', `${server.urls.registry}/v2/`, { headers: basic('_', key) });
  t.equal(v2.status, 200);
  const token = await http('GET', `${server.urls.registry}/token?service=slipway&scope=repository:logged/web:pull,push`, { headers: basic('_', key) });
  t.equal(token.status, 200, token.text);
  const registryToken: string = token.json.token;
  secrets.push(registryToken);
  const withToken = await http('GET', `${server.urls.registry}/v2/logged/web/tags/list`, { headers: bearer(registryToken) });

  const location = await startUpload({ registry: server.urls.registry, auth: basic('_', key) }, 'logged/web');
  const state = new URL(location).searchParams.get('_state')!;
  t.ok(state.length > 10, 'the session Location carries _state');
  secrets.push(state);
  const chunk = randomBytes(4096);
  const patch = await http('PATCH', location, { body: chunk, headers: { 'content-type': 'application/octet-stream' } });
  t.equal(patch.status, 202);

  const code = 'code' + randomBytes(12).toString('hex');
  secrets.push(code);
  const authorize = await http('GET', `${server.urls.auth}/oauth/authorize?response_type=code&client_id=none&code=${code}`);
  const tokenExchange = await http('POST', `${server.urls.auth}/oauth/token`, {
    body: `grant_type=authorization_code&code=${code}&client_id=none&client_secret=${code}`, headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

  await server.stop();
  const text = readFileSync(logFile, 'utf8');
  const lines = text.trim().split('\n').map((l) => JSON.parse(l));
  const requests = lines.filter((l) => l.msg === 'request');
  const byId = (r: { headers: Record<string, string> }) => {
    const id = r.headers['request-id'];
    t.ok(id, 'response carries Request-Id');
    return requests.filter((l) => l.reqId === id);
  };
  for (const [name, reply] of Object.entries({ account, v2, token, withToken, patch, authorize, tokenExchange })) {
    t.equal(byId(reply).length, 1, `exactly one access-log line for ${name}`);
  }
  const [acc] = byId(account);
  t.match(acc, { host: 'api', method: 'GET', route: '/account', status: 200, bytesIn: 0, accountId, client: '127.0.0.1' });
  t.ok(acc.authorizationId, 'authorization id logged');
  t.ok(acc.bytesOut > 0 && typeof acc.ms === 'number');
  t.match(byId(withToken)[0], { host: 'registry', route: '/v2/<name>/tags/list', accountId });
  t.match(byId(patch)[0], { host: 'upload', method: 'PATCH', route: '/v2/<name>/blobs/uploads/<session>', status: 202, bytesIn: chunk.length });
  t.match(byId(authorize)[0], { host: 'auth', route: '/oauth/authorize' });
  for (const s of secrets) t.notOk(text.includes(s), `secret of ${s.length} characters is not in the log`);
  t.notMatch(text, /_state|logged\/web|Basic |Bearer /, 'no query string, repository name or authorization header in the log');
});
