/**
 * Fault injection: the object store goes silent. A real Ceph RADOS Gateway sits behind a TCP
 * proxy started by this test (test/helpers/tcp-proxy.ts, the fault injector); switched to
 * "swallow", the proxy accepts connections and reads what Slipway sends but never answers, as a
 * stopped or black-holed store does. Through the real interfaces (raw HTTP):
 * - a PATCH whose multipart part the silence fails while the body's last bytes still arrive is
 *   answered 503 UNAVAILABLE saying its session was discarded (it was answered 400
 *   BLOB_UPLOAD_INVALID "upload interrupted" before, a refusal that blames the client);
 * - every request that needs the store (monolithic and chunked pushes of single-PutObject and
 *   multipart sizes, blob GETs) ends within the documented bound (docs/faults.md) with 503
 *   `UNAVAILABLE` and Retry-After (never TOOMANYREQUESTS, never a 400), and `/readyz` names the
 *   blob store;
 * - once the proxy passes traffic again the node serves pushes and pulls without a restart,
 *   every blob acknowledged before reads back byte-identical, and no request is left in flight.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { startS3Store } from '../helpers/s3-store.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp } from '../helpers/http.js';
import { sha256 } from '../helpers/image.js';
import { openRequest } from '../helpers/uploads.js';
import { scrape, sampleSum } from '../helpers/metrics.js';
import { describe, timed, type Outcome } from './traffic.js';

const skip = cephSkip();
const MiB = 1024 * 1024;
const PREFIX = 'silent/';
/** SLIPWAY_S3_TIMEOUT of the server (seconds). */
const TIMEOUT_S = 2;
/** SLIPWAY_S3_PART_SIZE (MiB) as the store helper sets it. */
const PART_MIB = 5;
/**
 * The documented bound of a request that waits on a silent store: two attempts of one store
 * request, each at most T + one part at 1 MiB/s (docs/faults.md), plus a margin for the loaded
 * 2-core machine.
 */
const BOUND_MS = 2 * (TIMEOUT_S + PART_MIB) * 1000 + 4000;
/** After this long a request counts as hung. */
const HANG_MS = 60_000;

t.test('a silent object store (accepts connections, never answers)', { skip, timeout: 240_000 }, async (t) => {
  const s3 = await startS3Store();
  t.teardown(() => s3.stop());
  const proxy = await startTcpProxy(s3.rgw.endpoint);
  t.teardown(() => proxy.close());
  const server = await startInProcess({ env: s3.env(PREFIX, { SLIPWAY_S3_ENDPOINT: proxy.endpoint, SLIPWAY_S3_TIMEOUT: String(TIMEOUT_S) }) });
  t.teardown(() => server.stop());
  const key = server.operator.apiKey;
  const auth = basic('_', key);
  const reg = server.urls.registry;
  t.equal((await createApp(server.api, key, 'silent')).status, 201);
  const octet = { ...auth, 'content-type': 'application/octet-stream' };
  const readyz = async () => {
    const res = await request(`${server.urls.admin}/readyz`);
    return { status: res.statusCode, body: await res.body.text() };
  };
  const errorOf = (text: string) => { try { return JSON.parse(text).errors?.[0] ?? {}; } catch { return {}; } };

  // Acknowledged before the fault: one single-PutObject blob, one multipart blob.
  const acked = [randomBytes(300_000), randomBytes(7 * MiB)];
  for (const b of acked) {
    const o = await timed('push', 'before', 'POST', `${reg}/v2/silent/web/blobs/uploads/?digest=${sha256(b)}`, { headers: octet, body: b, hangMs: HANG_MS });
    t.equal(o.status, 201, `acknowledged ${b.length} bytes before the fault`);
  }

  await t.test('a part that the silence fails while the body\'s tail arrives: 503, not 400', async (t) => {
    const bytes = randomBytes(6 * MiB + 1000);
    const post = await timed('POST', 'before', 'POST', `${reg}/v2/silent/web/blobs/uploads/`, { headers: auth, hangMs: HANG_MS });
    t.equal(post.status, 202);
    const patch = openRequest('PATCH', post.headers.location!, { ...octet, 'content-length': String(bytes.length) });
    proxy.setMode('swallow');
    // The session's own multipart requests (CreateMultipartUpload `?uploads`, UploadPart
    // `partNumber=`): other requests the node sends meanwhile go into the silence too, and
    // counting them would send the tail before the session's request has given up.
    const sessionDrops = () => proxy.droppedRequests().filter((l) => /[?&]uploads\b|[?&]partNumber=/.test(l)).length;
    const dropped = sessionDrops();
    // Past one part: the session becomes a multipart upload whose first requests go into the silence.
    await patch.send(bytes.subarray(0, 6 * MiB));
    await waitFor('both attempts of the session\'s first store request to give up', () => sessionDrops() >= dropped + 2, { timeoutMs: BOUND_MS + 10_000, intervalMs: 20 });
    const t0 = performance.now();
    patch.end(bytes.subarray(6 * MiB));
    const res = await patch.response;
    t.equal(res.status, 503, `the PATCH: 503 (${res.text.slice(0, 300)})`);
    t.equal(errorOf(res.text).code, 'UNAVAILABLE', 'distribution code UNAVAILABLE');
    t.ok(Number(res.headers['retry-after']) > 0, 'Retry-After');
    t.match(errorOf(res.text).message, /blob store \(S3\) is unavailable.*session was discarded/, 'the message names the store and says the session was discarded');
    t.ok(performance.now() - t0 < BOUND_MS, `answered ${Math.round(performance.now() - t0)} ms after its body ended`);
    t.equal((await timed('status', 'outage', 'GET', post.headers.location!, { headers: auth, hangMs: HANG_MS })).status, 404, 'the discarded session is unknown');
  });

  await t.test('every request that needs the store ends within the bound with 503 UNAVAILABLE', async (t) => {
    proxy.setMode('swallow');
    const small = randomBytes(200_000);
    const large = randomBytes(7 * MiB);
    const chunked = async (what: string, bytes: Buffer): Promise<Outcome> => {
      const post = await timed('POST', 'silent', 'POST', `${reg}/v2/silent/web/blobs/uploads/`, { headers: auth, hangMs: HANG_MS });
      if (post.status !== 202) return post;
      const p = await timed(`${what} PATCH`, 'silent', 'PATCH', post.headers.location!, { headers: octet, body: bytes, hangMs: HANG_MS });
      if (p.status !== 202) return p;
      return timed(`${what} PUT`, 'silent', 'PUT', `${p.headers.location}&digest=${sha256(bytes)}`, { headers: auth, hangMs: HANG_MS });
    };
    const t0 = performance.now();
    const [outcomes, ready] = await Promise.all([
      Promise.all([
        timed('monolithic single push', 'silent', 'POST', `${reg}/v2/silent/web/blobs/uploads/?digest=${sha256(small)}`, { headers: octet, body: small, hangMs: HANG_MS }),
        timed('monolithic multipart push', 'silent', 'POST', `${reg}/v2/silent/web/blobs/uploads/?digest=${sha256(large)}`, { headers: octet, body: large, hangMs: HANG_MS }),
        chunked('chunked single', randomBytes(150_000)),
        chunked('chunked multipart', randomBytes(8 * MiB)),
        ...acked.map((b) => timed(`GET ${b.length} bytes`, 'silent', 'GET', `${reg}/v2/silent/web/blobs/${sha256(b)}`, { headers: auth, hangMs: HANG_MS })),
      ]),
      waitFor('/readyz to report the blob store', async () => {
        const r = await readyz();
        return r.status === 503 && /blobStore/.test(r.body) ? r : undefined;
      }, { timeoutMs: BOUND_MS, intervalMs: 200 }),
    ]);
    t.comment(`answers: ${outcomes.map(describe).join('; ')}`);
    t.comment(`/readyz while silent: ${ready.body.slice(0, 300)} (${Math.round(performance.now() - t0)} ms after the silence began)`);
    t.same(outcomes.filter((o) => o.ms > BOUND_MS || o.error !== undefined).map(describe), [], `every request ended within ${BOUND_MS} ms`);
    t.same(outcomes.filter((o) => o.status !== 503 || o.code !== 'UNAVAILABLE' || !(Number(o.retryAfter) > 0)).map(describe), [], 'every one answered 503 UNAVAILABLE with Retry-After');
    t.same(outcomes.filter((o) => !o.what.startsWith('GET') && !/session was discarded|nothing of|not stored|discarded/.test(o.message ?? '')).map(describe), [], 'each refused push says what became of its session');
    const head = await timed('HEAD', 'silent', 'HEAD', `${reg}/v2/silent/web/blobs/${sha256(acked[0]!)}`, { headers: auth, hangMs: HANG_MS });
    t.ok(head.ms < BOUND_MS && (head.status === 200 || (head.status === 503 && Number(head.retryAfter) > 0)), `a blob HEAD answers from the record or 503, within the bound (${describe(head)})`);
  });

  await t.test('the node recovers when the store answers again', async (t) => {
    proxy.setMode('pass');
    const t0 = performance.now();
    await waitFor('/readyz to be ready again', async () => (await readyz()).status === 200, { timeoutMs: 30_000, intervalMs: 100 });
    t.comment(`ready again ${Math.round(performance.now() - t0)} ms after the proxy passed traffic`);
    const after = [randomBytes(250_000), randomBytes(6 * MiB)];
    for (const b of after) {
      const o = await timed('push', 'after', 'POST', `${reg}/v2/silent/web/blobs/uploads/?digest=${sha256(b)}`, { headers: octet, body: b, hangMs: HANG_MS });
      t.equal(o.status, 201, `a push of ${b.length} bytes is acknowledged (${describe(o)})`);
    }
    for (const b of [...acked, ...after]) {
      const o = await timed('verify', 'after', 'GET', `${reg}/v2/silent/web/blobs/${sha256(b)}`, { headers: auth, hangMs: HANG_MS });
      t.ok(o.status === 200 && o.bytes.equals(b), `blob of ${b.length} bytes reads back byte-identical (${describe(o)})`);
    }
    await waitFor('no request in flight', async () => sampleSum(await scrape(server.urls.admin), 'slipway_http_requests_in_flight') === 0, { timeoutMs: 10_000, intervalMs: 50 });
    t.pass('slipway_http_requests_in_flight is 0');
  });
});
