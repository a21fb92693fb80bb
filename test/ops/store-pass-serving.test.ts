/**
 * The store-size pass behind `/metrics` (server/ops/metrics.ts `StoreTotals`) waits while the
 * server is serving: with a request in flight, each page of the pass waits up to 1 s before its
 * read, so a scrape (which waits at most 1 s for a pass) answers before the pass is done and shows
 * no totals yet (without the wait the pass of one image is done within that scrape); once the
 * request ends, the pass completes and a scrape shows the pushed image.
 * Real server in process, a real HTTP request held open on a raw socket.
 */
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { sampleSum, scrape } from '../helpers/metrics.js';

/**
 * Opens a POST to `url` whose body never comes (100 bytes announced, `Expect: 100-continue`), and
 * resolves once the server answers 100 Continue: its handler is then reading the body, so the
 * request is in flight (RFC 9110 §10.1.1). Rejects on any other answer.
 */
function heldRequest(url: string, path: string, apiKey: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${apiKey}\r\nAccept: application/vnd.slipway+json; version=3\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n`);
    });
    let seen = '';
    socket.on('data', (d: Buffer) => {
      seen += d.toString('latin1');
      if (seen.startsWith('HTTP/1.1 100 ')) resolve(socket);
      else if (seen.includes('\r\n\r\n')) reject(new Error(`answered instead of 100 Continue: ${seen.slice(0, 200)}`));
    });
    socket.on('error', reject);
  });
}

t.test('the store pass waits while a request is in flight, and completes once it ends', async (t) => {
  const tmp = tempDir();
  const server = await startInProcess({ dataDir: tmp.dir });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  await createApp(server.urls.api, server.apiKey!, 'passing');
  const img = await buildImage(join(tmp.dir, 'img'), sampleSpec());
  await pushBuiltImage({ registry: server.urls.registry, auth: basic('_', server.apiKey!) }, 'passing/web', 'v1', img);

  const socket = await heldRequest(server.urls.api, '/apps', server.apiKey!);
  t.teardown(() => socket.destroy());
  const busy = await scrape(server.urls.admin);
  t.equal(sampleSum(busy, 'slipway_http_requests_in_flight', 'host="api"'), 1, 'the held request is in flight');
  t.equal(sampleSum(busy, 'slipway_store_manifests'), 0, 'while a request is in flight, the first pass is not done within the scrape\'s wait: no totals yet');

  socket.destroy();
  const idle = await waitFor('the pass to complete once the request ended', async () => {
    const m = await scrape(server.urls.admin);
    return sampleSum(m, 'slipway_store_manifests') >= 1 && m;
  }, { timeoutMs: 15_000, intervalMs: 100 });
  t.equal(sampleSum(idle, 'slipway_store_blobs'), img.layers.length + 1, 'every pushed blob counted');
  t.ok(sampleSum(idle, 'slipway_store_totals_age_seconds') >= 0, 'the totals were read');
});
