/**
 * Every launcher of the server sizes its runtime the same way (server/runtime-flags.ts): the
 * `node` flags SERVER_NODE_FLAGS are in the `slipway` command's shebang (what `npm install -g`
 * and the systemd unit run), the container's entry point and `npm start`; a script started
 * through the shebang runs with them; and so do the servers the test harness and the benchmarks
 * start (their /proc/<pid>/cmdline).
 */
import t from 'tap';
import { chmodSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { SERVER_NODE_FLAGS, SERVER_SHEBANG } from '../../server/runtime-flags.js';
import { startSpawned } from '../helpers/harness.js';
import { startSlipway } from '../../bench/servers/slipway.js';
import { startNode } from '../../bench/cluster-nodes.js';
import { tempDir } from '../helpers/server.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const read = (p: string) => readFileSync(join(root, p), 'utf8');

t.ok(SERVER_NODE_FLAGS.length > 0, `flags: ${SERVER_NODE_FLAGS.join(' ')}`);
t.ok(SERVER_NODE_FLAGS.includes('--heap-growing-percent=30'), 'old generations grow by at most 1.3 × their live size');

t.test('the shebang of the slipway command (source and build) carries the flags', async (t) => {
  for (const file of ['server/cli.ts', 'dist/server/cli.js']) {
    const first = read(file).split('\n')[0]!;
    t.equal(first, SERVER_SHEBANG, `${file}: ${first}`);
  }
  t.match(read('deploy/systemd/slipway.service'), /^ExecStart=\/usr\/local\/bin\/slipway serve/m, 'the systemd unit runs the command (its shebang)');
});

t.test('the container entry point and npm start pass the flags to node', async (t) => {
  const entry = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'));
  t.ok(entry, 'Dockerfile has an exec-form ENTRYPOINT');
  const argv = JSON.parse(entry![1]!) as string[];
  const script = argv.findIndex((a) => a.endsWith('dist/server/cli.js'));
  t.equal(argv[0], 'node');
  for (const f of SERVER_NODE_FLAGS) t.ok(argv.slice(1, script).includes(f), `ENTRYPOINT passes ${f} before the script`);
  const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start!;
  t.ok(start.includes(`node ${SERVER_NODE_FLAGS.join(' ')} dist/server/cli.js serve`), `npm start: ${start}`);
});

t.test('a script run through the shebang gets the flags as node options', async (t) => {
  // The shebang line of the build, on a script that prints what node was given.
  const dir = t.testdir({ 'probe.js': `${read('dist/server/cli.js').split('\n')[0]}\nprocess.stdout.write(JSON.stringify(process.execArgv));\n` });
  const probe = join(dir, 'probe.js');
  chmodSync(probe, 0o755);
  const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` };
  const execArgv = JSON.parse(execFileSync(probe, { env, encoding: 'utf8' })) as string[];
  t.same(execArgv, [...SERVER_NODE_FLAGS], `execArgv ${JSON.stringify(execArgv)}`);
});

/** The node flags of a running `node [flags] script …` process (/proc/<pid>/cmdline). */
function nodeFlagsOfPid(pid: number): string[] {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const script = argv.findIndex((a, i) => i > 0 && !a.startsWith('--'));
  return argv.slice(1, script);
}

t.test('the servers of the test harness and of the benchmarks run with the flags', async (t) => {
  const harness = await startSpawned();
  t.teardown(() => harness.stop());
  const bench = await startSlipway();
  t.teardown(() => bench.stop());
  const data = tempDir('slipway-runtime-');
  t.teardown(() => data.cleanup());
  const node = await startNode(data.dir, {});
  t.teardown(() => node.stop());
  for (const [name, pid] of [['test harness', harness.proc.pid!], ['bench/servers/slipway', bench.pid], ['bench/cluster-nodes', node.pid]] as const) {
    const flags = nodeFlagsOfPid(pid);
    t.same(flags, [...SERVER_NODE_FLAGS], `${name}: ${JSON.stringify(flags)}`);
  }
});
