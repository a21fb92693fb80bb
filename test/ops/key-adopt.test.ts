/**
 * The embedded store records its server key's fingerprint too (engine/identity/key-check.ts): a
 * start with another key is refused, naming the settings, and so is an operator command that
 * seals secrets; `slipway key adopt` records a replacement key after the old one was lost, and
 * the installation starts again with its API keys working.
 */
import t from 'tap';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { runCli as cli, tempDir } from '../helpers/server.js';
import { startInProcess } from '../helpers/harness.js';
import { api } from '../helpers/oauth.js';

t.test('a lost key: refused start, then key adopt', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const data = join(tmp.dir, 'data');
  const first = join(tmp.dir, 'first.key');
  const second = join(tmp.dir, 'second.key');
  writeFileSync(second, randomBytes(32), { mode: 0o600 });
  const a = await startInProcess({ dataDir: data, env: { SLIPWAY_KEY_FILE: first } });
  const apiKey = a.operator.apiKey;
  await a.stop();

  await t.rejects(startInProcess({ dataDir: data, env: { SLIPWAY_KEY_FILE: second } }), /differs from the key the cluster's metadata store records/);
  const refused = await cli(['account', 'create', '--email', 'x@example.com', '--data', data, '--key-file', second]);
  t.equal(refused.code, 1, 'an operator command that seals a secret is refused too');
  t.match(refused.stderr, /differs from the key/);

  const adopted = await cli(['key', 'adopt', '--data', data, '--key-file', second]);
  t.equal(adopted.code, 0, adopted.stderr);
  t.match(adopted.stdout, /recorded as this installation's key \(was .{12}\): values signed and second factors sealed under the old key no longer work/);
  const b = await startInProcess({ dataDir: data, env: { SLIPWAY_KEY_FILE: second } });
  t.teardown(() => b.stop());
  t.equal((await api(b, 'GET', '/account', apiKey)).status, 200, 'API keys are hashes, not signatures: they still work');
});
