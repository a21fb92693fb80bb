/**
 * The upload host's own HTTP/1.1 listener on the wire: chunked and Content-Length bodies in any
 * split, pipelining, Expect: 100-continue, early answers with keep-alive, request-smuggling shapes
 * refused, HTTP/1.0, and a body cut off mid-way discarding the session.
 */
import t from 'tap';
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp, http, type Reply } from '../helpers/http.js';
import { startUpload, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
await createApp(server.urls.api, server.apiKey!, 'wire');
const target: Target = { registry: server.urls.registry, auth: basic('_', server.apiKey!) };
const upload = new URL(server.urls.upload);

/** A raw connection to the upload host that collects everything it receives. */
class Raw {
  readonly socket: net.Socket;
  received = Buffer.alloc(0);
  closed = false;
  constructor() {
    this.socket = net.connect(Number(upload.port), upload.hostname);
    this.socket.on('data', (d) => { this.received = Buffer.concat([this.received, d]); });
    this.socket.on('close', () => { this.closed = true; });
    this.socket.on('error', () => {});
  }
  get text(): string {
    return this.received.toString('latin1');
  }
  statuses(): string[] {
    return [...this.text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]!);
  }
  async until(pred: () => boolean, ms = 5000): Promise<void> {
    await waitFor('the upload host', pred, { timeoutMs: ms, intervalMs: 10 }).catch((e: Error) => {
      throw new Error(`${e.message}; received: ${this.text.slice(0, 500)}`);
    });
  }
  async writeSlowly(bytes: Buffer, step: number): Promise<void> {
    for (let i = 0; i < bytes.length; i += step) {
      this.socket.write(bytes.subarray(i, i + step));
      if (i % (step * 8) === 0) await new Promise((r) => setTimeout(r, 1)); // deliberate: a slow writer (partial reads are the subject)
    }
  }
}

/** The session's status once it no longer answers 204 (still open), within 10 s. */
function sessionGone(path: string): Promise<Reply> {
  return waitFor('the session to be discarded', async () => {
    const r = await http('GET', `${upload.origin}${path}`, {});
    return r.status !== 204 && r;
  }, { timeoutMs: 10_000, intervalMs: 20 });
}

/** A fresh session's path (with `_state`) on the upload host. */
async function sessionPath(): Promise<string> {
  const loc = new URL(await startUpload(target, 'wire/web'));
  t.equal(loc.port, upload.port, 'sessions live on the upload host');
  return loc.pathname + loc.search;
}

const chunked = (body: Buffer, sizes: number[]): Buffer => {
  const parts: Buffer[] = [];
  let off = 0;
  for (const n of sizes) {
    parts.push(Buffer.from(n.toString(16) + '\r\n'), body.subarray(off, off + n), Buffer.from('\r\n'));
    off += n;
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
};

t.test('chunked PATCH written byte by byte, then PUT on the same connection', async (t) => {
  const body = randomBytes(5000);
  const path = await sessionPath();
  const raw = new Raw();
  await raw.writeSlowly(Buffer.concat([Buffer.from(`PATCH ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`), chunked(body, [1, 999, 4000])]), 7);
  await raw.until(() => raw.statuses().length === 1);
  t.same(raw.statuses(), ['202']);
  t.match(raw.text, /range: 0-4999/i);
  raw.socket.write(`PUT ${path}&digest=${sha256(body)} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
  await raw.until(() => raw.statuses().length === 2);
  t.same(raw.statuses(), ['202', '201'], 'blob created on the kept-alive connection');
  raw.socket.destroy();
  const got = await http('GET', `${target.registry}/v2/wire/web/blobs/${sha256(body)}`, { headers: target.auth });
  t.equal(got.status, 200);
  t.equal(sha256(got.bytes), sha256(body), 'stored bytes match');
});

t.test('pipelined requests are answered in order', async (t) => {
  const body = randomBytes(3000);
  const path = await sessionPath();
  const raw = new Raw();
  raw.socket.write(Buffer.concat([
    Buffer.from(`PATCH ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`), body,
    Buffer.from(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`),
    Buffer.from(`PUT ${path}&digest=${sha256(body)} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`),
  ]));
  await raw.until(() => raw.statuses().length === 3);
  t.same(raw.statuses(), ['202', '204', '201']);
  raw.socket.destroy();
});

t.test('Expect: 100-continue', async (t) => {
  const body = randomBytes(1000);
  const path = await sessionPath();
  const raw = new Raw();
  raw.socket.write(`PUT ${path}&digest=${sha256(body)} HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`);
  await raw.until(() => raw.text.includes('100 Continue'));
  raw.socket.write(body);
  await raw.until(() => raw.statuses().includes('201'));
  t.same(raw.statuses(), ['100', '201']);
  raw.socket.destroy();
});

t.test('an early answer keeps the connection usable', async (t) => {
  const path = await sessionPath();
  const forged = path.replace(/_state=[^&]+/, '_state=forged');
  const body = randomBytes(256 * 1024);
  const raw = new Raw();
  raw.socket.write(Buffer.concat([Buffer.from(`PATCH ${forged} HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`), body]));
  await raw.until(() => raw.statuses().length === 1);
  t.same(raw.statuses(), ['401'], 'refused without credentials');
  raw.socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
  await raw.until(() => raw.statuses().length === 2);
  t.same(raw.statuses(), ['401', '204'], 'next request on the same connection');
  t.notOk(raw.closed);
  raw.socket.destroy();
});

t.test('refusals close the connection and change nothing', async (t) => {
  const path = await sessionPath();
  const cases: Array<[string, string]> = [
    [`PATCH ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n`, '400'],
    [`PATCH ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello`, '400'],
    [`PATCH ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n`, '501'],
    [`PATCH ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, '431'],
    [`GET ${path} HTTP/1.1\r\nHost: x\r\n folded: y\r\n\r\n`, '400'],
  ];
  for (const [request, want] of cases) {
    const raw = new Raw();
    raw.socket.write(request);
    await raw.until(() => raw.closed);
    t.same(raw.statuses(), [want], JSON.stringify(request.slice(path.length + 6, path.length + 70)));
  }
  const status = await http('GET', `${upload.origin}${path}`, {});
  t.equal(status.status, 204);
  t.equal(status.headers.range, '0-0', 'no bytes reached the session');
});

t.test('a bad chunk mid-body discards the session', async (t) => {
  const path = await sessionPath();
  const raw = new Raw();
  raw.socket.write(`PATCH ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX`);
  await raw.until(() => raw.closed);
  t.same(raw.statuses(), ['400']);
  const status = await sessionGone(path);
  t.equal(status.status, 404, 'session gone: its bytes could not be trusted');
});

t.test('a client cut off mid-body discards the session', async (t) => {
  const path = await sessionPath();
  const raw = new Raw();
  raw.socket.write(Buffer.concat([Buffer.from(`PATCH ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n`), randomBytes(50_000)]));
  const file = join(tmp.dir, 'uploads', path.split('?')[0]!.split('/').pop()!);
  await waitFor('the PATCH to reach the session file', () => existsSync(file) && statSync(file).size > 0, { timeoutMs: 10_000, intervalMs: 10 });
  raw.socket.destroy();
  const status = await sessionGone(path);
  t.equal(status.status, 404);
});

t.test('HTTP/1.0 closes after the response', async (t) => {
  const path = await sessionPath();
  const raw = new Raw();
  raw.socket.write(`GET ${path} HTTP/1.0\r\n\r\n`);
  await raw.until(() => raw.closed);
  t.same(raw.statuses(), ['204']);
  t.match(raw.text, /connection: close/i);
});

t.test('a chunked upload past the background-sync interval commits intact', async (t) => {
  const chunk = randomBytes(16 * 1024 * 1024);
  const chunks = 5; // 80 MiB: the session syncs in the background after 64 MiB
  const whole = createHash('sha256');
  const path = await sessionPath();
  for (let i = 0; i < chunks; i++) {
    chunk[0] = i; // distinct chunks
    whole.update(chunk);
    const r = await http('PATCH', `${upload.origin}${path}`, {
      headers: { 'content-type': 'application/octet-stream', 'content-range': `${i * chunk.length}-${(i + 1) * chunk.length - 1}` }, body: chunk,
    });
    t.equal(r.status, 202, `chunk ${i}`);
  }
  const digest = 'sha256:' + whole.digest('hex');
  const put = await http('PUT', `${upload.origin}${path}&digest=${digest}`, {});
  t.equal(put.status, 201);
  const head = await http('HEAD', `${target.registry}/v2/wire/web/blobs/${digest}`, { headers: target.auth });
  t.equal(head.headers['content-length'], String(chunks * chunk.length));
});

t.test('the upload host over TLS (SLIPWAY_UPLOAD_TLS=on)', async (t) => {
  const dir = tempDir();
  const secure = await startInProcess({ dataDir: dir.dir, env: { SLIPWAY_UPLOAD_TLS: 'on' } });
  t.teardown(async () => { await secure.stop(); dir.cleanup(); });
  await createApp(secure.urls.api, secure.apiKey!, 'wire');
  const tgt: Target = { registry: secure.urls.registry, auth: basic('_', secure.apiKey!) };
  const loc = await startUpload(tgt, 'wire/web');
  t.match(loc, /^https:/, 'Location on the TLS upload host');
  const body = randomBytes(3 * 1024 * 1024 + 17);
  const patch = await http('PATCH', loc, { headers: { 'content-type': 'application/octet-stream' }, body });
  t.equal(patch.status, 202);
  const put = await http('PUT', `${loc}&digest=${sha256(body)}`, {});
  t.equal(put.status, 201);
  const got = await http('GET', `${tgt.registry}/v2/wire/web/blobs/${sha256(body)}`, { headers: tgt.auth });
  t.equal(sha256(got.bytes), sha256(body), 'stored bytes match');
});

t.test('interleaved chunked uploads on several connections keep their bytes apart', async (t) => {
  const bodies = [randomBytes(40_000), randomBytes(50_000), randomBytes(60_000)];
  const paths = await Promise.all(bodies.map(() => sessionPath()));
  const raws = bodies.map(() => new Raw());
  const wires = bodies.map((b, i) => Buffer.concat([Buffer.from(`PATCH ${paths[i]} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`), chunked(b, [b.length - 1000, 1000])]));
  // Small pieces, round robin: reads of every connection go through the shared scratch buffer.
  for (let off = 0; wires.some((w) => off < w.length); off += 997) {
    wires.forEach((w, i) => { if (off < w.length) raws[i]!.socket.write(w.subarray(off, off + 997)); });
    if (off % (997 * 8) === 0) await new Promise((r) => setTimeout(r, 1)); // deliberate: trickled pieces (the subject)
  }
  await Promise.all(raws.map((r) => r.until(() => r.statuses().length === 1)));
  for (let i = 0; i < bodies.length; i++) {
    raws[i]!.socket.write(`PUT ${paths[i]}&digest=${sha256(bodies[i]!)} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
    await raws[i]!.until(() => raws[i]!.statuses().length === 2);
    t.same(raws[i]!.statuses(), ['202', '201'], `upload ${i} verified against its digest`);
    raws[i]!.socket.destroy();
  }
});
