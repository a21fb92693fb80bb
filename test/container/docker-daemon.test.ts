// The Docker daemon harness itself: a private daemon builds and runs a FROM-scratch image, stop()
// leaves no process and no directory behind, and a test process killed before stop() leaves
// daemons that the next start sweeps.
import t from 'tap';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dockerSkip, startDocker } from '../helpers/docker-daemon.js';
import { waitFor } from '../helpers/daemons.js';

const skip = dockerSkip();

function alive(pid: number): boolean {
  try { process.kill(pid, 0); return true; } catch { return false; }
}

t.test('a private daemon builds and runs a FROM-scratch image and stop() removes everything', { skip }, async (t) => {
  const d = await startDocker();
  t.teardown(() => d.stop());
  t.comment(`daemon ready in ${d.timings.total} ms`);
  const ctx = mkdtempSync(join(tmpdir(), 'slipway-ctx-'));
  t.teardown(() => rmSync(ctx, { recursive: true, force: true }));
  copyFileSync('/bin/busybox', join(ctx, 'busybox'));
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\nCOPY busybox /bin/busybox\nCMD ["/bin/busybox", "echo", "hello from scratch"]\n');
  const build = await d.docker(['build', '-q', '-t', 'harness/check:1', ctx]);
  t.equal(build.code, 0, build.stderr);
  t.match(build.stdout, /^sha256:[0-9a-f]{64}\n$/);
  const run = await d.docker(['run', '--rm', 'harness/check:1']);
  t.equal(run.code, 0, run.stderr);
  t.equal(run.stdout, 'hello from scratch\n');
  const pid = Number(readFileSync(join(d.dir, 'dockerd.pid'), 'utf8'));
  await d.stop();
  t.notOk(alive(pid), 'dockerd is gone');
  t.notOk(existsSync(d.dir), 'the directory is removed');
});

t.test('daemons of a killed test process are swept by the next start', { skip }, async (t) => {
  const helper = fileURLToPath(new URL('../helpers/docker-daemon.js', import.meta.url));
  const script = `import { startDocker } from ${JSON.stringify(helper)};
const d = await startDocker(); console.log(d.dir); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (b) => { out += b; });
  const dir = await waitFor('the child daemon', () => out.includes('\n') && out.trim(), { timeoutMs: 60_000 });
  const pid = Number(readFileSync(join(dir, 'dockerd.pid'), 'utf8'));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
  t.ok(alive(pid), 'the orphaned dockerd still runs');
  const d = await startDocker();
  t.teardown(() => d.stop());
  await waitFor('the orphan to exit', () => !alive(pid), { timeoutMs: 10_000 });
  t.notOk(existsSync(dir), 'the dead owner\'s directory is removed');
});
