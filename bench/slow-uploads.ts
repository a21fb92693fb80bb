/**
 * Memory under slow uploads (not a unit test): N upload sessions of one account, each a PATCH on
 * the upload host declaring `Content-Length: 100000000` that sends 3 bytes and then 1 byte every
 * `--trickle-ms`. Reports the server's idle RSS (after start and 32 warm-up pushes) and its peak RSS
 * while the trickles run (sampled every 100 ms), plus how the sessions fared: opened, refused at
 * POST (per-account session limit, 429), refused at PATCH (memory cap, 503), cut off for being
 * too slow (408), still open at the end. Target: peak ≤ 256 MiB.
 *
 * Three configurations, each on a fresh server: the defaults (the per-account limit refuses all
 * but 64 sessions), the session limit raised to N (every session trickles; the minimum receive
 * rate cuts them off after its window), and the limit raised with no minimum rate (the worst
 * case for memory: every trickle stays open for the whole run).
 *
 *   node dist/bench/slow-uploads.js [--sessions 1000] [--trickle-ms 5000] [--duration-s 40] [--only defaults|raised|raised-no-rate]
 */
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { startSlipway, type SlipwayTarget } from './servers/slipway.js';
import { RssSampler, statusKb } from './procstat.js';
import { installCleanup } from './cleanup.js';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000' },
    'trickle-ms': { type: 'string', default: '5000' },
    'duration-s': { type: 'string', default: '40' },
    only: { type: 'string' },
  },
});
const SESSIONS = Number(values.sessions);
const TRICKLE_MS = Number(values['trickle-ms']);
const DURATION_MS = Number(values['duration-s']) * 1000;

interface Outcome { opened: number; refusedPost: number; refusedPatch: number; cutOff: number; otherStatus: Record<string, number>; openAtEnd: number }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function run(name: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  const server: SlipwayTarget = await startSlipway(env);
  try {
    const auth = server.authorization;
    // Warm-up: 32 ordinary 4 MiB pushes, so the idle figure is a server that has served uploads
    // (and the allocator has seen upload buffers come and go, as on a server in use).
    for (let i = 0; i < 32; i++) {
      const warm = randomBytes(4 << 20);
      const digest = 'sha256:' + createHash('sha256').update(warm).digest('hex');
      const w = await request(`${server.registry}/v2/bench/web/blobs/uploads/?digest=${digest}`, { method: 'POST', headers: { authorization: auth, 'content-length': String(warm.length) }, body: warm });
      await w.body.dump();
      if (w.statusCode !== 201) throw new Error(`warm-up push answered ${w.statusCode}`);
    }
    await sleep(2000);
    const idleMiB = Math.round(statusKb(server.pid, 'VmRSS') / 102.4) / 10;
    const sampler = new RssSampler(server.pid, 100);
    const out: Outcome = { opened: 0, refusedPost: 0, refusedPatch: 0, cutOff: 0, otherStatus: {}, openAtEnd: 0 };
    const sockets: net.Socket[] = [];
    const started = Date.now();
    for (let i = 0; i < SESSIONS; i++) {
      const r = await request(`${server.registry}/v2/bench/web/blobs/uploads/`, { method: 'POST', headers: { authorization: auth } });
      await r.body.dump();
      if (r.statusCode === 429) { out.refusedPost++; continue; }
      if (r.statusCode !== 202) { out.otherStatus[`POST ${r.statusCode}`] = (out.otherStatus[`POST ${r.statusCode}`] ?? 0) + 1; continue; }
      out.opened++;
      const loc = new URL(String(r.headers.location), server.registry);
      const sock = net.connect(Number(loc.port), loc.hostname);
      let answer = '';
      sock.on('data', (d) => {
        if (answer) return;
        answer = d.toString('latin1');
        const status = /^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? '?';
        if (status === '503') out.refusedPatch++;
        else if (status === '408') out.cutOff++;
        else out.otherStatus[`PATCH ${status}`] = (out.otherStatus[`PATCH ${status}`] ?? 0) + 1;
      });
      sock.on('error', () => {});
      sock.write(`PATCH ${loc.pathname}${loc.search} HTTP/1.1\r\nHost: ${loc.host}\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000000\r\n\r\nabc`);
      sockets.push(sock);
    }
    const trickle = setInterval(() => {
      for (const s of sockets) if (!s.destroyed && s.writable) s.write('x');
    }, TRICKLE_MS);
    while (Date.now() - started < DURATION_MS) await sleep(500);
    clearInterval(trickle);
    out.openAtEnd = sockets.filter((s) => !s.destroyed && s.readable && !s.readableEnded).length;
    const { peakMiB, samples } = sampler.stop();
    for (const s of sockets) s.destroy();
    const line = { bench: 'slow_uploads', config: name, env, sessions: SESSIONS, trickle_ms: TRICKLE_MS, duration_s: DURATION_MS / 1000, idle_rss_mib: idleMiB, peak_rss_mib: peakMiB, samples, target_mib: 256, met: peakMiB <= 256, ...out };
    process.stdout.write(JSON.stringify(line) + '\n');
    return line;
  } finally {
    await server.stop();
  }
}

installCleanup();
const configs: Array<[string, Record<string, string>]> = [
  ['defaults', {}],
  ['raised', { SLIPWAY_UPLOAD_SESSIONS: String(SESSIONS + 10) }],
  ['raised-no-rate', { SLIPWAY_UPLOAD_SESSIONS: String(SESSIONS + 10), SLIPWAY_UPLOAD_MIN_RATE: '0' }],
];
for (const [name, env] of configs) {
  if (values.only && values.only !== name) continue;
  const r = await run(name, env);
  process.stderr.write(`${name}: idle ${r.idle_rss_mib} MiB, peak ${r.peak_rss_mib} MiB (target 256) — opened ${r.opened}, 429 ${r.refusedPost}, 503 ${r.refusedPatch}, 408 ${r.cutOff}, open at end ${r.openAtEnd}\n`);
}
process.exit(0);
