/**
 * Fault injection: the data disk hangs. The server's data directory (blob files, upload session
 * files, the embedded LMDB database) is on a real FUSE file system (test/helpers/hung-disk.ts)
 * whose daemon the test stops with SIGSTOP: from then on every write, fsync, open and commit on
 * it waits in the kernel, neither completing nor failing. Through the real interfaces (a spawned
 * `slipway serve`, raw HTTP):
 * - a PATCH on an open session, a monolithic push, an API write and the first write of a kind
 *   of record not written since the start (a team) each end within the bound
 *   (SLIPWAY_DISK_TIMEOUT plus a margin, docs/faults.md "A data disk that hangs") with 503 and
 *   Retry-After; the PATCH's answer says the session keeps its acknowledged bytes;
 * - `/readyz` answers 503 and names the disk, while it hangs;
 * - once the daemon runs again: the node is ready without a restart, the session's Range is still
 *   its acknowledged offset, the client resumes it from there and completes it byte-identical,
 *   every blob acknowledged before reads back byte-identical, and no request is left in flight.
 * On the code before, the PATCH got no answer at all while the disk hung.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { request } from 'undici';
import { hungDiskSkip, mountHungDisk, threadWaits } from '../helpers/hung-disk.js';
import { startSpawned, waitFor } from '../helpers/harness.js';
import { basic, bearer, createApp } from '../helpers/http.js';
import { sha256 } from '../helpers/image.js';
import { scrape, sampleSum } from '../helpers/metrics.js';
import { describe, timed, type Outcome } from './traffic.js';

const MiB = 1024 * 1024;
/** SLIPWAY_DISK_TIMEOUT of the server (seconds). */
const DISK_TIMEOUT_S = 2;
/**
 * The bound of a request that waits on the hung disk: one deadline (an append's write, or a
 * commit), plus a margin for the loaded 2-core machine.
 */
const BOUND_MS = DISK_TIMEOUT_S * 1000 + 4000;
/** After this long a request counts as hung. */
const HANG_MS = 30_000;

t.test('a data disk that hangs (FUSE daemon stopped)', { timeout: 180_000, skip: await hungDiskSkip() }, async (t) => {
  const disk = await mountHungDisk();
  t.teardown(() => disk.unmount());
  const server = await startSpawned({ dataDir: join(disk.dir, 'data'), env: { SLIPWAY_DISK_TIMEOUT: String(DISK_TIMEOUT_S), SLIPWAY_MIN_FREE_DISK_MB: '1' } });
  t.teardown(async () => { disk.thaw(); await server.stop(); });
  const key = server.apiKey!;
  const auth = basic('_', key);
  const octet = { ...auth, 'content-type': 'application/octet-stream' };
  const reg = server.urls.registry;
  t.equal((await createApp(server.urls.api, key, 'disk')).status, 201);
  const readyz = async () => {
    const res = await request(`${server.urls.admin}/readyz`, { signal: AbortSignal.timeout(HANG_MS) });
    return { status: res.statusCode, body: await res.body.text() };
  };

  // Acknowledged before the fault: a blob, and the first MiB of an open session.
  const blob = randomBytes(MiB);
  t.equal((await timed('push', 'before', 'POST', `${reg}/v2/disk/web/blobs/uploads/?digest=${sha256(blob)}`, { headers: octet, body: blob, hangMs: HANG_MS })).status, 201, 'a blob acknowledged before the fault');
  const layer = randomBytes(3 * MiB);
  const post = await timed('POST', 'before', 'POST', `${reg}/v2/disk/web/blobs/uploads/`, { headers: auth, hangMs: HANG_MS });
  t.equal(post.status, 202);
  const first = await timed('PATCH', 'before', 'PATCH', post.headers.location!, { headers: { ...octet, 'content-range': `0-${MiB - 1}` }, body: layer.subarray(0, MiB), hangMs: HANG_MS });
  t.equal(first.status, 202, 'the first MiB of a session acknowledged');
  const location = first.headers.location!;

  disk.freeze();
  const frozenAt = performance.now();
  const other = randomBytes(MiB);
  // Whatever is still unanswered past the bound: what the server's threads wait on, for the report.
  let waits = '';
  const watchdog = setTimeout(() => { waits = threadWaits(server.proc.pid!); }, BOUND_MS + 1000);
  const json = { ...bearer(key), 'content-type': 'application/json', accept: 'application/vnd.slipway+json; version=3' };
  let patch: Outcome, mono: Outcome, api: Outcome, team: Outcome, head: Outcome, ready: { status: number; body: string; ms: number };
  try {
    [patch, mono, api, team, head, ready] = await Promise.all([
      timed('PATCH during the hang', 'hung', 'PATCH', location, { headers: { ...octet, 'content-range': `${MiB}-${2 * MiB - 1}` }, body: layer.subarray(MiB, 2 * MiB), hangMs: HANG_MS }),
      timed('monolithic push during the hang', 'hung', 'POST', `${reg}/v2/disk/web/blobs/uploads/?digest=${sha256(other)}`, { headers: octet, body: other, hangMs: HANG_MS }),
      timed('API write during the hang', 'hung', 'POST', `${server.urls.api}/apps`, { headers: json, body: Buffer.from(JSON.stringify({ name: 'disk2' })), hangMs: HANG_MS }),
      // The first write of its kind since the start (no team was made before): on the code
      // before, its first use of the store's team records made lmdb-js open their database with
      // a synchronous commit on the event loop, which waited on the hung disk and stopped the
      // whole server (every request here went unanswered until the disk answered).
      timed('first team write during the hang', 'hung', 'POST', `${server.urls.api}/teams`, { headers: json, body: Buffer.from(JSON.stringify({ name: 'disk-team' })), hangMs: HANG_MS }),
      // A pull's size check (a stat of the blob file) waits on the disk: never on the event loop.
      timed('blob HEAD during the hang', 'hung', 'HEAD', `${reg}/v2/disk/web/blobs/${sha256(blob)}`, { headers: auth, hangMs: HANG_MS }),
      waitFor('/readyz to report the disk', async () => {
        const r = await readyz();
        return r.status === 503 && /not answering/.test(JSON.parse(r.body).checks?.disk ?? '') ? { ...r, ms: performance.now() - frozenAt } : undefined;
      }, { timeoutMs: BOUND_MS + 10_000, intervalMs: 200 }).catch((e: Error) => ({ status: 0, body: e.message, ms: Infinity })),
    ]);
  } finally {
    clearTimeout(watchdog);
    disk.thaw();
  }
  const thawedAt = performance.now();
  const late = [patch, mono, api, team, head].filter((o) => o.ms >= BOUND_MS);
  if (late.length) t.comment(`past the bound: ${late.map(describe).join('; ')}; the server's threads then:\n${waits}`);
  t.comment(`while the disk hung: ${describe(patch)}; ${describe(mono)}; ${describe(head)}; ${describe(api)}; ${describe(team)}; /readyz 503 after ${Math.round(ready.ms)} ms: ${ready.body.slice(0, 240)}`);
  for (const o of [patch, mono]) {
    t.match({ status: o.status, code: o.code, error: o.error }, { status: 503, code: 'UNAVAILABLE', error: undefined }, `${o.what}: 503 UNAVAILABLE`);
    t.ok(Number(o.retryAfter) > 0, `${o.what}: Retry-After`);
    t.ok(o.ms < BOUND_MS, `${o.what}: answered in ${Math.round(o.ms)} ms (bound ${BOUND_MS} ms)`);
    t.match(o.message ?? '', /data disk is not answering/, `${o.what}: the message names the disk`);
  }
  t.ok(head.status === 200 || head.status === 503, `a blob HEAD answered 200, or 503 from the disk deadline (${describe(head)})`);
  t.ok(head.ms < BOUND_MS, `the blob HEAD answered in ${Math.round(head.ms)} ms (bound ${BOUND_MS} ms)`);
  t.match(patch.message ?? '', new RegExp(`keeps its ${MiB} acknowledged bytes`), 'the PATCH says the session keeps its acknowledged bytes');
  t.ok(ready.ms < BOUND_MS + 5000, `/readyz reported the disk while it hung (${ready.body.slice(0, 200)})`);
  t.match({ status: api.status, error: api.error }, { status: 503, error: undefined }, `an API write: 503 (${describe(api)})`);
  t.ok(Number(api.retryAfter) > 0, 'the API write: Retry-After');
  t.ok(api.ms < BOUND_MS, `the API write answered in ${Math.round(api.ms)} ms`);
  t.match({ status: team.status, error: team.error }, { status: 503, error: undefined }, `the first team write: 503 (${describe(team)})`);
  t.ok(team.ms < BOUND_MS, `the first team write answered in ${Math.round(team.ms)} ms`);

  await waitFor('/readyz to be ready again', async () => (await readyz()).status === 200, { timeoutMs: 30_000, intervalMs: 100 });
  t.comment(`ready again ${Math.round(performance.now() - thawedAt)} ms after the disk answered`);
  const status = await timed('status', 'after', 'GET', location, { headers: auth, hangMs: HANG_MS });
  t.equal(status.status, 204, 'the session is still open');
  t.equal(status.headers.range, `0-${MiB - 1}`, 'its Range is the acknowledged offset');
  const rest = await timed('PATCH', 'after', 'PATCH', location, { headers: { ...octet, 'content-range': `${MiB}-${layer.length - 1}` }, body: layer.subarray(MiB), hangMs: HANG_MS });
  t.equal(rest.status, 202, `the client resumes from the acknowledged offset (${describe(rest)})`);
  const put = await timed('PUT', 'after', 'PUT', `${rest.headers.location}&digest=${sha256(layer)}`, { headers: auth, hangMs: HANG_MS });
  t.equal(put.status, 201, `and completes the session (${describe(put)})`);
  for (const b of [blob, layer]) {
    const g = await timed('verify', 'after', 'GET', `${reg}/v2/disk/web/blobs/${sha256(b)}`, { headers: auth, hangMs: HANG_MS });
    t.ok(g.status === 200 && g.bytes.equals(b), `blob of ${b.length} bytes reads back byte-identical (${describe(g)})`);
  }
  const again = await timed('push', 'after', 'POST', `${reg}/v2/disk/web/blobs/uploads/?digest=${sha256(other)}`, { headers: octet, body: other, hangMs: HANG_MS });
  t.equal(again.status, 201, 'the push refused during the hang succeeds now');
  await waitFor('no request in flight', async () => sampleSum(await scrape(server.urls.admin), 'slipway_http_requests_in_flight') === 0, { timeoutMs: 10_000, intervalMs: 50 });
  t.pass('slipway_http_requests_in_flight is 0');
});
