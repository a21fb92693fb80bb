/**
 * The S3 backend's GET client over plain http (engine/blobs/s3-get.ts) and the relay of a pull's
 * bytes. First against scripted stores on 127.0.0.1 (answers RGW does not give on demand: a body
 * cut short, no Content-Length, a chunked error text, an idle connection the store closed, a
 * store gone quiet), then through Slipway on a real Ceph RGW with both listeners: a gateway
 * killed mid-pull ends the client's response short and closed (never a complete-looking 200),
 * and pulls work again once it is back.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { RawGetClient } from '../../engine/blobs/s3-get.js';
import { recycleChunk } from '../../engine/blobs/chunk-pool.js';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { startS3Store } from '../helpers/s3-store.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { uwsUnavailable } from '../../server/http/uws.js';
import { basic, createApp, http } from '../helpers/http.js';
import { sha256 } from '../helpers/image.js';
import { pushBlob } from '../helpers/registry.js';

const MiB = 1024 * 1024;

/** A store answering each request (one per line `GET …`) with `answer(socket, n)`; counts connections. */
async function scripted(answer: (s: Socket, n: number) => void): Promise<{ url: (p: string) => URL; connections: () => number; closed: () => number; close: () => void }> {
  let conns = 0;
  let closed = 0;
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    conns++;
    sockets.add(s);
    s.on('close', () => { sockets.delete(s); closed++; });
    let seen = '';
    s.on('data', (d) => {
      seen += d.toString('latin1');
      while (seen.includes('\r\n\r\n')) {
        seen = seen.slice(seen.indexOf('\r\n\r\n') + 4);
        answer(s, requests++);
      }
    });
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: (p) => new URL(`http://127.0.0.1:${port}${p}`),
    connections: () => conns,
    closed: () => closed,
    close: () => { for (const s of sockets) s.destroy(); server.close(); },
  };
}

/** Reads `body` to the end, recycling each chunk after copying it (as a sender does once written). */
async function drain(body: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of body as AsyncIterable<Buffer>) {
    parts.push(Buffer.from(c));
    recycleChunk(c);
  }
  return Buffer.concat(parts);
}

t.test('the GET client against scripted stores', async (t) => {
  t.test('keep-alive: answers in sequence on one connection, recycled buffers never mix bodies', async (t) => {
    const bodies = [randomBytes(3 * MiB + 17), randomBytes(700_000), randomBytes(1)];
    const store = await scripted((s, n) => {
      s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${bodies[n]!.length}\r\nETag: "x"\r\n\r\n`);
      s.write(bodies[n]!);
    });
    t.teardown(store.close);
    const client = new RawGetClient(5000);
    t.teardown(() => client.close());
    for (let i = 0; i < bodies.length; i++) {
      const a = await client.get(store.url(`/b/k${i}?X-Amz-Signature=s`), { range: 'bytes=0-' });
      t.equal(a.status, 200);
      t.equal(a.headers.etag, '"x"');
      t.ok((await drain(a.body)).equals(bodies[i]!), `body ${i} intact`);
    }
    t.equal(store.connections(), 1, 'one connection served all three');
  });

  t.test('a body cut short errors the stream, it never ends', async (t) => {
    const store = await scripted((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n');
      s.end(Buffer.alloc(50_000, 7));
    });
    t.teardown(store.close);
    const client = new RawGetClient(5000);
    const a = await client.get(store.url('/b/k'), {});
    let got = 0;
    await t.rejects((async () => { for await (const c of a.body as AsyncIterable<Buffer>) got += c.length; })(), { code: 'ECONNRESET' });
    t.equal(got, 50_000, 'the bytes that came, and then the error');
  });

  t.test('a 2xx without Content-Length, or a head that is not HTTP, is refused', async (t) => {
    const store = await scripted((s, n) => s.end(n === 0 ? 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' : 'SSH-2.0-nope\r\n\r\n'));
    t.teardown(store.close);
    const client = new RawGetClient(5000);
    await t.rejects(client.get(store.url('/b/k'), {}), /without a plain Content-Length/);
    await t.rejects(client.get(store.url('/b/k'), {}), /the store answered "SSH-2.0-nope"/);
  });

  t.test('an error answer (chunked) is read for its text; its connection is not reused', async (t) => {
    const xml = '<?xml version="1.0"?><Error><Code>SlowDown</Code></Error>';
    const store = await scripted((s) => s.write(`HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n${xml.length.toString(16)}\r\n${xml}\r\n0\r\n\r\n`));
    t.teardown(store.close);
    const client = new RawGetClient(5000);
    for (let i = 0; i < 2; i++) {
      const a = await client.get(store.url('/b/k'), {});
      t.equal(a.status, 503);
      t.match((await drain(a.body)).toString(), /<Code>SlowDown<\/Code>/);
    }
    t.equal(store.connections(), 2, 'a new connection after an error answer');
  });

  t.test('an idle connection the store closed is replaced, the GET succeeds', async (t) => {
    const store = await scripted((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
      setTimeout(() => s.end(), 20); // the store's keep-alive timeout, shorter than ours
    });
    t.teardown(store.close);
    const client = new RawGetClient(5000);
    t.teardown(() => client.close());
    t.equal((await drain((await client.get(store.url('/b/k'), {})).body)).toString(), 'abc');
    await waitFor('the idle connection to close', async () => store.closed() === 1);
    t.equal((await drain((await client.get(store.url('/b/k'), {})).body)).toString(), 'abc');
    t.equal(store.connections(), 2);
  });

  t.test('a store gone quiet mid-body times out; a reader that pauses does not', async (t) => {
    const big = randomBytes(4 * MiB);
    const store = await scripted((s, n) => {
      if (n === 0) s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${big.length + 10}\r\n\r\n`), s.write(big); // 10 bytes never come
      else s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${big.length}\r\n\r\n`), s.write(big);
    });
    t.teardown(store.close);
    const client = new RawGetClient(300);
    t.teardown(() => client.close());
    const quiet = await client.get(store.url('/b/k'), {});
    await t.rejects(drain(quiet.body), { code: 'ETIMEDOUT' });
    const slow = await client.get(store.url('/b/k'), {});
    await new Promise((r) => setTimeout(r, 900)); // the body is paused (backpressure) meanwhile
    t.ok((await drain(slow.body)).equals(big), 'complete after a pause three times the timeout');
  });
});

/** GET `url` reading slowly: `onFirst` runs after the first MiB; resolves with the bytes and whether the response completed. */
function slowPull(url: string, auth: Record<string, string>, onFirst: () => Promise<void>): Promise<{ status: number; length: number; got: number; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = send(url, { headers: auth, rejectUnauthorized: false }, (res: IncomingMessage) => {
      let got = 0;
      let fired = false;
      res.on('data', (c: Buffer) => {
        got += c.length;
        if (!fired && got >= MiB) {
          fired = true;
          res.pause();
          void onFirst().then(() => res.resume(), reject);
        }
      });
      const done = () => resolve({ status: res.statusCode!, length: Number(res.headers['content-length']), got, complete: res.complete });
      res.on('error', () => {});
      res.on('close', done);
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('Slipway on Ceph RGW: the gateway killed mid-pull', { skip: cephSkip() }, async (t) => {
  const s3 = await startS3Store();
  t.teardown(() => s3.stop());
  for (const listener of ['h1', 'uws']) {
    t.test(`${listener}: the response ends short and closed, then pulls work again`, { skip: (listener === 'uws' && uwsUnavailable()) || false }, async (t) => {
      const server = await startInProcess({ env: s3.env(`${listener}/`, { SLIPWAY_GC_INTERVAL: '0', SLIPWAY_LISTENER: listener }) });
      t.teardown(() => server.stop());
      const auth = basic('_', server.operator.apiKey);
      t.equal((await createApp(server.api, server.operator.apiKey, 'app')).status, 201);
      const bytes = randomBytes(64 * MiB);
      const d = sha256(bytes);
      t.equal((await pushBlob({ registry: server.urls.registry, auth }, 'app/web', bytes)).status, 201);
      const url = `${server.urls.registry}/v2/app/web/blobs/${d}`;
      const r = await slowPull(url, auth, () => s3.rgw.stopGateway());
      t.equal(r.status, 200);
      t.equal(r.length, bytes.length, 'the head promised the whole blob');
      t.ok(r.got < bytes.length, `the client got ${r.got} of ${bytes.length} bytes`);
      t.notOk(r.complete, 'the response is incomplete (connection closed), not a finished 200');
      await s3.rgw.startGateway();
      const again = await http('GET', url, { headers: auth });
      t.equal(again.status, 200);
      t.ok(again.bytes.equals(bytes), 'the whole blob after the gateway is back');
      const part = await http('GET', url, { headers: { ...auth, range: `bytes=${33 * MiB}-${40 * MiB + 4}` } });
      t.equal(part.status, 206);
      t.ok(part.bytes.equals(bytes.subarray(33 * MiB, 40 * MiB + 5)), 'a Range from the middle');
    });
  }
});
