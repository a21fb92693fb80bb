/**
 * Upload resource limits through the real HTTP interface (against memory amplification by slow
 * uploads): open sessions per account (429, another account unaffected), the minimum receive
 * rate (a trickling body is cut off with 408, the bytes received are kept and the upload
 * resumes from its Range), and the global buffer memory cap (503 with Retry-After while it is
 * spent, uploads in flight still complete intact).
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { basic, createApp, errCode, http } from '../helpers/http.js';
import { createAccount } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { startUpload, withDigest, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';
import { openRequest } from '../helpers/uploads.js';

const ts = await startInProcess({ env: { SLIPWAY_UPLOAD_SESSIONS: '3', SLIPWAY_UPLOAD_MIN_RATE: '8', SLIPWAY_UPLOAD_RATE_WINDOW: '0.3', SLIPWAY_UPLOAD_MEMORY: '1' } });
t.teardown(() => ts.stop());
const urls = ts.server.urls;
const owner: Target = { registry: urls.registry, auth: basic('_', ts.operator.apiKey) };
await createApp(urls.api, ts.operator.apiKey, 'limits');
const octet = { 'content-type': 'application/octet-stream' };

t.test('open sessions per account are limited; completing or cancelling frees a place', async (t) => {
  const locs = [await startUpload(owner, 'limits/web'), await startUpload(owner, 'limits/web'), await startUpload(owner, 'limits/web')];
  const refused = await http('POST', `${urls.registry}/v2/limits/web/blobs/uploads/`, { headers: owner.auth });
  t.equal(refused.status, 429, refused.text);
  t.equal(errCode(refused), 'TOOMANYREQUESTS');
  t.match(refused.json.errors[0].message, /3 upload sessions in progress/);
  const mono = await http('POST', `${urls.registry}/v2/limits/web/blobs/uploads/?digest=${sha256('x')}`, { headers: { ...owner.auth, ...octet }, body: 'x' });
  t.equal(mono.status, 429, 'a monolithic upload opens a session too');
  // Another account is not affected by this one's sessions.
  const b = await createAccount(ts, 'limits-b@example.com');
  await createApp(urls.api, b.apiKey, 'limitsb');
  const other = await http('POST', `${urls.registry}/v2/limitsb/web/blobs/uploads/?digest=${sha256('y')}`, { headers: { ...basic('_', b.apiKey), ...octet }, body: 'y' });
  t.equal(other.status, 201, 'account B pushes meanwhile');
  t.equal((await http('DELETE', locs[0]!, {})).status, 204);
  const d = Buffer.from('done');
  t.equal((await http('PUT', withDigest(locs[1]!, sha256(d)), { headers: octet, body: d })).status, 201);
  const again = await http('POST', `${urls.registry}/v2/limits/web/blobs/uploads/?digest=${sha256('x')}`, { headers: { ...owner.auth, ...octet }, body: 'x' });
  t.equal(again.status, 201, 'places freed by DELETE and PUT');
  t.equal((await http('DELETE', locs[2]!, {})).status, 204);
});

t.test('a trickling body is cut off at the minimum rate; what was received is kept and the upload resumes', async (t) => {
  const data = randomBytes(5000);
  const loc = await startUpload(owner, 'limits/web');
  const req = openRequest('PATCH', loc, { ...octet, 'content-length': '100000000' });
  await req.send(data.subarray(0, 3));
  let sent = 3;
  let answered = false;
  void req.response.then(() => { answered = true; });
  while (!answered && sent < 200) {
    await new Promise((r) => setTimeout(r, 40)); // the trickle: 25 bytes/s, below 8 KiB/s
    await req.send(data.subarray(sent, sent + 1));
    sent++;
  }
  const r = await req.response;
  t.equal(r.status, 408, r.text);
  t.match(r.text, /BLOB_UPLOAD_INVALID/);
  const range = /^0-(\d+)$/.exec(String(r.headers.range));
  t.ok(range, `Range header ${r.headers.range}`);
  const kept = Number(range![1]) + 1;
  t.ok(kept >= 3 && kept <= sent, `kept ${kept} of ${sent} bytes sent`);
  const status = await http('GET', loc, {});
  t.equal(status.status, 204, 'the session is still open');
  t.equal(status.headers.range, `0-${kept - 1}`);
  const rest = data.subarray(kept);
  const resume = await http('PATCH', loc, { headers: { ...octet, 'content-range': `${kept}-${data.length - 1}`, 'content-length': String(rest.length) }, body: rest });
  t.equal(resume.status, 202, resume.text);
  const put = await http('PUT', withDigest(loc, sha256(data)), {});
  t.equal(put.status, 201, put.text);
  const back = await http('GET', `${urls.registry}/v2/limits/web/blobs/${sha256(data)}`, { headers: owner.auth });
  t.ok(back.bytes.equals(data), 'the blob is the whole body');
});

t.test('the buffer memory cap: new appends get 503 with Retry-After; bodies in flight complete', async (t) => {
  const b = await createAccount(ts, 'limits-mem@example.com');
  await createApp(urls.api, b.apiKey, 'limitsmem');
  const accounts = await Promise.all([0, 1, 2, 3, 4, 5].map(async (i) => {
    const a = i === 0 ? b : await createAccount(ts, `limits-mem-${i}@example.com`);
    await createApp(urls.api, a.apiKey, `limitsmem${i}`);
    return { target: { registry: urls.registry, auth: basic('_', a.apiKey) } as Target, repo: `limitsmem${i}/web` };
  }));
  const held: Array<{ loc: string; data: Buffer; req: ReturnType<typeof openRequest> }> = [];
  let refused: Awaited<ReturnType<typeof http>> | undefined;
  for (let i = 0; i < 18 && !refused; i++) {
    const { target, repo } = accounts[Math.floor(i / 3)]!;
    const data = randomBytes(300_000);
    const loc = await startUpload(target, repo);
    const req = openRequest('PATCH', loc, { ...octet, 'content-length': String(data.length) });
    await req.send(data.subarray(0, 100_000));
    held.push({ loc, data, req });
    // A probe: a one-byte PATCH on a fresh session of the owner account.
    const probe = await startUpload(owner, 'limits/web');
    const p = await http('PATCH', probe, { headers: octet, body: Buffer.from('p') });
    await http('DELETE', probe, {});
    if (p.status === 503) refused = p;
    else t.equal(p.status, 202, 'accepted while memory is left');
  }
  t.ok(refused, 'refused once the cap is reached');
  t.equal(refused?.headers['retry-after'], '2');
  t.equal(errCode(refused!), 'TOOMANYREQUESTS');
  for (const h of held) h.req.end(h.data.subarray(100_000));
  for (const h of held) {
    t.equal((await h.req.response).status, 202, 'a held body completes');
    t.equal((await http('PUT', withDigest(h.loc, sha256(h.data)), {})).status, 201);
  }
  const probe = await startUpload(owner, 'limits/web');
  t.equal((await http('PATCH', probe, { headers: octet, body: Buffer.from('p') })).status, 202, 'accepted again once memory was given back');
  await http('DELETE', probe, {});
});
