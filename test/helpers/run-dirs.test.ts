/**
 * The daemon harnesses' run directories under concurrency: test files run side by side, and each
 * harness start sweeps directories of its prefix whose owner is dead. A sweep must never take a
 * directory whose owner is alive, including one created a moment ago (CI once lost a PostgreSQL
 * directory between its mkdtemp and its chown: the sweeper read an empty owner.pid).
 *
 * Several processes create, hold for a random time and remove run directories of one prefix at
 * once; every directory must still exist, with its owner's pid, until its owner removes it.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const daemons = fileURLToPath(new URL('./daemons.js', import.meta.url));
const PROCESSES = 6;
const ROUNDS = 40;

/** One worker: ROUNDS times makeRunDir, hold 0–3 ms, check, remove; prints "lost <dir>" per loss. */
const worker = (prefix: string) => `
  const { makeRunDir } = await import(${JSON.stringify(daemons)});
  const { readFileSync } = await import('node:fs');
  const { rm } = await import('node:fs/promises');
  for (let i = 0; i < ${ROUNDS}; i++) {
    const dir = await makeRunDir(${JSON.stringify(prefix)}, () => []);
    await new Promise((r) => setTimeout(r, Math.random() * 3));
    let owner = '';
    try { owner = readFileSync(dir + '/owner.pid', 'utf8'); } catch {}
    if (owner !== String(process.pid)) console.log('lost ' + dir);
    if (Math.random() < 0.5) await rm(dir, { recursive: true, force: true });
  }
`;

t.test('sweeps never take a live owner\'s directory', async (t) => {
  const prefix = `slipway-rundir-race-${process.pid}-`;
  t.teardown(async () => {
    for (const name of await fsp.readdir(tmpdir())) {
      if (name.startsWith(prefix)) await fsp.rm(join(tmpdir(), name), { recursive: true, force: true });
    }
  });
  const outputs = await Promise.all(Array.from({ length: PROCESSES }, () => new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', worker(prefix)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`worker exited ${code}`))));
  })));
  const lost = outputs.join('').split('\n').filter((l) => l.startsWith('lost '));
  t.same(lost, [], `${PROCESSES} processes × ${ROUNDS} run directories, none swept while its owner lived`);
  // Directories left by owners that have exited are swept by the next start.
  const left = (await fsp.readdir(tmpdir())).filter((n) => n.startsWith(prefix));
  t.ok(left.length > 0, 'the workers left directories behind (half are not removed)');
  const { makeRunDir } = await import('./daemons.js');
  const mine = await makeRunDir(prefix, () => []);
  const after = (await fsp.readdir(tmpdir())).filter((n) => n.startsWith(prefix));
  t.same(after, [mine.slice(tmpdir().length + 1)], 'a new start swept every directory of a dead owner');
});
