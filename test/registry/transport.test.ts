/**
 * Transport regressions found by the benchmark: a blob pull to a slow reader must not stall
 * (uWS tryEnd/onWritable backpressure), and HEAD responses must keep the connection alive.
 */
import t from 'tap';
import tls from 'node:tls';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'undici';
import { tempDir } from '../helpers/server.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp } from '../helpers/http.js';
import { pushBlob, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';

const tmp = tempDir();
const server = await startInProcess({ dataDir: tmp.dir });
t.teardown(async () => { await server.stop(); tmp.cleanup(); });
await createApp(server.urls.api, server.apiKey!, 'wire');
const target: Target = { registry: server.urls.registry, auth: basic('_', server.apiKey!) };
const blob = randomBytes(64 * 1024 * 1024); // stalls began between 11 and 40 MB
const digest = sha256(blob);
t.equal((await pushBlob(target, 'wire/web', blob)).status, 201);

t.test('a slow reader gets the whole blob', async (t) => {
  const res = await request(`${target.registry}/v2/wire/web/blobs/${digest}`, { headers: target.auth, bodyTimeout: 15_000 });
  t.equal(res.statusCode, 200);
  const h = createHash('sha256');
  let got = 0;
  let sinceNap = 0;
  for await (const chunk of res.body) {
    h.update(chunk as Buffer);
    got += (chunk as Buffer).length;
    sinceNap += (chunk as Buffer).length;
    if (sinceNap >= 2 * 1024 * 1024) { // about 40 MB/s: the server must wait for the reader
      sinceNap = 0;
      await new Promise((r) => setTimeout(r, 50)); // deliberate: the slow reader is the subject
    }
  }
  t.equal(got, blob.length);
  t.equal('sha256:' + h.digest('hex'), digest);
});

t.test('HEAD keeps the connection alive', async (t) => {
  const { hostname, port } = new URL(target.registry);
  const socket = tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false });
  await new Promise((r) => socket.once('secureConnect', r));
  let text = '';
  socket.on('data', (d) => { text += d.toString('latin1'); });
  const auth = target.auth.authorization!;
  const req = (method: string) => `${method} /v2/wire/web/blobs/${digest} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${auth}\r\n\r\n`;
  const answers = () => [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].length;
  socket.write(req('HEAD') + req('HEAD'));
  await waitFor('both HEAD answers', () => answers() >= 2, { timeoutMs: 10_000, intervalMs: 10 });
  socket.write(`GET /v2/ HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${auth}\r\n\r\n`);
  await waitFor('the GET answer on the same connection', () => answers() >= 3 || socket.destroyed, { timeoutMs: 10_000, intervalMs: 10 });
  t.notOk(socket.destroyed, 'still connected');
  socket.destroy();
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  t.same(statuses, ['200', '200', '200'], 'three responses on one connection');
  t.match(text, new RegExp(`content-length: ${blob.length}`, 'i'), 'HEAD reports the size');
});
