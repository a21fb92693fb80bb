/**
 * The server's resident memory during many uploads is bounded by the upload budget
 * (SLIPWAY_UPLOAD_MEMORY) plus a constant, through the real HTTP interface of a `slipway serve`
 * process: upload buffers are shared memory, which V8's garbage collector does not reclaim
 * promptly, so each request's buffers must be reused (engine/blobs/aligned-buffer.ts
 * `recycleShared`). Before that, each 4 MiB push left ~8 MiB of buffers mapped and this test's
 * pushes grew the server by several hundred MiB.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basic, createApp } from '../helpers/http.js';
import { startSpawned } from '../helpers/harness.js';
import { pushBlob, type Target } from '../helpers/registry.js';
import { STASH_LIMIT_BYTES } from '../../engine/blobs/writer.js';

const MiB = 1024 * 1024;
const BUDGET_MIB = 32;
const BLOBS = 48;
const BLOB_BYTES = 4 * MiB;
const WIDTH = 4;
/** Slack for everything else a busy server allocates (JIT code, heap growth, socket buffers). */
const SLACK_MIB = 48;

const server = await startSpawned({ env: { SLIPWAY_UPLOAD_MEMORY: String(BUDGET_MIB), SLIPWAY_GC_INTERVAL: '0' } });
t.teardown(() => server.stop());
const pid = server.proc.pid!;
const target: Target = { registry: server.urls.registry, auth: basic('_', server.apiKey!) };
await createApp(server.urls.api, server.apiKey!, 'rss');

function rssMiB(): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

const base = randomBytes(BLOB_BYTES);
/** Pushes blobs `from` … `to - 1` (distinct bytes each), `WIDTH` at a time, monolithic POSTs. */
async function pushRange(from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(Array.from({ length: WIDTH }, async () => {
    while (next < to) {
      const i = next++;
      const bytes = Buffer.from(base);
      bytes.writeUInt32BE(i, 0);
      const r = await pushBlob(target, 'rss/web', bytes);
      if (r.status !== 201) throw new Error(`push ${i}: ${r.status} ${r.text}`);
    }
  }));
}

t.test(`${BLOBS} pushes of 4 MiB, ${WIDTH} at a time, stay within the budget plus a constant`, async (t) => {
  await pushRange(0, WIDTH * 2); // warm-up: worker threads, JIT, first buffers
  const warm = rssMiB();
  let peak = warm;
  const timer = setInterval(() => { peak = Math.max(peak, rssMiB()); }, 20);
  try {
    await pushRange(WIDTH * 2, BLOBS);
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, rssMiB());
  const bound = BUDGET_MIB + STASH_LIMIT_BYTES / MiB + SLACK_MIB;
  t.ok(peak - warm <= bound, `RSS grew ${Math.round(peak - warm)} MiB (${Math.round(warm)} → ${Math.round(peak)}); bound ${bound} MiB`);
});
