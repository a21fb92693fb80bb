/**
 * The refusals a user meets with each client, read where the user reads them (the client's own
 * output, on the first attempt): a push to a single-segment repository name (`myapp:latest`)
 * with skopeo, podman and docker, and an OCI manifest from skopeo and podman, whose refusal names
 * the flag that fixes it (docs/container-workflow.md "Errors a user may meet").
 */
import t from 'tap';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { execFile, execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startInProcess } from '../helpers/harness.js';
import { createApp } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { dockerSkip, startDocker } from '../helpers/docker-daemon.js';

const NAME_RULE = /invalid repository name \\?"myapp\\?": repositories are named <app>\/<process-type>, for example myapp\/web/;
const OCI_FIX = /OCI image manifests .* are not supported; .*`podman push --format docker`, `buildah push --format docker`, `skopeo copy --format v2s2`/;

function podmanSkip(): string | false {
  try {
    execFileSync('podman', ['--version'], { stdio: 'ignore' });
    return false;
  } catch {
    if (process.env.CI) throw new Error('podman is required in CI but not installed');
    return 'skipped: podman not installed (apt-get install podman)';
  }
}

const ts = await startInProcess();
t.teardown(() => ts.stop());
const key = ts.operator.apiKey;
const host = new URL(ts.urls.registry).host;
if ((await createApp(ts.api, key, 'myapp')).status !== 201) throw new Error('app not created');
const dir = mkdtempSync(join(tmpdir(), 'slipway-client-errors-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const img = await buildImage(join(dir, 'image'), sampleSpec({ config: { Cmd: ['/bin/app'] } }));

t.test('skopeo', { skip: skopeoSkip() }, async (t) => {
  const bad = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp:latest`]);
  t.not(bad.code, 0);
  t.match(bad.stderr, NAME_RULE, 'a single-segment name: the rule, not a bare 400');
  const oci = await skopeo(['copy', '--format', 'oci', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/myapp/web:oci`]);
  t.not(oci.code, 0);
  t.match(oci.stderr, OCI_FIX, '--format oci: the refusal names the flags');
});

t.test('podman (vfs, own root)', { skip: skopeoSkip() || podmanSkip() }, async (t) => {
  const storage = ['--root', join(dir, 'podman-root'), '--runroot', join(dir, 'podman-run'), '--storage-driver', 'vfs'];
  t.teardown(() => { execFile('podman', [...storage, 'system', 'reset', '--force'], () => {}); });
  const podman = (args: string[]) => new Promise<{ code: number; out: string }>((resolve) => {
    execFile('podman', [...storage, ...args], { timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }));
  });
  const pulled = await podman(['pull', '-q', `dir:${img.dir}`]);
  t.equal(pulled.code, 0, pulled.out);
  const id = pulled.out.trim().split('\n')[0]!;
  const creds = ['--tls-verify=false', '--creds', `_:${key}`];
  const bad = await podman(['push', ...creds, id, `docker://${host}/myapp:latest`]);
  t.not(bad.code, 0);
  t.match(bad.out, NAME_RULE);
  const oci = await podman(['push', ...creds, '--format', 'oci', id, `docker://${host}/myapp/web:oci`]);
  t.not(oci.code, 0);
  t.match(oci.out, OCI_FIX);
  const fixed = await podman(['push', ...creds, '--format', 'docker', id, `docker://${host}/myapp/web:fixed`]);
  t.equal(fixed.code, 0, `the flag the message names works:\n${fixed.out}`);
});

t.test('docker', { skip: dockerSkip() }, async (t) => {
  const d = await startDocker();
  t.teardown(() => d.stop());
  const ctx = join(dir, 'docker-context');
  execFileSync('mkdir', ['-p', ctx]);
  copyFileSync('/bin/busybox', join(ctx, 'busybox'));
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\nCOPY busybox /bin/busybox\nCMD ["/bin/busybox", "true"]\n');
  t.equal((await d.docker(['build', '-q', '-t', `${host}/myapp:latest`, ctx])).code, 0);
  const login = await d.docker(['login', '-u', '_', '--password-stdin', host], { input: key });
  t.equal(login.code, 0, login.stderr);
  const started = Date.now();
  const push = await d.docker(['push', `${host}/myapp:latest`]);
  const seconds = (Date.now() - started) / 1000;
  t.not(push.code, 0);
  t.match(push.stderr, NAME_RULE);
  // Before: NAME_INVALID was retried five times, about 50 s. A bound well under that, with room for a loaded machine.
  t.ok(seconds < 20, `docker gives up at once (${seconds.toFixed(1)} s), not after ~50 s of retries`);
  t.notMatch(push.stdout, /Retrying in/);
});
