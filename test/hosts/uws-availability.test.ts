/**
 * SLIPWAY_LISTENER=uws needs the native uWebSockets.js binary of this Node's module ABI. Where the
 * installed build has none (Node 22 and 24: server/http/uws.ts), `slipway serve` refuses at start
 * with one JSON log line saying why (the ABI, the glibc the newer builds need, the way out);
 * where it has one (Node 20), the server starts on it. The test runs either way and checks the
 * behaviour this Node gets.
 */
import t from 'tap';
import { runCli, tempDir } from '../helpers/server.js';
import { logLine, startSpawned } from '../helpers/harness.js';
import { http } from '../helpers/http.js';
import { uwsUnavailable } from '../../server/http/uws.js';

const PORTS = ['--registry-port', '0', '--api-port', '0', '--auth-port', '0', '--upload-port', '0', '--admin-port', '0'];
const missing = uwsUnavailable();
t.comment(`Node ${process.versions.node} (ABI ${process.versions.modules}): ${missing ?? 'uWebSockets.js binary present'}`);

t.test('no binary for this Node: the start fails saying why', { skip: missing ? false : `Node ${process.versions.node} has a uWebSockets.js binary` }, async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const r = await runCli(['serve', '--data', tmp.dir, ...PORTS], { SLIPWAY_LISTENER: 'uws' });
  t.equal(r.code, 1, 'exit status 1');
  const fatal = r.stdout.split('\n').map(logLine).find((l) => l?.level === 60);
  t.match(fatal?.msg, new RegExp(`SLIPWAY_LISTENER=uws cannot run here: .*not for Node ${process.versions.node.replace(/\./g, '\\.')} \\(ABI ${process.versions.modules}\\)`), 'names this Node and its ABI');
  t.match(fatal?.msg, /glibc 2\.38/, 'and what the newer builds need');
  t.match(fatal?.msg, /SLIPWAY_LISTENER=h1/, 'and the way out');
});

t.test('a binary for this Node: the server starts on uWebSockets.js', { skip: missing ?? false }, async (t) => {
  const server = await startSpawned({ env: { SLIPWAY_LISTENER: 'uws' } });
  t.teardown(() => server.stop());
  t.equal((await http('GET', `${server.urls.registry}/v2/`)).status, 401, 'the registry host answers');
});
