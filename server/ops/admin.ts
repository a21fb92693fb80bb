/**
 * The admin listener (its own port, loopback by default, never on a public host):
 *   GET /metrics  Prometheus text format (prom-client)
 *   GET /healthz  200 while the process runs (liveness)
 *   GET /readyz   200 when ready, 503 with a JSON reason per failed check (readiness)
 * node:http is enough here: a scrape or probe every few seconds, no bulk data.
 */
import { createServer, type Server } from 'node:http';
import type { Metrics } from './metrics.js';
import type { Readiness } from './readiness.js';

/** Serves the admin endpoints; resolves with the bound port. */
export async function startAdmin(host: string, port: number, metrics: Metrics, ready: () => Promise<Readiness>): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return json(405, { error: 'only GET is supported' });
    if (path === '/healthz') return json(200, { status: 'ok' });
    if (path === '/readyz') {
      ready().then((r) => json(r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not ready', checks: r.checks }), (e) => json(503, { status: 'not ready', error: String(e) }));
      return;
    }
    if (path === '/metrics') {
      metrics.registry.metrics().then((text) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType });
        res.end(text);
      }, (e) => json(500, { error: String(e) }));
      return;
    }
    json(404, { error: 'not found; try /metrics, /healthz or /readyz' });
  });
  server.keepAliveTimeout = 5_000;
  const bound = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve((server.address() as { port: number }).port));
  });
  return { server, port: bound };
}
