/**
 * Fault injection: orphaned multipart uploads (issue 22, finding 4), on a real PostgreSQL and a
 * real Ceph RGW bucket shared by two spawned nodes.
 * - A live node's reaper (SLIPWAY_UPLOAD_REAP_INTERVAL) aborts its own abandoned multipart
 *   uploads (what a cleanup that failed while the store was away leaves, placed here under
 *   each node's keys) without a restart, and leaves alone: the other node's, a third (dead)
 *   node's, and every session still open, on either node, mid-body (both complete afterwards,
 *   byte-identical).
 * - A node killed with SIGKILL mid-multipart-push leaves a multipart upload that belongs to no
 *   session: `slipway fsck` reports it (`orphan-upload`, as it reports a dead node's), and
 *   `fsck --repair` (with a GC grace of 0) aborts them; the other node, killed mid-push too, removes its own at its
 *   restart.
 * Random sizes from a printed seed; waits are conditions with deadlines.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { CreateMultipartUploadCommand, ListMultipartUploadsCommand, UploadPartCommand } from '@aws-sdk/client-s3';
import { startCluster } from '../helpers/cluster.js';
import { startSpawned, waitFor } from '../helpers/harness.js';
import { postgresSkip } from '../helpers/postgres.js';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { basic, createApp, http } from '../helpers/http.js';
import { startUpload, withDigest, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';
import { runCli } from '../helpers/server.js';
import { openRequest, type OpenRequest } from '../helpers/uploads.js';
import { rng, testSeed } from './traffic.js';

const skip = postgresSkip() || cephSkip();
const MiB = 1024 * 1024;
const PREFIX = 'orphans/';

t.test('orphaned multipart uploads: the live reaper, fsck, a restart', { skip, timeout: 240_000 }, async (t) => {
  const seed = testSeed();
  t.comment(`seed ${seed} (SLIPWAY_TEST_SEED=${seed} replays the sizes)`);
  const r = rng(seed);
  // A GC grace of 0 on every node: fsck --repair honours the longest grace the nodes announce
  // (engine/registry/gc-grace.ts), and removes orphan session bytes younger than it only then.
  const reap = { SLIPWAY_UPLOAD_REAP_INTERVAL: '0.5', SLIPWAY_GC_GRACE: '0' };
  const c = await startCluster(t, { prefix: PREFIX, envA: reap, envB: reap });
  const { s3 } = c;
  t.equal((await createApp(c.a.urls.api, c.operatorKey, 'orph')).status, 201);
  const auth = basic('_', c.operatorKey);
  const onA: Target = { registry: c.a.urls.registry, auth };
  const onB: Target = { registry: c.b.urls.registry, auth };
  /** Open multipart uploads under `uploads/<node>/`, by session id. */
  const uploadsOf = async (node: string) => {
    const l = await s3.client.send(new ListMultipartUploadsCommand({ Bucket: s3.bucket, Prefix: `${PREFIX}uploads/${node}/` }));
    return (l.Uploads ?? []).map((u) => u.Key!.split('/').at(-2)!);
  };
  /**
   * A multipart upload with one part under `node`'s keys that no session owns (what a failed
   * abort leaves). A live node's reaper may abort it between its creation and its part (every
   * 0.5 s, no grace): the part's NoSuchUpload is then the reaping the caller waits for.
   */
  const abandoned = async (node: string) => {
    const id = randomBytes(16).toString('hex');
    const Key = `${PREFIX}uploads/${node}/${id}/data`;
    const { UploadId } = await s3.client.send(new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key }));
    try {
      await s3.client.send(new UploadPartCommand({ Bucket: s3.bucket, Key, UploadId, PartNumber: 1, Body: randomBytes(1000) }));
    } catch (e) {
      if ((e as Error).name !== 'NoSuchUpload' || node === 'node-z') throw e;
    }
    return id;
  };
  /** A PATCH on `target` that has sent `sent` bytes of `bytes` and holds the rest; its session's parts are in the bucket. */
  const midBody = async (target: Target, node: string, bytes: Buffer, sent: number) => {
    const before = new Set(await uploadsOf(node));
    const location = await startUpload(target, 'orph/web');
    const req = openRequest('PATCH', location, { ...auth, 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) });
    for (let at = 0; at < sent; at += MiB) await req.send(bytes.subarray(at, Math.min(sent, at + MiB)));
    const id = await waitFor(`a multipart upload of ${node}'s new session`, async () => (await uploadsOf(node)).find((u) => !before.has(u)), { timeoutMs: 30_000, intervalMs: 20 });
    return { location, req, id };
  };
  const finish = async (held: { location: string; req: OpenRequest }, bytes: Buffer, sent: number) => {
    held.req.end(bytes.subarray(sent));
    const res = await held.req.response;
    if (res.status !== 202) return `PATCH ${res.status} ${res.text.slice(0, 200)}`;
    const put = await http('PUT', withDigest(String(res.headers.location ?? held.location), sha256(bytes)), { headers: auth });
    return put.status === 201 ? '201' : `PUT ${put.status} ${put.text.slice(0, 200)}`;
  };

  await t.test('a live node reaps its own abandoned uploads, nobody else\'s, no open session', async (t) => {
    const sizes = [r.int(11, 15) * MiB + r.int(0, 4096), r.int(11, 15) * MiB + r.int(0, 4096)];
    const [bytesA, bytesB] = sizes.map((n) => randomBytes(n));
    const sent = 11 * MiB;
    const heldA = await midBody(onA, 'node-a', bytesA!, sent);
    const heldB = await midBody(onB, 'node-b', bytesB!, sent);
    const deadNode = await abandoned('node-z');
    const [lostA, lostB] = [await abandoned('node-a'), await abandoned('node-b')];
    await waitFor('each node\'s reaper to abort its own abandoned upload', async () => {
      const [a, b] = [await uploadsOf('node-a'), await uploadsOf('node-b')];
      return !a.includes(lostA) && !b.includes(lostB);
    }, { timeoutMs: 20_000, intervalMs: 100 });
    t.pass('node-a and node-b each aborted their abandoned multipart upload, without a restart');
    t.ok((await uploadsOf('node-a')).includes(heldA.id), 'node-a\'s open session (mid-body) kept its multipart upload');
    t.ok((await uploadsOf('node-b')).includes(heldB.id), 'node-b\'s open session (mid-body) kept its multipart upload');
    t.same(await uploadsOf('node-z'), [deadNode], 'a third node\'s upload is not theirs to reap');
    t.equal(await finish(heldA, bytesA!, sent), '201', 'node-a\'s held session completes');
    t.equal(await finish(heldB, bytesB!, sent), '201', 'node-b\'s held session completes');
    for (const [target, bytes] of [[onA, bytesA!], [onB, bytesB!]] as const) {
      const g = await http('GET', `${target.registry}/v2/orph/web/blobs/${sha256(bytes)}`, { headers: auth });
      t.ok(g.status === 200 && g.bytes.equals(bytes), 'reads back byte-identical');
    }
  });

  await t.test('a node killed mid-multipart-push: fsck reports and repairs; a restart reaps', async (t) => {
    const fsck = async (...flags: string[]) => {
      // A GC grace of 0: --repair removes orphan session bytes whatever their age.
      const res = await runCli(['fsck', '--json', ...flags, '--data', c.a.dataDir], { ...c.env, SLIPWAY_GC_GRACE: '0' });
      try { return JSON.parse(res.stdout.trim().split('\n').pop() ?? '') as { problems: Array<{ kind: string; subject: string; repaired: boolean }> }; } catch { throw new Error(`fsck: exit ${res.code}\n${res.stdout}\n${res.stderr}`); }
    };
    const bytes = randomBytes(r.int(14, 18) * MiB);
    const held = await midBody(onA, 'node-a', bytes, 11 * MiB);
    await c.a.kill();
    held.req.abort();
    const orphans = (rep: Awaited<ReturnType<typeof fsck>>) => rep.problems.filter((p) => p.kind === 'orphan-upload').map((p) => p.subject).sort();
    const expected = [held.id, ...await uploadsOf('node-z')].sort();
    const report = await fsck();
    t.same(orphans(report), expected, 'fsck reports the killed node\'s and the dead node\'s multipart uploads as orphan-upload');
    const repaired = await fsck('--repair');
    t.same(repaired.problems.filter((p) => p.kind === 'orphan-upload' && !p.repaired), [], 'fsck --repair repaired them');
    t.same([...await uploadsOf('node-a'), ...await uploadsOf('node-z')], [], 'their multipart uploads are aborted');

    // Node B killed mid-push too, then started again on its data directory (same node name).
    const killedB = await midBody(onB, 'node-b', bytes, 11 * MiB);
    await c.b.kill();
    killedB.req.abort();
    t.ok((await uploadsOf('node-b')).includes(killedB.id), 'the kill of node-b left a multipart upload');
    const restarted = await startSpawned({ dataDir: c.b.dataDir, env: { ...c.env, SLIPWAY_NODE_NAME: 'node-b', ...reap }, startTimeoutMs: 120_000 });
    t.teardown(() => restarted.stop());
    t.same(await uploadsOf('node-b'), [], 'the restarted node aborted it before serving');
    const put = await http('POST', `${restarted.urls.registry}/v2/orph/web/blobs/uploads/?digest=${sha256(bytes)}`, { headers: auth, body: bytes });
    t.equal(put.status, 201, 'the restarted node takes the push');
  });
});
