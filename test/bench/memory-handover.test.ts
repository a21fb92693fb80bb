/**
 * The bench's memory handover (bench/memory-handover.ts): the held file is written in full before
 * the push, shortened while something else takes the guest's free memory, and gone after `end()`,
 * which says how much was released. Other tests may take memory at the same time on a shared CI
 * machine; that only makes the handover release sooner, so the assertions hold either way.
 */
import t from 'tap';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { handOverMemory } from '../../bench/memory-handover.js';

const MiB = 1024 * 1024;

/** Writes `mib` MiB of non-zero bytes into `path` through the page cache (no sync). */
function fill(path: string, mib: number): void {
  const block = Buffer.alloc(4 * MiB, 0x5a);
  const fd = openSync(path, 'w');
  try {
    for (let i = 0; i < mib / 4; i++) writeSync(fd, block, 0, block.length, i * block.length);
  } finally {
    closeSync(fd);
  }
}

/** Bytes left in the held file (0 once the handover released all of it and deleted it). */
const size = (path: string) => (existsSync(path) ? statSync(path).size : 0);

t.test('the held file shrinks as free memory is taken, and is gone after end()', { skip: !existsSync('/proc/meminfo') && 'needs /proc/meminfo (Linux)' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'handover-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const held = join(dir, 'held');
  const handover = await handOverMemory(held, 96 * MiB);
  t.ok(existsSync(held), 'the file is there once the handover is ready');
  // Take memory as a push would: page cache of another file, 4 MiB at a time, until the handover
  // released at least half of what it holds (bounded: 20 rounds of 64 MiB).
  let rounds = 0;
  while (size(held) > 48 * MiB && rounds < 20) {
    fill(join(dir, `push-${rounds}`), 64);
    rounds++;
    await new Promise((r) => setImmediate(r));
    const until = performance.now() + 200;
    while (size(held) > 48 * MiB && performance.now() < until) await new Promise((r) => setTimeout(r, 5));
  }
  t.ok(size(held) <= 48 * MiB, `the held file was shortened (${size(held) / MiB} MiB left after ${rounds} rounds)`);
  const result = await handover.end();
  t.equal(result.bench, 'memory_handover');
  t.equal(result.held_bytes, 96 * MiB);
  t.ok(result.released_bytes >= 48 * MiB && result.released_bytes <= 96 * MiB, `released ${result.released_bytes / MiB} MiB while the memory was taken`);
  t.notOk(existsSync(held), 'the file is deleted at the end');
});

t.test('a file that cannot be written fails the handover', async (t) => {
  await t.rejects(handOverMemory(join(tmpdir(), 'no-such-dir-for-handover', 'held'), 8 * MiB));
});
