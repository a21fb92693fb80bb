/**
 * The load-balancer example deploy/haproxy/haproxy.cfg, run: three `slipway serve` nodes on one
 * real PostgreSQL and one Ceph RGW bucket behind HAProxy (Debian's), with the example's
 * addresses and ports replaced by the nodes' and the TLS certificate by one made here (HAProxy
 * terminates TLS; skopeo verifies it against that certificate). skopeo pushes an image through
 * HAProxy and pulls it back byte-identical: the registry host spreads requests over the nodes,
 * and every upload session's requests (its Location names its node's path) reach the node that
 * opened it (no 404 on any node's upload host, sessions opened on several nodes). Then one node
 * stops (SIGTERM): HAProxy takes it out by /readyz, and a second push and both pulls succeed.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cephSkip } from '../helpers/ceph-rgw.js';
import { postgresSkip } from '../helpers/postgres.js';
import { startSharedStores } from '../helpers/cluster.js';
import { logLine, startSpawned, type HostPort, type SpawnedSlipway } from '../helpers/harness.js';
import { freePort, startDaemon, stopDaemon, tail, waitFor } from '../helpers/daemons.js';
import { tempDir } from '../helpers/server.js';
import { createApp, http } from '../helpers/http.js';
import { buildImage, sampleSpec } from '../helpers/image.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { ensureTlsFiles } from '../../server/http/tls.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const EXAMPLE = join(root, 'deploy/haproxy/haproxy.cfg');
/** The example's default port of each listener (docs/deployment.md). */
const DEFAULT_PORTS: Record<number, HostPort> = { 5000: 'registry', 5001: 'api', 5002: 'auth', 5003: 'upload', 5004: 'admin' };

function haproxySkip(): string | false {
  if (spawnSync('haproxy', ['-v']).status === 0) return false;
  if (process.env.CI) throw new Error('haproxy (Debian package haproxy) is required in CI but not installed');
  return 'skipped: haproxy not installed (apt-get install --no-install-recommends haproxy)';
}

const skip = haproxySkip() || cephSkip() || postgresSkip() || skopeoSkip();

/**
 * The example with this test's addresses: node N (10.0.0.1N) → 127.0.0.1 and its ports, the
 * public bind → `lb`, the certificate and stats socket → files in `dir`; what only a system
 * installation has (chroot, user, syslog, daemon mode, the port-80 redirect) left out.
 */
function localConfig(example: string, ports: Array<Record<HostPort, number>>, lb: number, dir: string): string {
  return example.split('\n').flatMap((line) => {
    if (/^\s*(chroot|user|group|daemon|log \/dev\/log)\b/.test(line) || /^\s*bind :80$/.test(line)) return [];
    return [line
      .replace(/stats socket \S+/, `stats socket ${dir}/admin.sock`)
      .replace(/bind :443 ssl crt \S+/, `bind 127.0.0.1:${lb} ssl crt ${dir}/registry.pem`)
      .replace(/10\.0\.0\.1(\d):(\d+)(.*check port (\d+))?/, (_m, n: string, port: string, rest: string | undefined, check: string | undefined) => {
        const p = ports[Number(n) - 1]!;
        const main = `127.0.0.1:${p[DEFAULT_PORTS[Number(port)]!]}`;
        return rest === undefined ? main : main + rest.replace(`check port ${check}`, `check port ${p[DEFAULT_PORTS[Number(check)]!]}`);
      })];
  }).join('\n');
}

/** `show stat` on HAProxy's stats socket: backend/server → status (UP, DOWN, …). */
function serverStates(socket: string): Promise<Map<string, string>> {
  return new Promise((done, fail) => {
    let out = '';
    const c = createConnection(socket, () => c.end('show stat\n'));
    c.on('data', (d) => { out += d; });
    c.on('error', fail);
    c.on('end', () => {
      const [head, ...rows] = out.trim().split('\n');
      const cols = head!.replace(/^# /, '').split(',');
      const at = (r: string[], name: string) => r[cols.indexOf(name)]!;
      done(new Map(rows.map((l) => l.split(',')).map((r) => [`${at(r, 'pxname')}/${at(r, 'svname')}`, at(r, 'status')])));
    });
  });
}

/** Requests node `n`'s upload host answered, by status class (`2xx`, `4xx`) and method, from its /metrics. */
async function uploadRequests(n: SpawnedSlipway): Promise<Record<string, number>> {
  const text = (await http('GET', `${n.urls.admin}/metrics`)).text;
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^slipway_http_request_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.host !== 'upload') continue;
    const k = `${labels.method} ${labels.status![0]}xx`;
    counts[k] = (counts[k] ?? 0) + Number(m[2]);
  }
  return counts;
}

t.test('three nodes behind the HAProxy example', { skip }, async (t) => {
  const { db, s3 } = await startSharedStores(t, { memstoreBytes: 1024 ** 3 });
  const work = tempDir('slipway-haproxy-');
  t.teardown(() => work.cleanup());
  const lb = await freePort();
  const origin = `127.0.0.1:${lb}`;
  // Each node as the example's header says, on this machine's loopback.
  const env = { ...s3.env('lb/'), SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64'), SLIPWAY_DATABASE_URL: db.connectionString,
    SLIPWAY_REGISTRY_TLS: 'off', SLIPWAY_REGISTRY_URL: `https://${origin}`, SLIPWAY_GC_INTERVAL: '0' };
  const dirs = [0, 1, 2].map(() => tempDir());
  t.teardown(() => { for (const d of dirs) d.cleanup(); });
  // Every listener on port 0 (the helper's default), so no port is reserved and released before a
  // node binds it; HAProxy's configuration is written from the ports the nodes report.
  const started = await Promise.allSettled(dirs.map((d, i) => startSpawned({
    dataDir: d.dir, startTimeoutMs: 120_000,
    env: { ...env, SLIPWAY_NODE_NAME: `node${i + 1}`, SLIPWAY_UPLOAD_URL: `https://${origin}/_upload/node${i + 1}` },
  })));
  const nodes = started.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  t.teardown(() => Promise.all(nodes.map((n) => n.stop())));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  // The bound ports, from each node's "slipway listening" line (its URLs are the balancer's).
  const ports = nodes.map((n) => {
    const line = n.output().split('\n').map(logLine).find((e) => e?.msg === 'slipway listening');
    if (!line?.ports) throw new Error(`no bound ports in the node's "slipway listening" line:\n${n.output()}`);
    return line.ports as Record<HostPort, number>;
  });
  const key = nodes.find((n) => n.apiKey)?.apiKey;
  if (!key) throw new Error('no node printed the operator\'s API key');
  t.equal((await createApp(nodes[0]!.urls.api, key, 'balanced')).status, 201);

  // HAProxy: the example, localised; TLS with a certificate for 127.0.0.1.
  const tls = await ensureTlsFiles(work.dir, '127.0.0.1');
  writeFileSync(join(work.dir, 'registry.pem'), `${readFileSync(tls.certFile, 'utf8').trim()}\n${readFileSync(tls.keyFile, 'utf8').trim()}\n`);
  const certs = join(work.dir, 'certs');
  mkdirSync(certs);
  writeFileSync(join(certs, 'registry.crt'), readFileSync(tls.certFile));
  const cfg = join(work.dir, 'haproxy.cfg');
  writeFileSync(cfg, localConfig(readFileSync(EXAMPLE, 'utf8'), ports, lb, work.dir) + '\n');
  const check = spawnSync('haproxy', ['-c', '-f', cfg], { encoding: 'utf8' });
  t.equal(check.status, 0, `haproxy -c accepts the configuration\n${check.stdout}${check.stderr}`);
  const haproxy = startDaemon('haproxy', 'haproxy', ['-db', '-f', cfg], join(work.dir, 'haproxy.log'));
  t.teardown(() => stopDaemon(haproxy));
  const socket = join(work.dir, 'admin.sock');
  await waitFor('HAProxy to see every node up', async () => {
    const s = await serverStates(socket);
    return [1, 2, 3].every((n) => s.get(`registry/node${n}`) === 'UP' && s.get(`upload_node${n}/node${n}`) === 'UP');
  }, { timeoutMs: 60_000, intervalMs: 200, abort: () => haproxy.exited && `haproxy ${haproxy.exited}: ${tail(haproxy.log)}` });

  const creds = `_:${key}`;
  const push = async (tag: string) => {
    const img = await buildImage(join(work.dir, `img-${tag}`), sampleSpec());
    const r = await skopeo(['copy', '--dest-creds', creds, '--dest-cert-dir', certs, `dir:${img.dir}`, `docker://${origin}/balanced/web:${tag}`]);
    t.equal(r.code, 0, `push ${tag} through HAProxy: ${r.stderr}`);
    return img;
  };
  const pulledIntact = async (tag: string, img: { dir: string }) => {
    const back = join(work.dir, `back-${tag}-${randomBytes(3).toString('hex')}`);
    const r = await skopeo(['copy', '--src-creds', creds, '--src-cert-dir', certs, `docker://${origin}/balanced/web:${tag}`, `dir:${back}`]);
    t.equal(r.code, 0, `pull ${tag} through HAProxy: ${r.stderr}`);
    for (const f of readdirSync(img.dir).filter((f) => f !== 'version')) {
      t.ok(readFileSync(join(back, f)).equals(readFileSync(join(img.dir, f))), `${tag}: ${f.slice(0, 16)} byte-identical`);
    }
  };

  const v1 = await push('v1');
  await pulledIntact('v1', v1);
  const counts = await Promise.all(nodes.map(uploadRequests));
  t.comment(`upload-host requests per node: ${JSON.stringify(counts)}`);
  t.same(counts.flatMap((c) => Object.keys(c).filter((k) => k.endsWith('4xx'))), [], 'no upload request reached a node that does not hold its session');
  t.ok(counts.filter((c) => Object.keys(c).some((k) => k.endsWith('2xx'))).length >= 2, 'sessions were opened on more than one node and each served by its own');

  // One node stops; HAProxy takes it out (readiness 503 while it drains, then refused).
  await nodes[1]!.stop();
  await waitFor('HAProxy to mark node2 down', async () => (await serverStates(socket)).get('registry/node2')?.startsWith('DOWN'), { timeoutMs: 30_000, intervalMs: 200 });
  const v2 = await push('v2');
  await pulledIntact('v2', v2);
  await pulledIntact('v1', v1);
});
