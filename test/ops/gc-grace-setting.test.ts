/**
 * The GC grace as a setting an operator changes at run time, on the embedded store (LMDB,
 * shared by the running node and the CLI): `slipway gc grace set` takes effect in `slipway gc`
 * at once when it is longer, the running node applies it without a restart (its announcement in
 * `slipway gc grace`), a shorter one is reported as waiting, bad durations change nothing; and
 * `slipway gc --dry-run` says why each blob stays (referenced by which image, within the grace
 * until when, an upload in progress of its size). (On old main `gc grace` is an unknown command
 * and the dry run lists no kept blob.)
 */
import t from 'tap';
import { startSpawned, waitFor } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { pushBlob, putManifest, startUpload } from '../helpers/registry.js';
import { memImage } from '../helpers/cluster.js';
import { sha256 } from '../helpers/image.js';
import { runCli } from '../helpers/server.js';

const HOUR = 3600_000;

t.test('gc grace set on a running node; gc --dry-run gives reasons', async (t) => {
  const node = await startSpawned({ env: { SLIPWAY_GC_GRACE: '0', SLIPWAY_GC_INTERVAL: '0', SLIPWAY_NODE_NAME: 'solo' }, startTimeoutMs: 120_000 });
  t.teardown(() => node.stop());
  const key = node.apiKey!;
  const target = { registry: node.urls.registry, auth: basic('_', key) };
  t.equal((await createApp(node.urls.api, key, 'keep')).status, 201);
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: {}, rootfs: { type: 'layers', diff_ids: [] } }));
  const img = memImage(config, [Buffer.from('a layer of the image')]);
  for (const b of img.blobs) t.equal((await pushBlob(target, 'keep/web', b)).status, 201);
  t.equal((await putManifest(target, 'keep/web', 'v1', img.manifest)).status, 201);
  // Two loose blobs (no manifest names them): one of a size an open upload session has reached.
  const busy = Buffer.from('same size as the upload in flight');
  const loose = Buffer.from('nobody references me, a bit longer');
  t.equal((await pushBlob(target, 'keep/web', busy)).status, 201);
  t.equal((await pushBlob(target, 'keep/web', loose)).status, 201);
  const session = await startUpload(target, 'keep/web');
  t.equal((await http('PATCH', session, { body: Buffer.alloc(busy.length, 7) })).status, 202);

  const cli = async (...args: string[]) => {
    // The nodes' SLIPWAY_GC_GRACE: without a setting, `slipway gc` never goes below its own.
    const r = await runCli([...args, '--data', node.dataDir], { SLIPWAY_GC_GRACE: '0' });
    return { ...r, json: () => JSON.parse(r.stdout.trim().split('\n').pop()!) };
  };

  // Grace 0 (the node's SLIPWAY_GC_GRACE, no setting): what stays and why.
  let dry = (await cli('gc', '--dry-run', '--json')).json();
  t.match(dry.grace, { ms: 0, source: 'nodes' });
  const kept = (d: string) => dry.keptBlobs.find((b: { digest: string }) => b.digest === d);
  for (const b of img.blobs) t.match(kept(sha256(b)), { reason: 'referenced', referencedBy: [`keep/web@${img.digest}`], references: 1 }, 'an image\'s blob: referenced, by that image');
  t.match(kept(sha256(busy)), { reason: 'upload' }, 'an upload session is at its size');
  t.same(dry.deletedBlobs.map((b: { digest: string }) => b.digest), [sha256(loose)], 'the other loose blob would go');
  const human = await cli('gc', '--dry-run');
  t.match(human.stdout, `kept   ${sha256(img.blobs[1]!)}  ${img.blobs[1]!.length} bytes  referenced by keep/web@${img.digest}`);
  t.match(human.stdout, /kept {3}sha256:\S+ {2}\d+ bytes {2}an upload session has reached its size/);
  t.match(human.stdout, 'Grace: 0 s, the longest SLIPWAY_GC_GRACE of the nodes heard from in the last day (no cluster setting).');

  // Longer: in force at once, for `slipway gc` too; the running node applies it within 10 s.
  const set = await cli('gc', 'grace', 'set', '1h');
  t.equal(set.code, 0, set.stderr);
  t.match(set.stdout, 'GC grace set to 1 h (was 0 s): GC uses it now');
  dry = (await cli('gc', '--dry-run', '--json')).json();
  t.match(dry.grace, { ms: HOUR, source: 'setting' });
  const graced = kept(sha256(loose));
  t.match(graced, { reason: 'grace' }, 'the loose blob: within the grace');
  t.equal(graced.until - graced.since, HOUR, 'kept until an hour after its upload');
  t.same(dry.deletedBlobs, []);
  const applied = await waitFor('the running node to apply the setting', async () => {
    const n = (await cli('gc', 'grace', '--json')).json().nodes.find((x: { node: string }) => x.node === 'solo');
    return n?.appliedMs === HOUR ? n : undefined;
  }, { timeoutMs: 60_000, intervalMs: 500 });
  t.match(applied, { graceMs: 0, appliedMs: HOUR }, 'SLIPWAY_GC_GRACE 0, applies the setting');
  t.equal((await cli('gc')).code, 0);
  t.equal((await http('HEAD', `${target.registry}/v2/keep/web/blobs/${sha256(loose)}`, { headers: target.auth })).status, 200, 'kept by the real run');

  // Shorter: stored, but GC keeps the hour until every node applied it and old touches aged.
  const lower = await cli('gc', 'grace', 'set', '0');
  t.equal(lower.code, 0, lower.stderr);
  t.match(lower.stdout, /GC grace set to 0 s \(was 1 h\): every node applies it within 10 s; GC keeps 1 h until \S+Z/);
  dry = (await cli('gc', '--dry-run', '--json')).json();
  t.match(dry.grace, { ms: HOUR, source: 'setting', setting: { graceMs: 0, previousMs: HOUR } });
  t.ok(dry.grace.until - dry.grace.setting.setAt >= 5 * 60_000, 'for the old touch interval (5 min) and two polls');

  // Bad durations: exit 2, a message, nothing changed.
  for (const bad of ['soon', '31d']) {
    const r = await cli('gc', 'grace', 'set', bad);
    t.equal(r.code, 2, `${bad}: exit 2`);
    t.match(r.stderr, /duration|between 0 and 30 days/);
  }
  t.match((await cli('gc', 'grace', '--json')).json().grace.setting, { graceMs: 0, previousMs: HOUR }, 'the setting is unchanged');
  t.match((await cli('gc', 'grace')).stdout, /GC grace: 1 h until \S+, then the cluster setting of \S+: 0 s[^]*solo {2}applies/);
});
