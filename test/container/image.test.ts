/**
 * Slipway's container image, built from the repository's Dockerfile by the real Docker daemon
 * (Debian's docker.io, vfs, no bridge: test/helpers/docker-daemon.ts) and run: it runs as a
 * non-root user, keeps its data in the volume, turns healthy through its HEALTHCHECK (/readyz on
 * the admin listener), takes a skopeo push and serves it back byte-identical (`--network host`,
 * the daemon has no bridge), and `docker stop` drains it to exit status 0.
 * Docker Hub is out of reach here, so BASE_IMAGE is a Node.js 24 base imported from this
 * machine's files and `npm ci` reads a local mirror of the npm registry (NPM_CONFIG_REGISTRY),
 * test/helpers/node-base-image.ts. The build context is the checkout (its .dockerignore), with
 * dist/ compiled by `npm test`'s tsc.
 */
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { dockerSkip, startDocker } from '../helpers/docker-daemon.js';
import { importNodeBase, nodeBaseSkip, startNpmMirror } from '../helpers/node-base-image.js';
import { freePort, waitFor } from '../helpers/daemons.js';
import { createApp } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { tempDir } from '../helpers/server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const skip = dockerSkip() || skopeoSkip() || nodeBaseSkip();
// Importing the base and building on vfs take minutes on a loaded machine.
t.setTimeout(1_200_000);

t.test('the Dockerfile builds an image that runs Slipway', { skip }, async (t) => {
  const d = await startDocker();
  t.teardown(() => d.stop());
  const secs = (t0: number) => ((performance.now() - t0) / 1000).toFixed(1);
  let t0 = performance.now();
  await importNodeBase(d, 'slipway-test/node24-base:1');
  t.comment(`base image imported in ${secs(t0)} s`);
  const mirror = await startNpmMirror();
  t.teardown(() => mirror.stop());

  t0 = performance.now();
  // BuildKit: metadata instructions make no layer (on vfs each layer is a full copy).
  process.env.DOCKER_BUILDKIT = '1';
  const build = await d.docker(['build', '--network', 'host', '-q', '-t', 'slipway:test',
    '--build-arg', 'BASE_IMAGE=slipway-test/node24-base:1', '--build-arg', `NPM_CONFIG_REGISTRY=${mirror.url}`, root], { timeoutMs: 900_000 });
  t.equal(build.code, 0, `docker build: ${build.stderr}`);
  t.comment(`image built in ${secs(t0)} s; npm tarballs: ${JSON.stringify(mirror.served)}`);
  const config = JSON.parse((await d.docker(['image', 'inspect', '--format', '{{json .Config}}', 'slipway:test'])).stdout);
  t.equal(config.User, '10001:10001', 'a non-root user');
  t.same(Object.keys(config.Volumes ?? {}), ['/var/lib/slipway'], 'the data directory is a volume');
  t.match(config.Healthcheck.Test.join(' '), /healthcheck\.mjs/, 'HEALTHCHECK on /readyz');

  const ports = { registry: await freePort(), api: await freePort(), auth: await freePort(), upload: await freePort(), admin: await freePort() };
  const env = Object.entries({
    SLIPWAY_HOST: '127.0.0.1', SLIPWAY_REGISTRY_PORT: ports.registry, SLIPWAY_API_PORT: ports.api, SLIPWAY_AUTH_PORT: ports.auth,
    SLIPWAY_UPLOAD_PORT: ports.upload, SLIPWAY_ADMIN_PORT: ports.admin, SLIPWAY_DRAIN_SECONDS: 5,
  }).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
  const run = await d.docker(['run', '-d', '--name', 'slipway', '--network', 'host', '--health-interval', '1s', '-v', 'slipway-data:/var/lib/slipway', ...env, 'slipway:test']);
  t.equal(run.code, 0, run.stderr);
  const logs = async () => { const l = await d.docker(['logs', 'slipway']); return l.stdout + l.stderr; };
  const state = async () => JSON.parse((await d.docker(['inspect', '--format', '{{json .State}}', 'slipway'])).stdout);
  await waitFor('the container to be healthy', async () => (await state()).Health?.Status === 'healthy', {
    timeoutMs: 180_000, intervalMs: 500, abort: () => undefined,
  }).catch(async (e) => { throw new Error(`${(e as Error).message}\n${await logs()}\n${JSON.stringify((await state()).Health)}`); });
  // The container's main process, as the host sees it.
  const pid = (await state()).Pid as number;
  t.match(readFileSync(`/proc/${pid}/status`, 'utf8'), /^Uid:\s+10001\s/m, 'the server runs as uid 10001');
  t.match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '), /cli\.js serve/);

  // The operator's credentials: the file in the data volume the first start names.
  const out = await logs();
  const file = out.split('\n').map((l) => { try { return JSON.parse(l) as { credentialsFile?: string }; } catch { return {}; } })
    .find((e) => typeof e.credentialsFile === 'string')?.credentialsFile;
  const read = file ? await d.docker(['exec', 'slipway', 'node', '-e', 'process.stdout.write(require("fs").readFileSync(process.argv[1]))', file]) : undefined;
  const key = read ? (JSON.parse(read.stdout) as { api_key: string }).api_key : /api_key\s+(\S+)/.exec(out)?.[1];
  if (!key) throw new Error(`no operator credentials named in the container's output:\n${out}`);
  t.equal((await createApp(`http://127.0.0.1:${ports.api}`, key, 'boxed')).status, 201);
  const work = tempDir();
  t.teardown(() => work.cleanup());
  const img = await buildImage(join(work.dir, 'img'), sampleSpec());
  const host = `127.0.0.1:${ports.registry}`;
  const push = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/boxed/web:v1`]);
  t.equal(push.code, 0, `skopeo push: ${push.stderr}`);
  const back = join(work.dir, 'back');
  const pull = await skopeo(['copy', '--src-creds', `_:${key}`, '--src-tls-verify=false', `docker://${host}/boxed/web:v1`, `dir:${back}`]);
  t.equal(pull.code, 0, `skopeo pull: ${pull.stderr}`);
  for (const f of readdirSync(img.dir).filter((f) => f !== 'version')) {
    t.ok(readFileSync(join(back, f)).equals(readFileSync(join(img.dir, f))), `${f.slice(0, 16)} byte-identical`);
  }
  const files = await d.docker(['run', '--rm', '--entrypoint', '/bin/ls', '-v', 'slipway-data:/data', 'slipway:test', '-ln', '/data']);
  t.match(files.stdout, /10001\s+10001\s+\d+\s.*lmdb/, 'the store lives in the volume, owned by the service user');

  const stop = await d.docker(['stop', '-t', '30', 'slipway']);
  t.equal(stop.code, 0, stop.stderr);
  t.equal((await state()).ExitCode, 0, 'SIGTERM drains and exits 0');
  t.match(await logs(), /drained, stopped/);
});
