/**
 * Body lanes through the real HTTP interface (engine/blobs/body-lanes.ts, upload.lanes): with
 * one lane, a body whose client stalls in it delays another account's push by at most the
 * longest wait; many bodies at once with random pacing all complete intact; the operator sees
 * the lanes in /metrics, and every lane is given back.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { basic, createApp, http } from '../helpers/http.js';
import { createAccount } from '../helpers/oauth.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { startUpload, withDigest, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';
import { openRequest } from '../helpers/uploads.js';
import { sampleSum, scrape } from '../helpers/metrics.js';

// One lane; no minimum receive rate (a stalled body is what this test holds open).
const ts = await startInProcess({ env: { SLIPWAY_UPLOAD_LANES: '1', SLIPWAY_UPLOAD_MIN_RATE: '0' } });
t.teardown(() => ts.stop());
const urls = ts.server.urls;
const owner: Target = { registry: urls.registry, auth: basic('_', ts.operator.apiKey) };
await createApp(urls.api, ts.operator.apiKey, 'lanes');
const other = await createAccount(ts, 'lanes-b@example.com');
await createApp(urls.api, other.apiKey, 'lanesb');
const otherTarget: Target = { registry: urls.registry, auth: basic('_', other.apiKey) };
const octet = { 'content-type': 'application/octet-stream' };
const MiB = 1024 * 1024;

const gauge = async (name: string) => sampleSum(await scrape(urls.admin), name);

t.test('a body stalled in the only lane delays another account by at most the longest wait', async (t) => {
  const stalled = randomBytes(4 * MiB);
  const loc = await startUpload(owner, 'lanes/web');
  const req = openRequest('PATCH', loc, { ...octet, 'content-length': String(stalled.length) });
  await req.send(stalled.subarray(0, MiB)); // past the bulk size: it takes the lane, then stops
  await waitFor('the stalled body to hold the lane', async () => (await gauge('slipway_upload_bodies_in_lanes')) === 1, { timeoutMs: 10_000, intervalMs: 20 });

  const fast = randomBytes(8 * MiB);
  const started = performance.now();
  const push = http('POST', `${urls.registry}/v2/lanesb/web/blobs/uploads/?digest=${sha256(fast)}`, { headers: { ...otherTarget.auth, ...octet }, body: fast });
  const r = await push;
  const ms = performance.now() - started;
  t.equal(r.status, 201, r.text);
  t.ok(ms < 5000, `the other account's 8 MiB push took ${ms.toFixed(0)} ms (the longest wait is 500 ms)`);
  // Which limit ends the wait depends on when the push came: within the longest wait (500 ms)
  // of the stalled body taking the lane, the push reads on without a lane; later than that, the
  // stalled body's longest hold (1,000 ms) ends first and the push is given the lane.
  const ended = [await gauge('slipway_upload_lane_waits_expired_total'), await gauge('slipway_upload_lane_holds_expired_total')];
  t.equal(ended[0]! + ended[1]!, 1, `one limit ended the wait (waits expired, holds expired: ${ended.join(', ')})`);
  const back = await http('GET', `${urls.registry}/v2/lanesb/web/blobs/${sha256(fast)}`, { headers: otherTarget.auth });
  t.ok(back.bytes.equals(fast), 'its blob is intact');

  req.end(stalled.subarray(MiB));
  const patched = await req.response;
  t.equal(patched.status, 202, patched.text);
  const put = await http('PUT', withDigest(loc, sha256(stalled)), {});
  t.equal(put.status, 201, put.text);
  const mine = await http('GET', `${urls.registry}/v2/lanes/web/blobs/${sha256(stalled)}`, { headers: owner.auth });
  t.ok(mine.bytes.equals(stalled), 'the stalled body, once sent, is intact too');
  t.same([await gauge('slipway_upload_bodies_in_lanes'), await gauge('slipway_upload_bodies_waiting')], [0, 0], 'every lane given back');
});

t.test('race: bodies of random sizes sent at random paces through one lane all complete intact', async (t) => {
  const pushes = Array.from({ length: 10 }, (_, i) => ({ i, bytes: randomBytes(64 * 1024 + Math.floor(Math.random() * 5 * MiB)) }));
  let sawWaiting = 0;
  let mostInLanes = 0;
  let done = false;
  const watching = (async () => {
    while (!done) {
      const text = await scrape(urls.admin);
      mostInLanes = Math.max(mostInLanes, sampleSum(text, 'slipway_upload_bodies_in_lanes'));
      sawWaiting = Math.max(sawWaiting, sampleSum(text, 'slipway_upload_bodies_waiting'));
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  const results = await Promise.all(pushes.map(async ({ i, bytes }) => {
    await new Promise((r) => setTimeout(r, Math.random() * 30));
    const target = i % 2 ? owner : otherTarget;
    const repo = i % 2 ? 'lanes/worker' : 'lanesb/worker';
    const req = openRequest('POST', `${urls.registry}/v2/${repo}/blobs/uploads/?digest=${sha256(bytes)}`, { ...target.auth, ...octet, 'content-length': String(bytes.length) });
    let sent = 0;
    while (sent < bytes.length) {
      const n = Math.min(bytes.length - sent, 1 + Math.floor(Math.random() * 2 * MiB));
      await req.send(bytes.subarray(sent, sent + n));
      sent += n;
      if (Math.random() < 0.3) await new Promise((r) => setTimeout(r, Math.random() * 40));
    }
    req.end();
    const r = await req.response;
    return { r, target, repo, bytes };
  }));
  done = true;
  await watching;
  for (const { r, target, repo, bytes } of results) {
    t.equal(r.status, 201, r.text);
    const back = await http('GET', `${urls.registry}/v2/${repo}/blobs/${sha256(bytes)}`, { headers: target.auth });
    t.ok(back.bytes.equals(bytes), `${repo}: ${bytes.length} bytes intact`);
  }
  t.ok(mostInLanes <= 1, `never more than one body in the lane (most seen ${mostInLanes})`);
  t.ok(sawWaiting >= 1, `bodies waited for the lane (most seen waiting at once: ${sawWaiting})`);
  t.same([await gauge('slipway_upload_bodies_in_lanes'), await gauge('slipway_upload_bodies_waiting')], [0, 0], 'every lane given back');
});
