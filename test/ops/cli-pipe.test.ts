/**
 * The operator CLI's output is complete when piped. `process.exit` right after printing dropped
 * what Node still had queued for a pipe (writes to pipes are asynchronous on POSIX): `slipway gc
 * --json` piped to a file stopped at 219,264 bytes, unterminated. Here `slipway fsck --json`
 * reports tens of thousands of problems (blob records whose files do not exist: seeded straight
 * into the store), over 10 MB on one line, through a real pipe to this process, which parses it.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { tempDir, CLI } from '../helpers/server.js';
import { openStore } from '../../engine/store.js';
import { blobs } from '../../engine/blobs/keyspaces.js';

/** Records seeded: each `blob-missing` problem is about 260 bytes of JSON. */
const RECORDS = 45_000;
const MIN_BYTES = 10 * 1024 * 1024;

t.test('fsck --json piped: every byte arrives and parses', async (t) => {
  const tmp = tempDir();
  t.teardown(() => tmp.cleanup());
  const store = await openStore(tmp.dir);
  await store.metadata.transact(async (tx) => {
    for (let i = 0; i < RECORDS; i++) {
      tx.put(blobs, `sha256:${createHash('sha256').update(String(i)).digest('hex')}`, { size: 1000 + i, createdAt: 0, refs: 0 });
    }
  });
  await store.close();

  const child = spawn(process.execPath, [CLI, 'fsck', '--json', '--data', tmp.dir], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SLIPWAY_LOG_LEVEL: 'warn' } });
  const chunks: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => chunks.push(d));
  child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  const out = Buffer.concat(chunks).toString('utf8');
  t.equal(code, 1, `fsck exits 1: problems left unrepaired (stderr: ${stderr.slice(0, 500)})`);
  t.ok(out.length >= MIN_BYTES, `at least 10 MB arrived through the pipe (${out.length} bytes)`);
  let report: { problems: Array<{ kind: string }>; checked: { blobs: number } } | undefined;
  t.doesNotThrow(() => { report = JSON.parse(out); }, 'the output is one complete JSON document');
  t.equal(report?.checked.blobs, RECORDS, 'every record was checked');
  t.equal(report?.problems.filter((p) => p.kind === 'blob-missing').length, RECORDS, 'every problem is in the output');
});
