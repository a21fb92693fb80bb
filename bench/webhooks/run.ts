/**
 * `npm run bench:webhooks`: what app webhooks cost one node on the embedded store
 * (bench/README.md "Webhooks"; docs/webhooks.md "Performance").
 *
 *   npm run bench:webhooks -- [--quick] [--apps 4] [--windows 2] [--window-s 5]
 *                             [--rounds 12] [--per-slice 40]
 *
 * Starts `slipway serve` (bench/servers/slipway.ts) with `SLIPWAY_WEBHOOK_ALLOWED_HOSTS=127.0.0.1`
 * and a node:http receiver on loopback in a process of its own (remote-receiver.ts: a receiver
 * in the client's process would charge its work to the releases it times), then:
 * 1. throughput (bench/webhooks/throughput.ts): releases/s and `api:release` deliveries/s, with
 *    the release rate without webhooks measured in alternating windows;
 * 2. release A/B (bench/webhooks/release-ab.ts): release p50/p99 with no, 1 and 5 webhooks on the
 *    app, in interleaved rounds, with an A/A pair of apps without webhooks for the noise.
 * Prints JSON lines on stdout (figures, comparisons, and `webhooks_delivered`: every release
 * expected at the receiver, how many arrived, duplicates, bad signatures) and a table on stderr.
 * `--quick` (or BENCH_QUICK=1): a few seconds in all, for the smoke test.
 * @throws Error (exit 1) when an API call fails or a delivery does not arrive within 60 s
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Agent } from 'undici';
import { installCleanup } from '../cleanup.js';
import { startSlipway } from '../servers/slipway.js';
import { addWebhooks, badSignatures, createBenchApp, releaseArrivals, type Api, type ReleaseMade } from './api.js';
import { WebhookReport } from './figures.js';
import { releaseAbPhase, type Variant } from './release-ab.js';
import { throughputPhase } from './throughput.js';
import { RemoteReceiver } from './remote-receiver.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: process.env.BENCH_QUICK === '1' },
    apps: { type: 'string' }, windows: { type: 'string' }, 'window-s': { type: 'string' },
    rounds: { type: 'string' }, 'per-slice': { type: 'string' },
  },
});
const quick = args.quick!;
const num = (v: string | undefined, full: number, q: number) => (v === undefined ? (quick ? q : full) : Number(v));
const DRAIN_MS = 60_000;
const throughput = { apps: num(args.apps, 4, 2), windows: num(args.windows, 2, 1), windowMs: num(args['window-s'], 5, 1) * 1000, drainMs: DRAIN_MS };
const ab = { rounds: num(args.rounds, 12, 2), perSlice: num(args['per-slice'], 40, 8), drainMs: DRAIN_MS };

installCleanup();
const report = new WebhookReport();
const receiver = await RemoteReceiver.start();
// The API rate limit off: the bench measures releases and deliveries, not the per-account budget (4,500).
const server = await startSlipway({ SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_ACCESS_LOG_LEVEL: 'silent', SLIPWAY_RATE_LIMIT_POOL: '1000000000', SLIPWAY_RATE_LIMIT_PER_MINUTE: '1000000000' });
const dispatcher = new Agent({ connections: 16 });
try {
  const api: Api = { url: server.urls.api, apiKey: server.operator.apiKey, dispatcher };
  report.note({ bench: 'webhooks_environment', node: process.version, cpus: cpus().length, loadavg_1m: loadavg()[0], quick, throughput: { ...throughput, drainMs: undefined }, ab: { ...ab, drainMs: undefined }, server_pid: server.pid });
  const secrets = new Map<string, string>();
  const plain = Array.from({ length: throughput.apps }, (_, i) => `plain${i}`);
  const hooked = Array.from({ length: throughput.apps }, (_, i) => `hooked${i}`);
  const variants: Variant[] = ([['none', 'ab-none', 0], ['none_aa', 'ab-none-aa', 0], ['1', 'ab-one', 1], ['5', 'ab-five', 5]] as const)
    .map(([label, app, webhooks]) => ({ label, app, webhooks, ms: [], deliveryMs: [], roundP50: [], cpu: [], serverCpuS: 0, made: [] }));
  for (const app of [...plain, ...hooked, ...variants.map((v) => v.app)]) await createBenchApp(api, app);
  for (const app of hooked) await addWebhooks(api, app, receiver.url, 1, secrets);
  for (const v of variants) await addWebhooks(api, v.app, receiver.url, v.webhooks, secrets);
  const hookedMade = await throughputPhase(api, server.pid, receiver, plain, hooked, throughput, report);
  await releaseAbPhase(api, server.pid, receiver, variants, ab, report);
  // Every release made on a hooked app, each expected once per webhook of its app.
  const expected: Array<[ReleaseMade, number]> = [...hookedMade.map((m) => [m, 1] as [ReleaseMade, number]), ...variants.flatMap((v) => v.made.map((m) => [m, v.webhooks] as [ReleaseMade, number]))];
  await receiver.refresh();
  const arrivals = releaseArrivals(receiver);
  const want = expected.reduce((n, [, k]) => n + k, 0);
  const got = expected.reduce((n, [m, k]) => n + Math.min(k, arrivals.get(m.name)?.length ?? 0), 0);
  const extra = expected.reduce((n, [m, k]) => n + Math.max(0, (arrivals.get(m.name)?.length ?? 0) - k), 0);
  const unexpected = [...plain, ...variants.filter((v) => v.webhooks === 0).map((v) => v.app)];
  const stray = receiver.received.filter((r) => unexpected.includes((r.json as { data?: { app?: { name?: string } } })?.data?.app?.name ?? '')).length;
  report.note({ bench: 'webhooks_delivered', expected: want, delivered: got, duplicates: extra, stray, requests: receiver.received.length, bad_signatures: badSignatures(receiver, secrets) });
  report.table();
  process.stderr.write(`load average (1 min) at the end: ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs\n`);
} finally {
  await dispatcher.close();
  await server.stop();
  await receiver.close();
}
// Exit once stdout has taken every line (a pipe's writes are asynchronous); the server's child
// process and the receiver are gone, but undici may keep a timer.
process.stdout.write('', () => process.exit(0));
