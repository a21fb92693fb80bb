/**
 * The container workflow of docs/container-workflow.md, as a user runs it: the real Docker daemon
 * (test/helpers/docker-daemon.ts) and the stock `heroku` CLI against a spawned Slipway under the
 * documented loopback set-up (test/helpers/loopback-platform.ts: host names in a hosts file, no
 * code preload). Login, a recursive build and push of web, worker and the release phase from
 * Dockerfile.<type> files (test/fixtures/container-app, FROM scratch plus a static busybox),
 * release, releases, ps, pull, rm; then docker push and pull directly, and releases through the
 * API by image id and by manifest digest. Each step checks what the user sees.
 */
import t from 'tap';
import { cpSync, copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dockerSkip } from '../helpers/docker-daemon.js';
import { startLoopbackPlatform } from '../helpers/loopback-platform.js';

const skip = dockerSkip();
const FIXTURE = fileURLToPath(new URL('../../../test/fixtures/container-app', import.meta.url));
const CONTAINER_RELEASES = 'application/vnd.heroku+json; version=3.docker-releases';

t.test('the container workflow with docker and the stock CLI', { skip }, async (t) => {
  const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Date.now() % 2 ** 31);
  const p = await startLoopbackPlatform(t, seed);
  const { registry, docker } = p;
  // The app tree: Dockerfile.web at the top, Dockerfile.worker and Dockerfile.release in
  // sub-directories, each build context holding a static busybox.
  const tree = mkdtempSync(join(tmpdir(), 'slipway-app-'));
  t.teardown(() => rmSync(tree, { recursive: true, force: true }));
  cpSync(FIXTURE, tree, { recursive: true });
  for (const d of ['.', 'worker', 'release']) copyFileSync('/bin/busybox', join(tree, d, 'busybox'));
  const ok = async (t: Test, args: string[], cwd?: string) => {
    const r = await p.heroku(args, { cwd });
    t.equal(r.code, 0, `heroku ${args.join(' ')} exits 0 (${r.ms} ms)${r.code === 0 ? '' : ':\n' + r.all}`);
    t.notMatch(r.stderr, /spawn heroku|autoupdate/, 'no autoupdate is started');
    return r;
  };
  type Test = typeof t;
  const imageId = async (ref: string) => {
    const r = await docker.docker(['image', 'inspect', '--format', '{{.Id}}', ref]);
    return r.stdout.trim();
  };

  const created = await ok(t, ['apps:create', 'myapp', '--stack', 'container']);
  t.match(created.all, /Creating .*myapp.*done/);

  await t.test('container:login logs docker in to registry.<domain>', async (t) => {
    const r = await ok(t, ['container:login']);
    t.match(r.stdout, /Login Succeeded/);
  });

  await t.test('container:push web worker release --recursive builds and pushes the three images', async (t) => {
    const r = await ok(t, ['container:push', 'web', 'worker', 'release', '--recursive', '-a', 'myapp'], tree);
    for (const type of ['web', 'worker', 'release']) {
      t.match(r.stdout, new RegExp(`=== Building ${type} \\(.*Dockerfile\\.${type}\\)`), `builds ${type}`);
      t.match(r.stdout, new RegExp(`=== Pushing ${type} \\(.*Dockerfile\\.${type}\\)`), `pushes ${type}`);
      t.match(r.stdout, new RegExp(`Successfully tagged ${registry}/myapp/${type}:latest`));
    }
    t.match(r.stdout, /latest: digest: sha256:[0-9a-f]{64} size: \d+/);
    t.match(r.stdout, /Mounted from myapp\//, 'the shared busybox layer is mounted, not uploaded again');
    t.match(r.stdout, /Your images have been successfully pushed/);
  });

  const ids: Record<string, string> = {};
  for (const type of ['web', 'worker', 'release']) ids[type] = await imageId(`${registry}/myapp/${type}`);

  await t.test('container:release web worker release makes one release with the three images', async (t) => {
    const r = await ok(t, ['container:release', 'web', 'worker', 'release', '-a', 'myapp']);
    t.match(r.stderr, /Releasing images web,worker,release to myapp\.\.\. done/);
    const releases = await p.api('GET', '/apps/myapp/releases');
    const latest = releases.json.at(-1);
    t.equal(latest.version, 1);
    t.equal(latest.release_phase, true, 'the release phase is listed with the others');
    for (const type of ['web', 'worker', 'release']) t.equal(latest.processes[type].docker_image, ids[type], `${type}: the image docker built`);
    const formation = (await p.api('GET', '/apps/myapp/formation')).json;
    t.same(formation.map((f: { type: string }) => f.type).sort(), ['release', 'web', 'worker']);
  });

  await t.test('releases and ps show it', async (t) => {
    const releases = await ok(t, ['releases', '-a', 'myapp']);
    t.match(releases.stdout, /v1\s+Deployed web, worker, release/);
    const ps = await ok(t, ['ps', '-a', 'myapp']);
    // CMD runs through /bin/sh -c (the platform's rule; docs/rules.md).
    t.match(ps.stdout, /=== web \(standard-1X\): \/bin\/sh -c '\/bin\/busybox httpd -f -h \/srv' \(1\)/);
    t.match(ps.stdout, /web\.1: not running/);
    t.match(ps.all, /runs no dynos/, 'the server says no process runs');
  });

  await t.test('container:pull web brings back the pushed image', async (t) => {
    t.equal((await docker.docker(['image', 'rm', `${registry}/myapp/web:latest`])).code, 0);
    const r = await ok(t, ['container:pull', 'web', '-a', 'myapp']);
    t.match(r.stdout, new RegExp(`=== Pulling web as ${registry}/myapp/web`));
    t.equal(await imageId(`${registry}/myapp/web`), ids.web, 'the same image id: the same config and layer bytes');
  });

  await t.test('container:rm worker removes the process type', async (t) => {
    const r = await ok(t, ['container:rm', 'worker', '-a', 'myapp']);
    t.match(r.stderr, /Removing container worker for myapp\.\.\. done/);
    const formation = (await p.api('GET', '/apps/myapp/formation')).json;
    t.same(formation.map((f: { type: string }) => f.type).sort(), ['release', 'web'], 'worker is gone from the formation');
    const latest = (await p.api('GET', '/apps/myapp/releases')).json.at(-1);
    t.equal(latest.description, 'Removed worker');
    t.same(Object.keys(latest.processes).sort(), ['release', 'web'], 'the new release has no worker image');
    const ps = await ok(t, ['ps', '-a', 'myapp']);
    t.notMatch(ps.stdout, /worker/);
  });

  await t.test('docker push and pull directly; the API releases by image id or manifest digest', async (t) => {
    const tag = `${registry}/myapp/web:v2`;
    t.equal((await docker.docker(['tag', `${registry}/myapp/web:latest`, tag])).code, 0);
    const push = await docker.docker(['push', tag]);
    t.equal(push.code, 0, push.stderr);
    const digest = /v2: digest: (sha256:[0-9a-f]{64})/.exec(push.stdout)?.[1];
    t.ok(digest, `docker push prints the manifest digest: ${push.stdout}`);
    t.match(push.stdout, /Layer already exists/);
    t.equal((await docker.docker(['image', 'rm', tag, `${registry}/myapp/web:latest`])).code, 0);
    const pull = await docker.docker(['pull', `${registry}/myapp/web@${digest}`]);
    t.equal(pull.code, 0, pull.stderr);
    t.match(pull.stdout, new RegExp(`Digest: ${digest}`));
    t.equal(await imageId(`${registry}/myapp/web@${digest}`), ids.web, 'pulled by digest: the image pushed');

    const byDigest = await p.api('PATCH', '/apps/myapp/formation', { updates: [{ type: 'web', docker_image: digest }] }, CONTAINER_RELEASES);
    t.equal(byDigest.status, 200, byDigest.text);
    t.equal(byDigest.headers['warning-message'], `docker_image ${digest} (web) is a manifest digest; released its image id ${ids.web}`);
    const wrong = await p.api('PATCH', '/apps/myapp/formation', { updates: [{ type: 'web', docker_image: `sha256:${'0'.repeat(64)}` }] }, CONTAINER_RELEASES);
    t.equal(wrong.status, 422);
    t.match(wrong.json.message, `push it to ${registry}/myapp/web first, then send its image id`);
    const releases = await ok(t, ['releases', '-a', 'myapp']);
    t.match(releases.stdout, /v\d+\s+Deployed web/);
  });

  t.notOk(existsSync(join(p.home, '.cache', 'heroku', 'autoupdate')), 'the CLI never claimed an autoupdate');
});
