/**
 * The platform's own CLI (`heroku` 11.10.0 from npm, unmodified) against `slipway serve`, with
 * only HEROKU_HOST and HEROKU_API_KEY set — the app commands: create, list, info, config,
 * releases, stack, labs; a release of the images of a real skopeo push of two process
 * types (the stock container:release: test/container/cli-workflow), ps, scale, restart, rollback; teams and members; apps:destroy. Each command is asserted
 * on exit code and what it prints, and on the API's state afterwards. (Account and OAuth
 * commands: platform-cli-auth.test.ts.)
 */
import t from 'tap';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { CLI } from '../helpers/server.js';
import { http, bearer } from '../helpers/http.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { heroku, startCliServer } from '../helpers/platform-cli.js';

const { server, key, target, api, ok, dataDir } = await startCliServer(t);
const APP = `cli-${process.pid % 100000}`;
const TEAM = `cli-team-${process.pid % 100000}`;

t.test('apps: create, list, info; config; releases; stack; labs', async (t) => {
  const created = await ok(t, ['apps:create', APP]);
  t.match(created.all, `http://${APP}.localhost/`, 'web_url is shown');
  t.match((await ok(t, ['apps'])).stdout, APP);
  const info = await ok(t, ['apps:info', '-a', APP]);
  t.match(info.stdout, `=== ${APP}`);
  t.match(info.stdout, server.email!);
  t.match(info.stdout, /Web URL:\s+http:\/\/cli-\d+\.localhost\//);

  const set = await ok(t, ['config:set', 'FOO=bar', 'BAR=baz', '-a', APP]);
  t.match(set.all, /done, v1/);
  t.match(set.stdout, /FOO:\s+bar/);
  const v1 = (await api('GET', `/apps/${APP}/releases/1`)).json;
  t.equal(v1.description, 'Set FOO, BAR config vars');
  t.match((await ok(t, ['config', '-a', APP])).stdout, /FOO:\s+bar\s+BAR:\s+baz/);
  const unset = await ok(t, ['config:unset', 'BAR', '-a', APP]);
  t.match(unset.all, /done, v2/);
  t.same((await api('GET', `/apps/${APP}/config-vars`)).json, { FOO: 'bar' });
  const releases = await ok(t, ['releases', '-a', APP]);
  t.match(releases.stdout, /v2\s+Remove BAR config vars[\s\S]*v1\s+Set FOO, BAR config vars/, 'newest first');
  const rinfo = await ok(t, ['releases:info', 'v1', '-a', APP]);
  t.match(rinfo.stdout, /Release v1/);
  t.match(rinfo.stdout, /BAR:\s+baz/, 'the config vars of that release');

  const labs = await ok(t, ['labs', '-a', APP]);
  t.match(labs.stdout, 'runtime-new-layer-extract');
  await ok(t, ['labs:enable', 'runtime-new-layer-extract', '-a', APP]);
  t.equal((await api('GET', `/apps/${APP}/features/runtime-new-layer-extract`)).json.enabled, true);
  const noSuch = await heroku(target, ['labs:enable', 'no-such-feature']);
  t.not(noSuch.code, 0, 'an unknown account feature is refused');
  t.match(noSuch.all, /Couldn't find that feature/);

  const stack = await ok(t, ['stack:set', 'container', '-a', APP]);
  t.match(stack.all, /Setting stack to container/);
  t.equal((await api('GET', `/apps/${APP}`)).json.build_stack.name, 'container');
});

t.test('a release of web and worker after a skopeo push; ps, scale, restart, rollback', { skip: skopeoSkip() }, async (t) => {
  const updates: Array<{ type: string; docker_image: string }> = [];
  for (const type of ['web', 'worker']) {
    const img = await buildImage(join(dataDir, `img-${type}`), sampleSpec({ config: { Cmd: ['/bin/app', type] } }));
    const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${new URL(server.urls.registry).host}/${APP}/${type}:latest`]);
    t.equal(push.code, 0, push.stderr);
    updates.push({ type, docker_image: img.configDigest });
  }
  // The release the CLI's container:release makes, through the API: the stock CLI's own
  // container:release runs with the real Docker daemon in test/container/cli-workflow.test.ts,
  // under the documented host-name set-up (its registry.<HEROKU_HOST> cannot be a loopback URL).
  const released = await http('PATCH', `${server.urls.api}/apps/${APP}/formation`, {
    headers: { ...bearer(key), 'content-type': 'application/json', accept: 'application/vnd.heroku+json; version=3.docker-releases' },
    body: JSON.stringify({ updates }),
  });
  t.equal(released.status, 200, released.text);
  const newest = (await http('GET', `${server.urls.api}/apps/${APP}/releases`, { headers: { ...bearer(key), range: 'version ..; max=1, order=desc' } })).json[0];
  t.equal(newest.version, 3);
  t.equal(newest.description, 'Deployed web, worker');
  const formation = (await api('GET', `/apps/${APP}/formation`)).json;
  t.same(formation.map((f: { type: string; quantity: number; command: string }) => [f.type, f.quantity, f.command]), [['web', 1, "/bin/sh -c '/bin/app web'"], ['worker', 0, "/bin/sh -c '/bin/app worker'"]]);

  const ps = await ok(t, ['ps', '-a', APP]);
  t.match(ps.stdout, /web\.1: not running/, 'no dyno runs here, and ps says so');
  t.match(ps.all, /runs no dynos/);
  const scaled = await ok(t, ['ps:scale', 'worker=2', '-a', APP]);
  t.match(scaled.all, /worker at 2:standard-1X/i);
  t.match((await ok(t, ['ps', '-a', APP])).stdout, /worker\.2: not running/);
  const before = (await api('GET', `/apps/${APP}/dynos/worker.1`)).json.updated_at;
  await ok(t, ['ps:restart', '-a', APP]);
  t.ok((await api('GET', `/apps/${APP}/dynos/worker.1`)).json.updated_at >= before, 'restart touches the formation');
  await ok(t, ['ps:restart', '--process-type', 'web', '-a', APP]);
  await ok(t, ['ps:stop', '--dyno-name', 'worker.2', '-a', APP]);
  t.equal((await api('GET', `/apps/${APP}/formation/worker`)).json.quantity, 2, 'a stopped dyno stays in the formation');
  const none = await heroku(target, ['ps:restart', '--dyno-name', 'worker.9', '-a', APP]);
  t.not(none.code, 0);
  t.match(none.all, /Couldn't find that dyno/);

  const rollback = await ok(t, ['rollback', 'v1', '-a', APP]);
  t.match(rollback.all, /done, v4/);
  t.equal((await api('GET', `/apps/${APP}/releases/4`)).json.description, 'Rollback to v1');
  t.same((await api('GET', `/apps/${APP}/config-vars`)).json, { FOO: 'bar', BAR: 'baz' }, 'the config vars of v1 are back');
});

t.test('teams and members', async (t) => {
  t.equal((await api('POST', '/teams', { name: TEAM })).status, 201);
  const email = `cli-member-${process.pid}@example.com`;
  await promisify(execFile)(process.execPath, [CLI, 'account', 'create', '--email', email, '--data', dataDir]);
  t.match((await ok(t, ['teams'])).stdout, new RegExp(`${TEAM}\\s+admin`));
  t.match((await ok(t, ['members', '-t', TEAM])).stdout, new RegExp(`${server.email!.replace('.', '\\.')}\\s+admin`));
  const added = await ok(t, ['members:add', email, '--role', 'member', '-t', TEAM]);
  t.match(added.all, `Adding ${email} to ${TEAM} as member`);
  t.match((await ok(t, ['members', '-t', TEAM])).stdout, new RegExp(`${email.replace(/\./g, '\\.')}\\s+member`));
});

t.test('apps:destroy', async (t) => {
  await ok(t, ['apps:destroy', APP, '--confirm', APP]);
  t.equal((await api('GET', `/apps/${APP}`)).status, 404);
  t.notMatch((await ok(t, ['apps'])).stdout, APP);
});
