/**
 * The platform's own CLI (`heroku` 11.10.0 from npm, unmodified) against `slipway serve`, with
 * only HEROKU_HOST and HEROKU_API_KEY set — the account and OAuth commands: whoami,
 * authorizations, clients, and `login -i` refused. Each command is asserted on exit code and what
 * it prints, and on the API's state afterwards. (Apps, config, releases, containers and teams:
 * platform-cli-apps.test.ts; the two files run in parallel.)
 */
import t from 'tap';
import { bearer, http } from '../helpers/http.js';
import { heroku, startCliServer } from '../helpers/platform-cli.js';

const { server, target, api, ok } = await startCliServer(t);

t.test('auth:whoami prints the account', async (t) => {
  const r = await ok(t, ['auth:whoami']);
  t.equal(r.stdout.trim(), server.email);
});

t.test('authorizations: create, list, info, update, rotate, revoke', async (t) => {
  const created = await ok(t, ['authorizations:create', '--description', 'cli test', '--expires-in', '3600', '--json']);
  const auth = JSON.parse(created.stdout);
  t.equal(auth.access_token.expires_in, 3600, 'expires_in is what was asked');
  t.match(auth.access_token.token, /^SVC-/);
  t.same(auth.scope, ['global']);
  const list = await ok(t, ['authorizations']);
  t.match(list.stdout, auth.id);
  t.match(list.stdout, 'cli test');
  const info = await ok(t, ['authorizations:info', auth.id]);
  t.match(info.stdout, 'cli test');
  t.match(info.stdout, /Expires at/i);
  const updated = await ok(t, ['authorizations:update', auth.id, '--description', 'cli renamed']);
  t.match(updated.stdout, 'cli renamed');
  const rotated = await ok(t, ['authorizations:rotate', auth.id]);
  const newToken = /SVC-[A-Za-z0-9_-]{61}/.exec(rotated.stdout)?.[0];
  t.ok(newToken && newToken !== auth.access_token.token, 'a new token is shown');
  t.equal((await http('GET', server.urls.api + '/account', { headers: bearer(auth.access_token.token) })).status, 401, 'the old token is dead');
  const whoami = await ok(t, ['auth:whoami'], { token: newToken });
  t.equal(whoami.stdout.trim(), server.email, 'the rotated token works with the CLI');
  const revoked = await ok(t, ['authorizations:revoke', auth.id]);
  t.match(revoked.all, /revoked authorization from cli renamed/);
  t.equal((await api('GET', `/oauth/authorizations/${auth.id}`)).status, 404);
  const dead = await heroku({ ...target, token: newToken! }, ['auth:whoami']);
  t.not(dead.code, 0, 'a revoked token is refused');
  t.match(dead.all, /invalid/i);
});

t.test('clients: create, list, info, update, rotate, destroy', async (t) => {
  const created = await ok(t, ['clients:create', 'cli-client', 'https://example.com/cb', '--json']);
  const client = JSON.parse(created.stdout);
  t.equal(client.name, 'cli-client');
  t.match(client.secret, /\S{20,}/);
  t.match((await ok(t, ['clients'])).stdout, client.id);
  const info = await ok(t, ['clients:info', client.id]);
  t.match(info.stdout, 'cli-client');
  t.match(info.stdout, 'https://example.com/cb');
  await ok(t, ['clients:update', client.id, '--name', 'cli-renamed', '--url', 'https://example.com/cb2']);
  const after = (await api('GET', `/oauth/clients/${client.id}`)).json;
  t.equal(after.name, 'cli-renamed');
  t.equal(after.redirect_uri, 'https://example.com/cb2');
  const rotated = await ok(t, ['clients:rotate', client.id, '--shell']);
  const secret = /HEROKU_OAUTH_SECRET=(\S+)/.exec(rotated.stdout)?.[1];
  t.ok(secret && secret !== client.secret, 'a new secret is shown');
  await ok(t, ['clients:destroy', client.id]);
  t.equal((await api('GET', `/oauth/clients/${client.id}`)).status, 404);
});

t.test('login -i (e-mail and password) is refused with the reason', async (t) => {
  const r = await heroku({ ...target, token: '' }, ['login', '-i'], { prompts: [[/Email/, server.email!], [/Password/, server.password!]] });
  t.not(r.code, 0);
  t.match(r.all, /Basic authentication cannot be used here/);
  t.match(r.all, /Error ID: unauthorized/);
});
