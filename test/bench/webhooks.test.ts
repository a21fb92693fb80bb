/**
 * The webhook benchmark keeps working (bench/webhooks/run.ts, `npm run bench:webhooks`): run in
 * its quick mode (a few seconds) as a user runs it, through a pipe, it delivers every release's
 * `api:release` event to its receiver, signed, and prints its figures and comparisons in the
 * bench report's shape. Only structure is asserted, never speed: CI machines are shared.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const RUN = fileURLToPath(new URL('../../bench/webhooks/run.js', import.meta.url));

const FIGURES = [
  'webhook_releases_per_s', 'webhook_deliveries_per_s', 'webhook_delivery_latency_p50', 'webhook_delivery_latency_p99',
  'webhook_server_cpu_per_release', 'plain_releases_per_s', 'plain_server_cpu_per_release',
  ...['none', 'none_aa', '1', '5'].flatMap((v) => [`release_p50_webhooks_${v}`, `release_p99_webhooks_${v}`, `release_server_cpu_webhooks_${v}`]),
  ...['1', '5'].flatMap((v) => [`delivery_latency_p50_webhooks_${v}`, `delivery_latency_p99_webhooks_${v}`]),
];
const TARGETED = ['webhook_deliveries_per_s', 'release_p50_webhooks_1', 'release_p99_webhooks_1', 'release_p50_webhooks_5', 'release_p99_webhooks_5'];

t.test('bench:webhooks --quick delivers every event and reports every figure', async (t) => {
  const child = spawn(process.execPath, [RUN, '--quick'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString('utf8'); });
  child.stderr.on('data', (c: Buffer) => { err += c.toString('utf8'); });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.equal(code, 0, 'exits 0', { stderr: err.slice(-2000) });
  const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);

  t.match(lines[0], { bench: 'webhooks_environment', quick: true }, 'the environment first');
  const delivered = lines.find((l) => l.bench === 'webhooks_delivered');
  t.ok(delivered && delivered.expected > 0, 'releases on hooked apps were made');
  t.equal(delivered?.delivered, delivered?.expected, 'every expected delivery arrived');
  t.equal(delivered?.stray, 0, 'nothing delivered for apps without webhooks');
  t.equal(delivered?.bad_signatures, 0, 'every delivery verifies under its webhook\'s secret');

  const figures = lines.filter((l) => l.server === 'slipway');
  t.same(figures.map((f) => f.bench).sort(), [...FIGURES].sort(), 'each figure once');
  for (const f of figures) {
    t.ok(Number.isFinite(f.value) && f.value > 0, `${f.bench}: a positive value`);
    t.type(f.unit, 'string', `${f.bench}: a unit`);
    t.ok(Number.isFinite(f.other_cpu_pct) && Number.isFinite(f.steal_cpu_pct), `${f.bench}: other-process CPU and steal beside it`);
  }
  const comparisons = lines.filter((l) => 'baseline' in l);
  for (const c of comparisons) {
    t.ok(Number.isFinite(c.ratio) && Number.isFinite(c.baseline) && typeof c.baseline_is === 'string', `${c.bench}: ratio to a baseline of the same run`);
    t.ok(Number.isFinite(c.other_cpu_pct) && Number.isFinite(c.steal_cpu_pct), `${c.bench}: load beside it`);
  }
  for (const name of TARGETED) {
    const c = comparisons.find((x) => x.bench === name);
    t.match(c, { target: /^ratio >= [\d.]+$/ }, `${name}: a target`);
    t.type(c?.met, 'boolean', `${name}: met or not`);
  }
  t.ok(comparisons.find((c) => c.bench === 'release_p50_webhooks_none_aa'), 'the A/A comparison (the noise)');
});
