// scratch: per-thread CPU (user/sys) of a Slipway server for 1 GiB pushes: single PATCH and 16 MiB chunks
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'undici';
const dir = process.argv[2] ?? '/work/main';
const mode = process.argv[3] ?? 'single';
const rounds = Number(process.argv[4] ?? 3);
const { startSlipway } = await import(dir + '/dist/bench/servers/slipway.js');
const { threadSeconds, CpuWindow } = await import(dir + '/dist/bench/procstat.js');
const MIB = 1 << 20, N = 1024;
const chunk16 = randomBytes(16 * MIB);
const h = createHash('sha256'); for (let i = 0; i < N / 16; i++) h.update(chunk16);
const digest = 'sha256:' + h.digest('hex');
const t = await startSlipway();
const names = (pid) => { const m = new Map(); for (const [tid, c] of threadSeconds(pid)) m.set(tid, c); return m; };
import { readFileSync } from 'node:fs';
const comm = (pid, tid) => { try { return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(); } catch { return '?'; } };
async function push(i) {
  const repo = 'bench/web';
  const r = await request(`${t.urls.registry}/v2/${repo}/blobs/uploads/`, { method: 'POST', headers: { authorization: t.authorization } });
  await r.body.dump(); let loc = String(r.headers.location);
  if (mode === 'single') {
    async function* body() { for (let k = 0; k < N / 16; k++) yield chunk16; }
    const p = await request(loc, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'content-length': String(N * MIB) }, body: body() });
    await p.body.dump(); if (p.statusCode !== 202) throw new Error('patch ' + p.statusCode); loc = String(p.headers.location);
  } else {
    for (let k = 0; k < N / 16; k++) {
      const tp = performance.now();
      const p = await request(loc, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'content-range': `${k * 16 * MIB}-${(k + 1) * 16 * MIB - 1}`, 'content-length': String(16 * MIB) }, body: chunk16 });
      await p.body.dump(); (globalThis.pt ??= []).push(Math.round(performance.now() - tp)); if (p.statusCode !== 202) throw new Error('patch ' + p.statusCode); loc = String(p.headers.location);
    }
  }
  const u = new URL(loc); u.searchParams.set('digest', digest);
  const c = await request(u, { method: 'PUT' }); const txt = await c.body.text(); if (c.statusCode !== 201) throw new Error('put ' + c.statusCode + txt);
  // delete so the next push writes again
  const d = await request(`${t.urls.registry}/v2/${repo}/blobs/${digest}`, { method: 'DELETE', headers: { authorization: t.authorization } }); await d.body.dump();
}
try {
  await push(-1);
  for (let i = 0; i < rounds; i++) {
    const a = names(t.pid); const w = new CpuWindow(t.pid); const t0 = performance.now();
    await push(i);
    const secs = (performance.now() - t0) / 1000; const use = w.end(); const b = names(t.pid);
    const agg = {};
    for (const [tid, c] of b) { const c0 = a.get(tid) ?? { user: 0, system: 0 }; const n = comm(t.pid, tid).replace(/[0-9]+$/, ''); agg[n] ??= { u: 0, s: 0 }; agg[n].u += c.user - c0.user; agg[n].s += c.system - c0.system; }
    const tot = Object.values(agg).reduce((x, y) => x + y.u + y.s, 0);
    if (globalThis.pt) { console.log('patch ms', globalThis.pt.join(' ')); globalThis.pt = []; }
    console.log(JSON.stringify({ mode, MBps: +(N * MIB / 1e6 / secs).toFixed(0), cpu_s: +tot.toFixed(2), steal: use.steal_cpu_pct, other: use.other_cpu_pct, threads: Object.fromEntries(Object.entries(agg).filter(([, v]) => v.u + v.s > 0.02).map(([k, v]) => [k, `${v.u.toFixed(2)}u+${v.s.toFixed(2)}s`])) }));
  }
} finally { await t.stop(); }
process.exit(0);
