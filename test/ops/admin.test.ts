/**
 * The admin listener: liveness and readiness probes, and /metrics in the Prometheus text format
 * (checked by Prometheus's own promtool), whose counters move by exactly what a push sent.
 */
import t from 'tap';
import { join } from 'node:path';
import { tempDir } from '../helpers/server.js';
import { startInProcess, waitFor } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { promtoolCheck, sampleSum, scrape } from '../helpers/metrics.js';

t.test('admin listener: probes and metrics', async (t) => {
  const tmp = tempDir();
  const server = await startInProcess({ dataDir: tmp.dir });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const admin = server.urls.admin;
  t.match(admin, /^http:\/\/127\.0\.0\.1:\d+$/, 'admin listener on loopback');

  const health = await http('GET', `${admin}/healthz`);
  t.equal(health.status, 200);
  const ready = await http('GET', `${admin}/readyz`);
  t.equal(ready.status, 200, ready.text);
  t.same(ready.json.checks, { store: 'ok', disk: 'ok', blobStorage: 'ok', workerPool: 'ok', hashThread: 'ok' });
  t.equal((await http('GET', `${server.urls.registry}/metrics`)).status, 404, 'metrics are not on a public host');

  await createApp(server.urls.api, server.apiKey!, 'metered');
  const before = await scrape(admin);
  const lint = await promtoolCheck(before);
  t.equal(lint.code, 0, `promtool check metrics: ${lint.output}`);

  const img = await buildImage(join(tmp.dir, 'img'), sampleSpec());
  const blobBytes = img.config.length + img.layers.reduce((n, l) => n + l.bytes.length, 0);
  await pushBuiltImage({ registry: server.urls.registry, auth: basic('_', server.apiKey!) }, 'metered/web', 'v1', img);
  const pull = await http('GET', `${server.urls.registry}/v2/metered/web/blobs/${img.layers[1]!.digest}`, { headers: basic('_', server.apiKey!) });
  t.equal(pull.status, 200);
  t.match(pull.headers['request-id'], /\S/, 'Request-Id on the registry host');

  // Store sizes are re-read at most every few seconds: wait for them to show the push.
  const after = await waitFor('the store sizes to show the push', async () => {
    const m = await scrape(admin);
    return sampleSum(m, 'slipway_store_manifests') >= 1 && m;
  }, { timeoutMs: 10_000, intervalMs: 100 });
  t.equal((await promtoolCheck(after)).code, 0, 'promtool accepts the metrics after traffic');
  const delta = (name: string, ...labels: string[]) => sampleSum(after, name, ...labels) - sampleSum(before, name, ...labels);
  t.equal(delta('slipway_http_received_bytes_total', 'route="/v2/<name>/blobs/uploads/"'), blobBytes, 'blob bytes received = pushed blob bytes');
  t.equal(delta('slipway_http_received_bytes_total', 'route="/v2/<name>/manifests/<reference>"'), img.manifest.length, 'manifest bytes received');
  t.equal(delta('slipway_http_sent_bytes_total', 'route="/v2/<name>/blobs/<digest>"'), img.layers[1]!.bytes.length, 'pulled blob bytes sent');
  t.equal(delta('slipway_store_blob_bytes'), blobBytes, 'stored blob bytes grew by the pushed blobs');
  t.equal(delta('slipway_store_blobs'), img.layers.length + 1);
  t.equal(delta('slipway_store_manifest_bytes'), img.manifest.length);
  t.ok(delta('slipway_http_request_duration_seconds_count', 'host="registry"', 'status="2xx"') >= img.layers.length + 3, 'request durations counted');
  t.ok(delta('slipway_token_checks_total', 'scheme="basic"', 'result="ok"') >= img.layers.length + 3, 'credential checks counted');
  t.ok(delta('slipway_worker_task_duration_seconds_count', 'task="inspectImage"') >= 1, 'worker task time counted');
  t.notMatch(after, /metered/, 'no repository name in any label');
  t.notMatch(after, new RegExp(server.apiKey!), 'no token in any label');
  t.match(after, /nodejs_eventloop_lag_seconds/);
  t.match(after, /process_cpu_seconds_total/);
});

t.test('readiness fails with a reason when free disk is below the threshold', async (t) => {
  const tmp = tempDir();
  const server = await startInProcess({ dataDir: tmp.dir, env: { SLIPWAY_MIN_FREE_DISK_MB: String(1024 ** 3) } }); // 1 EiB
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const ready = await http('GET', `${server.urls.admin}/readyz`);
  t.equal(ready.status, 503);
  t.equal(ready.json.status, 'not ready');
  t.match(ready.json.checks.disk, /bytes free in the data directory, below the \d+-byte threshold/);
  t.equal(ready.json.checks.store, 'ok', 'the other checks still pass');
  t.equal((await http('GET', `${server.urls.admin}/healthz`)).status, 200, 'alive though not ready');
});
