/**
 * Differential test of the own HTTP/1.1 listener against node:http (llhttp, strict by default):
 * generated request streams (test/helpers/h1-generator.ts: valid requests, smuggling shapes and
 * byte-level mutations, split across writes) go to both servers; Slipway must never dispatch a
 * request llhttp did not, nor split a stream differently, nor differ in a request's method,
 * target, header set or body. Where it refuses what llhttp accepts, the refusal must be one of
 * the deliberate rules in STRICTER (counted per rule below). Any other divergence fails with the
 * seed, the case index and the bytes.
 *
 * H1_DIFF_CASES cases (default 20,000; H1_DIFF_LONG=1 runs 1,000,000), H1_DIFF_SEED (default
 * random, printed), H1_DIFF_LANES parallel connections per side (default 8).
 */
import t from 'tap';
import { generateCase } from '../helpers/h1-generator.js';
import { compare, Lane } from '../helpers/h1-differential.js';

const seed = Number(process.env.H1_DIFF_SEED ?? Math.floor(Math.random() * 2 ** 31));
const LONG = Boolean(process.env.H1_DIFF_LONG);
const CASES = Number(process.env.H1_DIFF_CASES ?? (LONG ? 1_000_000 : 20_000));
const LANES = Number(process.env.H1_DIFF_LANES ?? 8);
const CASE_TIMEOUT_MS = 10_000;
const MAX_REPORTED = 20;
t.comment(`differential seed ${seed}, ${CASES} cases (rerun with H1_DIFF_SEED=${seed})`);

const lanes = Array.from({ length: LANES }, () => new Lane());
await Promise.all(lanes.map((l) => l.start()));
t.teardown(() => Promise.all(lanes.map((l) => l.stop())));

t.test('Slipway never accepts or splits differently from llhttp', async (t) => {
  const verdicts = new Map<string, number>();
  const kinds = new Map<string, number>();
  const failures: string[] = [];
  let next = 0;
  const started = process.cpuUsage();
  const wall = Date.now();
  await Promise.all(lanes.map(async (lane) => {
    while (next < CASES && failures.length < MAX_REPORTED) {
      const c = generateCase(seed, next++);
      const { slipway, node } = await lane.run(c, CASE_TIMEOUT_MS);
      const verdict = compare(slipway, node);
      const key = verdict.startsWith('diverge:') ? 'diverge' : verdict;
      verdicts.set(key, (verdicts.get(key) ?? 0) + 1);
      kinds.set(c.kind, (kinds.get(c.kind) ?? 0) + 1);
      if (verdict.startsWith('diverge:')) {
        failures.push(`seed ${seed} case ${c.index} (${c.kind}, splits ${JSON.stringify(c.splits)}): ${verdict.slice(8)}\n  bytes ${JSON.stringify(c.bytes.toString('latin1'))}`);
        if (LONG) process.stderr.write(`${failures[failures.length - 1]}\n`);
      }
      // The long mode reports as it goes: it may be stopped before the end.
      const done = [...verdicts.values()].reduce((a, b) => a + b, 0);
      if (LONG && done % 10_000 === 0) process.stderr.write(`differential: ${done} cases compared, ${verdicts.get('diverge') ?? 0} divergences (${new Date().toISOString()})\n`);
    }
  }));
  const cpu = process.cpuUsage(started);
  const run = [...kinds.values()].reduce((a, b) => a + b, 0);
  t.comment(`${run} cases in ${((Date.now() - wall) / 1000).toFixed(1)} s, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU (both servers and the clients)`);
  t.comment(`by source: ${[...kinds].map(([k, v]) => `${k} ${v}`).join(', ')}`);
  for (const [k, v] of [...verdicts].sort((a, b) => b[1] - a[1])) t.comment(`${v} ${k}`);
  for (const f of failures) t.comment(f);
  t.equal(failures.length, 0, `no divergence (seed ${seed}; each is listed above with its bytes)`);
  t.ok(run >= Math.min(CASES, 20_000) || failures.length > 0, `at least ${Math.min(CASES, 20_000)} cases ran`);
  t.ok((verdicts.get('agree') ?? 0) > run / 4, 'most cases are compared request by request, not refused');
});
