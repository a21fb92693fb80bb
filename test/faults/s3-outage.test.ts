/**
 * Fault injection: the object store (a real Ceph RADOS Gateway) is killed mid-traffic and
 * started again, under concurrent pushes (single-PutObject and multipart sizes, monolithic and
 * chunked, raw HTTP and skopeo) and pulls (blobs of both sizes, streams cut mid-body). A seeded
 * random source (printed; SLIPWAY_TEST_SEED replays it) picks sizes, modes and pauses; the
 * outage begins while a multipart upload is open in the bucket and ends once the traffic has
 * met it. Then, through the real interfaces:
 * - every request ended within its bound (docs/faults.md): no client waited longer than
 *   2 × SLIPWAY_S3_TIMEOUT plus a margin, none hung;
 * - what a client saw while the store was away: 503 with the distribution code `UNAVAILABLE`
 *   and Retry-After (never TOOMANYREQUESTS, never a 400 blaming the client); a push refused so
 *   says its session was discarded, and the session is gone (404);
 * - every acknowledged blob and manifest reads back byte-identical; a pull cut mid-body never
 *   delivered wrong bytes;
 * - no request is left in `slipway_http_requests_in_flight`; the live node's reaper removes
 *   the multipart uploads the outage left (their aborts failed while it lasted) within a few
 *   reaper intervals, without a restart; `slipway fsck --full` finds nothing but orphan files of
 *   refused pushes whose commit reached the store before the kill (the answer lost), and
 *   `fsck --repair` removes those;
 * - a drain finishes promptly.
 * On the old code the first multipart push the outage meets is never answered (its body stops
 * being read), so the hang detector fires.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { startS3Store } from '../helpers/s3-store.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp } from '../helpers/http.js';
import { buildImage, sha256 } from '../helpers/image.js';
import { runCli } from '../helpers/server.js';
import { openRequest } from '../helpers/uploads.js';
import { scrape, sampleSum } from '../helpers/metrics.js';
import { describe, rng, testSeed, timed, type Outcome } from './traffic.js';

const skip = cephSkip() || skopeoSkip();
const MiB = 1024 * 1024;
const PREFIX = 'outage/';
/** SLIPWAY_S3_TIMEOUT of the server (seconds). */
const TIMEOUT_S = 2;
/**
 * What a request may take: the documented bound (2 attempts × SLIPWAY_S3_TIMEOUT, plus the
 * SDK's back-off) plus a margin for a loaded 2-core machine moving up to 14 MiB per request.
 */
const BOUND_MS = 2 * TIMEOUT_S * 1000 + 1000 + 9000;
/**
 * A manifest PUT reads the config and scans its new layer one store request after the other, in
 * a worker thread shared with the other pushes' inspections (docs/faults.md): the bound of one
 * request per read (here two), plus the wait for a thread.
 */
const MANIFEST_BOUND_MS = 2 * BOUND_MS;
/** After this long a request counts as hung (the client gives up). */
const HANG_MS = 40_000;

interface Acked { repo: string; digest: string; bytes: Buffer }

t.test('the object store killed and restarted under traffic', { skip, timeout: 240_000 }, async (t) => {
  const seed = testSeed();
  t.comment(`seed ${seed} (SLIPWAY_TEST_SEED=${seed} replays the sizes, modes and pauses)`);
  const s3 = await startS3Store();
  t.teardown(() => s3.stop());
  const server = await startInProcess({ env: s3.env(PREFIX, {
    SLIPWAY_S3_TIMEOUT: String(TIMEOUT_S), SLIPWAY_UPLOAD_REAP_INTERVAL: '0.5', SLIPWAY_GC_INTERVAL: '0', SLIPWAY_DRAIN_SECONDS: '20',
  }) });
  t.teardown(() => server.stop());
  const key = server.operator.apiKey;
  const auth = basic('_', key);
  const reg = server.urls.registry;
  t.equal((await createApp(server.api, key, 'faults')).status, 201);
  const inFlight = async () => sampleSum(await scrape(server.urls.admin), 'slipway_http_requests_in_flight');
  const errorOf = (text: string) => { try { return JSON.parse(text).errors?.[0] ?? {}; } catch { return {}; } };

  await t.test('a multipart push alone on the server, when the store goes away mid-body and before it', async (t) => {
    const bytes = randomBytes(24 * MiB);
    const post = await timed('POST', 'before', 'POST', `${reg}/v2/faults/alone/blobs/uploads/`, { headers: auth, hangMs: HANG_MS });
    t.equal(post.status, 202);
    const location = post.headers.location!;
    const patch = openRequest('PATCH', location, { ...auth, 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) });
    for (let at = 0; at < 12 * MiB; at += MiB) await patch.send(bytes.subarray(at, at + MiB));
    await waitFor('a part of the session stored in the bucket', async () => (await s3.openMultipart(PREFIX)) > 0, { timeoutMs: 30_000, intervalMs: 20 });
    await s3.rgw.stopGateway();
    const t0 = performance.now();
    // The rest of the body, not waited for: a server that stops reading would block the sends.
    void (async () => { for (let at = 12 * MiB; at < bytes.length; at += MiB) await patch.send(bytes.subarray(at, at + MiB)); patch.end(); })();
    const hung = new Promise<undefined>((resolve) => { const timer = setTimeout(() => resolve(undefined), HANG_MS); timer.unref(); void patch.response.then(() => clearTimeout(timer)); });
    const res = await Promise.race([patch.response, hung]);
    const ms = performance.now() - t0;
    if (!res) {
      patch.abort();
      t.fail(`the PATCH in flight got no answer within ${HANG_MS} ms of the store going away`);
    } else {
      t.equal(res.status, 503, `the PATCH in flight: 503 (${res.text.slice(0, 200)})`);
      t.equal(errorOf(res.text).code, 'UNAVAILABLE', 'distribution code UNAVAILABLE');
      t.ok(Number(res.headers['retry-after']) > 0, 'Retry-After');
      t.match(errorOf(res.text).message, /blob store \(S3\) is unavailable.*session was discarded/, 'the message names the store and says the session was discarded');
      t.ok(ms < BOUND_MS, `answered ${Math.round(ms)} ms after the store went away (bound ${BOUND_MS} ms)`);
      t.equal((await timed('status', 'outage', 'GET', location, { headers: auth, hangMs: HANG_MS })).status, 404, 'the discarded session is unknown');
    }
    // Started while the store is away: held in memory up to the put limit, then a multipart upload that cannot start.
    const late = await timed('POST', 'outage', 'POST', `${reg}/v2/faults/alone/blobs/uploads/`, { headers: auth, hangMs: HANG_MS });
    t.equal(late.status, 202, 'POST needs no store');
    const p2 = await timed('PATCH', 'outage', 'PATCH', late.headers.location!, { headers: { ...auth, 'content-type': 'application/octet-stream' }, body: bytes, hangMs: HANG_MS });
    t.ok(p2.ms < BOUND_MS, `a multipart PATCH started during the outage answered in ${Math.round(p2.ms)} ms (${p2.status} ${p2.error ?? p2.message ?? ''})`);
    // Refused at once, or (its last parts still in flight when its body ended) acknowledged and
    // refused at the PUT: either way 503 UNAVAILABLE saying the session was discarded.
    const refusal = p2.status === 202
      ? await timed('PUT', 'outage', 'PUT', `${p2.headers.location}&digest=${sha256(bytes)}`, { headers: auth, hangMs: HANG_MS })
      : p2;
    t.match({ status: refusal.status, code: refusal.code, message: refusal.message }, { status: 503, code: 'UNAVAILABLE', message: /session was discarded/ }, `${refusal.what}: 503 UNAVAILABLE, session discarded`);
    t.ok(refusal.ms < BOUND_MS, `answered in ${Math.round(refusal.ms)} ms`);
    const mono = await timed('POST', 'outage', 'POST', `${reg}/v2/faults/alone/blobs/uploads/?digest=${sha256(bytes.subarray(0, 200_000))}`, { headers: auth, body: bytes.subarray(0, 200_000), hangMs: HANG_MS });
    t.match({ status: mono.status, code: mono.code }, { status: 503, code: 'UNAVAILABLE' }, 'a single-PutObject push: 503 UNAVAILABLE');
    try {
      await waitFor('no request in flight', async () => (await inFlight()) === 0, { timeoutMs: 10_000, intervalMs: 50 });
      t.pass('no request left in slipway_http_requests_in_flight');
    } finally {
      await s3.rgw.startGateway();
    }
    // The first PATCH's multipart upload could not be aborted while the store was away.
    await waitFor('the live node\'s reaper to abort the multipart upload the outage left', async () => (await s3.openMultipart(PREFIX)) === 0, { timeoutMs: 15_000, intervalMs: 100 });
    t.pass('its reaper aborted the abandoned multipart upload, without a restart');
  });

  let phase = 'before';
  let stop = false;
  const log: Outcome[] = [];
  const acked: Acked[] = [];
  /** Digests of pushes that were refused or cut (nothing acknowledged): their commit may have reached the store. */
  const refusedDigests = new Set<string>();
  const ackedManifests: Array<{ repo: string; tag: string; manifest: Buffer; blobs: Buffer[] }> = [];
  const send = async (what: string, method: string, url: string, body?: Buffer, headers: Record<string, string> = {}) => {
    const o = await timed(what, phase, method, url, { headers: { ...auth, ...headers }, body, hangMs: HANG_MS });
    log.push(o);
    return o;
  };

  /** One blob push: monolithic (POST ?digest=) or POST, 1–3 PATCHes, PUT. */
  const pushBlob = async (r: ReturnType<typeof rng>, repo: string, bytes: Buffer): Promise<boolean> => {
    const d = sha256(bytes);
    const size = bytes.length > 5 * MiB ? 'multipart' : 'single';
    if (r.next() < 0.4) {
      const o = await send(`monolithic ${size} push`, 'POST', `${reg}/v2/${repo}/blobs/uploads/?digest=${d}`, bytes, { 'content-type': 'application/octet-stream' });
      if (o.status !== 201) refusedDigests.add(d);
      return o.status === 201;
    }
    const post = await send('POST', 'POST', `${reg}/v2/${repo}/blobs/uploads/`);
    if (post.status !== 202) return false;
    let location = post.headers.location!;
    const cuts = [0, ...Array.from({ length: r.int(0, 2) }, () => r.int(1, bytes.length - 1)).sort((a, b) => a - b), bytes.length];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const [from, to] = [cuts[i]!, cuts[i + 1]!];
      if (from === to) continue;
      const p = await send(`chunked ${size} PATCH`, 'PATCH', location, bytes.subarray(from, to), { 'content-type': 'application/octet-stream', 'content-range': `${from}-${to - 1}` });
      if (p.status !== 202) {
        if (p.status === 503) {
          // The session was discarded, as the answer said: it is unknown now.
          const st = await send('status of a refused session', 'GET', location);
          if (st.status !== 404) t.fail(`a session refused with 503 is still there: ${describe(st)}`);
        }
        return false;
      }
      location = p.headers.location!;
    }
    const put = await send(`chunked ${size} PUT`, 'PUT', `${location}${location.includes('?') ? '&' : '?'}digest=${d}`);
    if (put.status !== 201) refusedDigests.add(d);
    return put.status === 201;
  };

  const pusher = async (n: number) => {
    const r = rng(seed + n);
    for (let i = 0; !stop; i++) {
      const bytes = randomBytes(r.next() < 0.5 ? r.int(50_000, 400_000) : r.int(6 * MiB, 11 * MiB));
      const repo = 'faults/web';
      if (!(await pushBlob(r, repo, bytes))) continue;
      acked.push({ repo, digest: sha256(bytes), bytes });
      if (r.next() < 0.3) {
        const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: [`N=${n}-${i}`] }, rootfs: { type: 'layers', diff_ids: [] } }));
        if (!(await pushBlob(r, repo, config))) continue;
        acked.push({ repo, digest: sha256(config), bytes: config });
        const manifest = Buffer.from(JSON.stringify({
          schemaVersion: 2, mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
          config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: config.length, digest: sha256(config) },
          layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: bytes.length, digest: sha256(bytes) }],
        }));
        const tag = `p${n}-${i}`;
        const m = await send('manifest PUT', 'PUT', `${reg}/v2/${repo}/manifests/${tag}`, manifest, { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' });
        if (m.status === 201) ackedManifests.push({ repo, tag, manifest, blobs: [config, bytes] });
      }
    }
  };

  const puller = async (n: number) => {
    const r = rng(seed + 100 + n);
    while (!stop) {
      if (acked.length === 0) { await new Promise((res) => setImmediate(res)); continue; }
      const a = r.pick(acked);
      const head = r.next() < 0.2;
      const o = await send(`${head ? 'HEAD' : 'GET'} of a ${a.bytes.length > 5 * MiB ? 'multipart' : 'single'} blob`, head ? 'HEAD' : 'GET', `${reg}/v2/${a.repo}/blobs/${a.digest}`);
      if (!head && o.status === 200 && !o.error && !o.bytes.equals(a.bytes)) t.fail(`a pull delivered wrong bytes: ${describe(o)}`);
    }
  };

  const skopeoPushes: Array<{ ok: boolean; ms: number; phase: string; stderr: string }> = [];
  const skopeoer = async () => {
    const r = rng(seed + 200);
    for (let i = 0; !stop; i++) {
      const built = await buildImage(join(server.dataDir, `skopeo-${i}`), { layers: [{ files: { 'big.bin': randomBytes(r.int(5 * MiB, 7 * MiB)) }, level: 1 }, { files: { 'n.txt': `${i}\n` } }] });
      const sent = phase;
      const t0 = performance.now();
      const res = await skopeo(['copy', '--retry-times', '0', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${built.dir}`, `docker://${new URL(reg).host}/faults/sk:${i}`]);
      skopeoPushes.push({ ok: res.code === 0, ms: performance.now() - t0, phase: sent, stderr: res.stderr.slice(-300) });
      if (res.code !== 0) for (const b of [built.config, ...built.layers.map((l) => l.bytes)]) refusedDigests.add(sha256(b));
      if (res.code === 0) ackedManifests.push({ repo: 'faults/sk', tag: String(i), manifest: built.manifest, blobs: [built.config, ...built.layers.map((l) => l.bytes)] });
    }
  };

  const traffic = Promise.all([pusher(0), pusher(1), puller(0), puller(1), skopeoer()]);
  const inPhase = (p: string) => log.filter((o) => o.phase === p);

  await waitFor('acknowledged pushes and a multipart upload open in the bucket', async () =>
    acked.length >= 4 && (await s3.openMultipart(PREFIX)) > 0, { timeoutMs: 90_000, intervalMs: 20 });
  phase = 'outage';
  const outageAt = performance.now();
  await s3.rgw.stopGateway();
  t.comment(`radosgw killed with ${log.length} requests answered, ${acked.length} blobs acknowledged`);
  // The outage lasts until the traffic met it: pushes and pulls refused (or hung: the hang
  // detector ends those), and a random extra number of answers.
  const extra = rng(seed + 300).int(0, 8);
  await waitFor('pushes and pulls to meet the outage', () => {
    const o = inPhase('outage');
    return o.filter((x) => /PATCH|PUT|push/.test(x.what) && x.status !== 201 && x.status !== 202).length >= 2 &&
      o.some((x) => /multipart (PATCH|PUT|push)/.test(x.what) && x.status !== 201 && x.status !== 202) &&
      o.filter((x) => x.what.startsWith('GET') && x.status !== 200).length >= 1 && o.length >= 6 + extra;
  }, { timeoutMs: HANG_MS + 20_000, intervalMs: 20 });
  phase = 'recovery';
  await s3.rgw.startGateway();
  t.comment(`radosgw back after ${Math.round(performance.now() - outageAt)} ms`);
  phase = 'after';
  const ackedBefore = acked.length;
  await waitFor('pushes acknowledged after the store came back', () => acked.length >= ackedBefore + 4 && skopeoPushes.some((s) => s.phase === 'after'), { timeoutMs: 120_000, intervalMs: 50 });
  stop = true;
  await traffic;

  const outage = inPhase('outage');
  t.comment(`${log.length} requests (${outage.length} during the outage), ${acked.length} blobs and ${ackedManifests.length} manifests acknowledged, ${skopeoPushes.length} skopeo pushes`);
  t.same(log.filter((o) => o.error?.startsWith('TimeoutError') || o.error?.startsWith('AbortError')).map(describe), [], 'no request hung');
  t.same(log.filter((o) => o.ms > (o.what.startsWith('manifest') ? MANIFEST_BOUND_MS : BOUND_MS)).map(describe), [],
    `every request ended within ${BOUND_MS} ms (manifest PUTs ${MANIFEST_BOUND_MS} ms)`);
  t.same(log.filter((o) => o.code === 'TOOMANYREQUESTS').map(describe), [], 'no answer blamed rate limiting');
  // Also while radosgw starts again ('recovery'): a push whose part failed while its body's tail
  // arrived was once refused 400 BLOB_UPLOAD_INVALID ("upload interrupted", docs/faults.md).
  const refused = log.filter((o) => o.status >= 400 && o.status !== 404);
  t.same(refused.filter((o) => o.status !== 503 || o.code !== 'UNAVAILABLE' || !(Number(o.retryAfter) > 0)).map(describe), [],
    'every refusal is 503 UNAVAILABLE with Retry-After');
  t.ok(outage.some((o) => o.what.startsWith('GET') && o.status === 503), 'a blob GET during the outage got 503 UNAVAILABLE');
  t.ok(outage.some((o) => /multipart (PATCH|PUT|push)/.test(o.what) && o.status === 503), 'a multipart push during the outage got 503 UNAVAILABLE');
  t.same(refused.filter((o) => /PATCH|PUT|push/.test(o.what) && !o.what.startsWith('manifest') && !/discarded/.test(o.message ?? '')).map(describe), [], 'each refused push says its session was discarded');
  // A response that began before the kill and was still streaming at it was cut by the outage too.
  t.same(log.filter((o) => o.status >= 200 && o.status < 300 && o.error && o.phase !== 'outage' && !(o.at < outageAt && o.at + o.ms >= outageAt)).map(describe), [], 'bodies are cut only while the store is away');
  t.same(skopeoPushes.filter((s) => s.ms > 60_000).map((s) => `${s.phase}: ${Math.round(s.ms)} ms`), [], 'every skopeo push ended within 60 s');
  t.ok(skopeoPushes.some((s) => s.ok && s.phase === 'after'), 'skopeo pushes again once the store is back');

  // Everything acknowledged reads back byte-identical.
  const bad: string[] = [];
  for (const a of acked) {
    const o = await timed('verify', 'end', 'GET', `${reg}/v2/${a.repo}/blobs/${a.digest}`, { headers: auth, hangMs: HANG_MS });
    if (o.status !== 200 || !o.bytes.equals(a.bytes)) bad.push(`blob ${a.digest.slice(7, 19)}: ${describe(o)}`);
  }
  for (const m of ackedManifests) {
    const o = await timed('verify', 'end', 'GET', `${reg}/v2/${m.repo}/manifests/${m.tag}`, { headers: { ...auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' }, hangMs: HANG_MS });
    if (o.status !== 200 || !o.bytes.equals(m.manifest)) bad.push(`manifest ${m.repo}:${m.tag}: ${describe(o)}`);
    for (const b of m.blobs) {
      const g = await timed('verify', 'end', 'GET', `${reg}/v2/${m.repo}/blobs/${sha256(b)}`, { headers: auth, hangMs: HANG_MS });
      if (g.status !== 200 || !g.bytes.equals(b)) bad.push(`blob of ${m.repo}:${m.tag}: ${describe(g)}`);
    }
  }
  t.same(bad, [], `all ${acked.length} acknowledged blobs and ${ackedManifests.length} manifests read back byte-identical`);

  await waitFor('no request in flight', async () => sampleSum(await scrape(server.urls.admin), 'slipway_http_requests_in_flight') === 0, { timeoutMs: 10_000, intervalMs: 50 });
  t.pass('slipway_http_requests_in_flight is 0');
  await waitFor('the live node\'s reaper to remove the multipart uploads the outage left', async () => (await s3.openMultipart(PREFIX)) === 0, { timeoutMs: 15_000, intervalMs: 100 });
  t.pass('no multipart upload left in the bucket, without a restart');

  // A commit whose object reached the store while its answer was lost to the kill (the SDK's
  // retry then met a refused connection) was refused with 503, and left an object without a
  // record: an orphan file of a push that was never acknowledged, which GC's orphan phase (and
  // fsck --repair) removes after the grace period. Anything else is a problem.
  type Problem = { kind: string; subject: string; repaired: boolean };
  const fsck = await runCli(['fsck', '--full', '--json', '--data', server.dataDir], s3.env(PREFIX));
  const report = JSON.parse(fsck.stdout.trim().split('\n').pop() || '{}') as { problems: Problem[]; checked: unknown };
  const ackedDigests = new Set([...acked.map((a) => a.digest), ...ackedManifests.flatMap((m) => m.blobs.map((b) => sha256(b)))]);
  const lostAnswers = report.problems.filter((p) => p.kind === 'orphan-file' && refusedDigests.has(p.subject) && !ackedDigests.has(p.subject));
  t.same(report.problems.filter((p) => !lostAnswers.includes(p)), [], `fsck --full finds no problem but orphan files of refused pushes (${JSON.stringify(report.checked)})`);
  if (lostAnswers.length > 0) {
    t.comment(`${lostAnswers.length} orphan file(s) of refused pushes whose commit reached the store: ${lostAnswers.map((p) => p.subject.slice(7, 19)).join(', ')}`);
    const repair = await runCli(['fsck', '--full', '--repair', '--json', '--data', server.dataDir], { ...s3.env(PREFIX), SLIPWAY_GC_GRACE: '0' });
    const repaired = JSON.parse(repair.stdout.trim().split('\n').pop() || '{}') as { problems: Problem[] };
    t.same(repaired.problems.filter((p) => !p.repaired), [], 'fsck --repair (grace 0) removed them');
  }

  const t0 = performance.now();
  const drained = await server.server.drain();
  const drainMs = performance.now() - t0;
  t.notOk(drained.cut, 'the drain cut nothing');
  t.ok(drainMs < 10_000, `the drain finished promptly (${Math.round(drainMs)} ms)`);
});
