/**
 * kill -9 of one node mid-push while the other keeps serving (issue 13's cluster test): two
 * spawned nodes on one real PostgreSQL and one real Ceph RGW bucket. A takes pushes (four
 * clients pushing small images in a loop, and one large blob streamed by a chunked PATCH that
 * is still sending when A dies); B serves pulls and takes pushes throughout. A is killed with
 * SIGKILL once the large upload has sent several MiB. Then:
 * - every request to B before, during and after the kill succeeded (pulls byte-exact, pushes 201);
 * - the clients of A's interrupted requests got errors, never a success they cannot rely on;
 * - every image A acknowledged is served intact by B; the large upload (its session was
 *   A's) left nothing a pull could see;
 * - nothing half-written is visible: `slipway fsck --full` finds no manifest naming a missing
 *   blob, no blob record without bytes (or with wrong bytes), no link without a record; the only
 *   leftovers are orphan files (bytes under their digest whose record the kill prevented), which
 *   no pull serves and GC removes after its grace period.
 * A restarted on its data directory (same node name) while B's traffic goes on (chunked
 * upload sessions on B included, which A's start-up recovery must leave alone) serves again and
 * sees everything B took meanwhile; a 12 MiB session on B, half sent before A's start and half
 * after, completes. (Checked to fail with one node name for both: A's recovery then aborts B's
 * multipart upload and the held session's PUT fails.) What happens to the killed session's record is the upload engine's (per-node
 * sessions, engine/blobs/peer-sessions.ts): this test checks only that it is never served as a blob.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { startCluster, memImage, pushWithRetry, servedIntact, type MemImage } from '../helpers/cluster.js';
import { startSpawned, waitFor } from '../helpers/harness.js';
import { postgresSkip } from '../helpers/postgres.js';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { basic, createApp, http } from '../helpers/http.js';
import { startUpload, withDigest, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';

const skip = postgresSkip() || cephSkip();

/** A small image of its own (config and one layer), plus a layer every image shares. */
function smallImage(n: string, common: Buffer): MemImage {
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: [`N=${n}`] }, rootfs: { type: 'layers', diff_ids: [] } }));
  return memImage(config, [common, randomBytes(10_000 + Math.floor(Math.random() * 30_000))]);
}

/** POST, PATCH the bytes, PUT with the digest; resolves with the final status. */
async function chunkedUpload(target: Target, repo: string, bytes: Buffer): Promise<string> {
  const location = await startUpload(target, repo);
  const p = await http('PATCH', location, { headers: { ...target.auth, 'content-type': 'application/octet-stream' }, body: bytes });
  if (p.status !== 202) return `PATCH ${p.status} ${p.text.slice(0, 200)}`;
  const put = await http('PUT', withDigest(p.headers.location!, sha256(bytes)), { headers: target.auth });
  return put.status === 201 ? '201' : `PUT ${put.status} ${put.text.slice(0, 200)}`;
}

t.test('kill -9 of A mid-push while B keeps serving', { skip }, async (t) => {
  const c = await startCluster(t, { prefix: 'kill-mid-push/' });
  t.equal((await createApp(c.a.urls.api, c.operatorKey, 'killapp')).status, 201);
  const auth = basic('_', c.operatorKey);
  const onA = { registry: c.a.urls.registry, auth };
  const onB = { registry: c.b.urls.registry, auth };
  const common = randomBytes(50_000);
  const base = smallImage('base', common);
  t.ok((await pushWithRetry(onA, 'killapp/base', 'v1', base)).acked, 'an image pushed through A before the kill');

  let killed = false;
  let stop = false;
  const bLog: Array<{ what: string; ok: boolean; afterKill: boolean }> = [];
  const bPushed: Array<{ tag: string; img: MemImage }> = [];
  // B's traffic: pulls of the image pushed through A (bytes re-hashed) and pushes of its own.
  const bTraffic = Promise.all([0, 1, 2, 3].map(async (loop) => {
    for (let i = 0; !stop; i++) {
      const afterKill = killed;
      if (loop === 3) {
        // A chunked session on B (POST, PATCH, PUT through B's upload host), open while A dies and restarts.
        const bytes = randomBytes(200_000);
        const r = await chunkedUpload(onB, 'killapp/onb', bytes).catch((e: Error) => e.message);
        bLog.push({ what: `chunked upload ${i}: ${r}`, ok: r === '201', afterKill });
      } else if (loop === 0) {
        const tag = `b${i}`;
        const img = smallImage(tag, common);
        const r = await pushWithRetry(onB, 'killapp/onb', tag, img).catch((e: Error) => ({ acked: false, last: e.message }));
        bLog.push({ what: `push ${tag}: ${r.last}`, ok: r.acked, afterKill });
        if (r.acked) bPushed.push({ tag, img });
      } else {
        const problems = await servedIntact(c.b.urls.registry, c.operatorKey, 'killapp/base', 'v1', base).catch((e: Error) => [e.message]);
        bLog.push({ what: `pull: ${problems.join('; ')}`, ok: problems.length === 0, afterKill });
      }
    }
  }));

  // A's traffic: four clients pushing small images until A dies.
  const aAcked: Array<{ tag: string; img: MemImage }> = [];
  const aErrors: string[] = [];
  const aTraffic = Promise.all([0, 1, 2, 3].map(async (loop) => {
    for (let i = 0; !killed; i++) {
      const tag = `a${loop}-${i}`;
      const img = smallImage(tag, common);
      try {
        const r = await pushWithRetry(onA, 'killapp/ona', tag, img, 3);
        if (r.acked) aAcked.push({ tag, img }); else aErrors.push(r.last);
      } catch (e) {
        aErrors.push((e as Error).message);
      }
    }
  }));

  // The large upload: a session on A, then a chunked PATCH that keeps sending until A dies.
  const big = randomBytes(1024 * 1024);
  let sent = 0;
  const location = await startUpload(onA, 'killapp/big');
  const patch = request(location, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/octet-stream' },
    body: Readable.from((function* () {
      for (let i = 0; i < 10_000; i++) { sent += big.length; yield big; }
    })()),
  }).then(async (r) => `${r.statusCode} ${await r.body.text()}`);
  const patchSettled = patch.then((s) => ({ ok: s.startsWith('2'), s }), (e: Error) => ({ ok: false, s: e.message }));

  await waitFor('the large upload to have sent 8 MiB and A to have acknowledged pushes', () => sent >= 8 * 1024 * 1024 && aAcked.length >= 3, { timeoutMs: 120_000, intervalMs: 20 });
  await c.a.kill();
  killed = true;
  const bBefore = bLog.length;
  await waitFor('B to answer 60 more requests after the kill', () => bLog.length >= bBefore + 60, { timeoutMs: 180_000, intervalMs: 50 });
  await aTraffic;
  // A back on its data directory (same node name) while B's traffic, chunked sessions included,
  // goes on: A's start-up recovery must leave B's open sessions alone.
  // And one session on B held open across A's start: half its bytes before, the rest after; more
  // than a part (SLIPWAY_S3_PART_SIZE 5 MiB), so it has a multipart upload A's recovery could abort.
  const held = randomBytes(12 * 1024 * 1024);
  const half = 6 * 1024 * 1024;
  const heldAt = await startUpload(onB, 'killapp/onb');
  const first = await http('PATCH', heldAt, { headers: { ...auth, 'content-type': 'application/octet-stream' }, body: held.subarray(0, half) });
  t.equal(first.status, 202, 'B: first half of a session before A restarts');
  const again = await startSpawned({ dataDir: c.a.dataDir, env: { ...c.env, ...c.envA }, startTimeoutMs: 120_000 });
  t.teardown(() => again.stop());
  const second = await http('PATCH', first.headers.location!, { headers: { ...auth, 'content-type': 'application/octet-stream', 'content-range': `${half}-${held.length - 1}` }, body: held.subarray(half) });
  t.equal(second.status, 202, `B: the session survived A's start-up recovery (${second.text.slice(0, 120)})`);
  const done = await http('PUT', withDigest(second.headers.location ?? first.headers.location!, sha256(held)), { headers: auth });
  t.equal(done.status, 201, 'B: the held session completes');
  const bAtRestart = bLog.length;
  await waitFor('B to answer 40 more requests after A restarted', () => bLog.length >= bAtRestart + 40, { timeoutMs: 180_000, intervalMs: 50 });
  stop = true;
  await bTraffic;

  const patchResult = await patchSettled;
  t.notOk(patchResult.ok, `the killed upload's client got an error (${patchResult.s.slice(0, 80)})`);
  t.ok(sent < 10_000 * big.length, 'the upload was still sending when A died');
  t.same(bLog.filter((l) => !l.ok).map((l) => `${l.afterKill ? 'after' : 'before'}: ${l.what}`), [], `all of B's ${bLog.length} operations succeeded (${bLog.filter((l) => l.afterKill).length} after the kill, ${bLog.length - bAtRestart} after A restarted; chunked sessions among them)`);
  t.ok(aErrors.length >= 1, `A's in-flight pushes failed at the kill (${aErrors.length}: ${aErrors[0]?.slice(0, 80)})`);

  const problems: string[] = [];
  for (const { tag, img } of aAcked) problems.push(...await servedIntact(c.b.urls.registry, c.operatorKey, 'killapp/ona', tag, img));
  t.same(problems, [], `all ${aAcked.length} images A acknowledged are served intact by B`);

  const report = await c.fsck();
  // Bytes stored under their digest whose record the kill prevented are orphan files: invisible
  // (no record, so no pull finds them) and removed by GC's orphan phase after the grace period.
  t.same(report.problems.filter((p) => p.kind !== 'stale-upload' && p.kind !== 'orphan-file'), [], 'fsck --full: no manifest naming a missing blob, no blob record without its bytes, no broken link');
  const orphans = report.problems.filter((p) => p.kind === 'orphan-file').map((p) => p.subject);
  for (const d of orphans) {
    for (const repo of ['killapp/ona', 'killapp/big']) {
      t.equal((await http('HEAD', `${c.b.urls.registry}/v2/${repo}/blobs/${d}`, { headers: auth })).status, 404, `orphan bytes ${d.slice(7, 19)} left by the kill are not served`);
    }
  }
  t.comment(`fsck after the kill: ${orphans.length} orphan file(s), ${report.problems.filter((p) => p.kind === 'stale-upload').length} stale session(s)`);

  // A restarted serves what B took meanwhile, and takes pushes.
  const last = bPushed[bPushed.length - 1]!;
  t.same(await servedIntact(again.urls.registry, c.operatorKey, 'killapp/onb', last.tag, last.img), [], 'A restarted serves an image B took after the kill');
  t.ok((await pushWithRetry({ registry: again.urls.registry, auth }, 'killapp/ona', 'after-restart', smallImage('r', common))).acked, 'A restarted takes pushes');
});
