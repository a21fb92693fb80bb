/**
 * `slipway fsck` on a clean data directory (exit 0) and on a copy with planted faults: a
 * truncated blob, a flipped byte (found only with --full), a missing file and a manifest whose
 * blob record is gone (dangling link, and store totals that no longer match the records).
 * --repair removes orphan files and sets the store totals again, and nothing else.
 */
import t from 'tap';
import { cpSync, openSync, readSync, statSync, truncateSync, unlinkSync, utimesSync, writeFileSync, writeSync, closeSync, mkdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { runCli, tempDir } from '../helpers/server.js';
import { startSpawned } from '../helpers/harness.js';
import { basic, createApp } from '../helpers/http.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { pushBuiltImage } from '../helpers/registry.js';
import { openStore } from '../../engine/store.js';
import * as blobKs from '../../engine/blobs/keyspaces.js';

async function fsckCli(data: string, ...flags: string[]): Promise<{ code: number; stdout: string; stderr: string; json?: any }> {
  const r = await runCli(['fsck', '--data', data, ...flags], { SLIPWAY_GC_GRACE: '0' });
  let json: unknown;
  try { json = flags.includes('--json') ? JSON.parse(r.stdout) : undefined; } catch { /* the failing assertion prints stdout */ }
  return { ...r, json };
}

const blobPath = (data: string, digest: string) => join(data, 'blobs', 'sha256', digest.slice(7, 9), digest.slice(7));

t.test('fsck', async (t) => {
  const tmp = tempDir();
  const clean = join(tmp.dir, 'clean');
  const server = await startSpawned({ dataDir: clean });
  t.teardown(() => tmp.cleanup());
  await createApp(server.urls.api, server.apiKey!, 'checked');
  const target = { registry: server.urls.registry, auth: basic('_', server.apiKey!) };
  const imgs = [];
  for (let i = 0; i < 3; i++) imgs.push(await pushBuiltImage(target, `checked/p${i}`, 'latest', await buildImage(join(tmp.dir, `img${i}`), sampleSpec())));
  await pushBuiltImage(target, 'checked/copy', 'v1', imgs[0]!); // shared blobs: refs 2
  await server.stop();

  const ok = await fsckCli(clean, '--full', '--json');
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  t.same(ok.json?.problems, [], 'no problems in a clean data directory');
  t.equal(ok.json?.checked.hashed, ok.json?.checked.blobs, 'every blob re-hashed with --full');
  const text = await fsckCli(clean);
  t.equal(text.code, 0);
  t.match(text.stdout, /no problems/);

  const broken = join(tmp.dir, 'broken');
  cpSync(clean, broken, { recursive: true });
  const truncated = imgs[0]!.layers[0]!.digest;
  truncateSync(blobPath(broken, truncated), imgs[0]!.layers[0]!.bytes.length - 10);
  const flipped = imgs[1]!.layers[1]!.digest;
  const fd = openSync(blobPath(broken, flipped), 'r+');
  const one = Buffer.alloc(1);
  readSync(fd, one, 0, 1, 1000);
  one[0] = one[0]! ^ 0xff;
  writeSync(fd, one, 0, 1, 1000);
  closeSync(fd);
  const missing = imgs[2]!.layers[0]!.digest;
  unlinkSync(blobPath(broken, missing));
  const dangling = imgs[2]!.configDigest;
  const store = await openStore(broken);
  await store.metadata.transact((tx) => tx.remove(blobKs.blobs, dangling));
  await store.close();
  const orphanBytes = randomBytes(100);
  const orphan = sha256(orphanBytes);
  mkdirSync(join(blobPath(broken, orphan), '..'), { recursive: true });
  writeFileSync(blobPath(broken, orphan), orphanBytes);
  utimesSync(blobPath(broken, orphan), new Date(0), new Date(0));

  const has = (r: { json?: any }, kind: string, subject: string) =>
    (r.json?.problems as Array<{ kind: string; subject: string; detail: string }> ?? []).some((p) => p.kind === kind && (p.subject === subject || p.subject.endsWith('@' + subject) || p.detail.includes(subject)));
  const quick = await fsckCli(broken, '--json');
  t.equal(quick.code, 1, 'problems exit non-zero');
  t.ok(has(quick, 'blob-size', truncated), 'truncated blob found');
  t.ok(has(quick, 'blob-missing', missing), 'missing file found');
  t.ok(has(quick, 'blob-link-dangling', dangling), 'manifest naming a blob without record found');
  t.ok(has(quick, 'orphan-file', orphan), 'orphan file found');
  t.ok(has(quick, 'store-totals', 'blobs'), 'blob totals that count a record removed behind their back found');
  t.notOk(has(quick, 'store-totals', 'manifests'), 'the manifest totals agree');
  t.notOk(has(quick, 'blob-digest', flipped), 'a flipped byte keeps the size: not seen without --full');

  const full = await fsckCli(broken, '--full', '--json');
  t.equal(full.code, 1);
  t.ok(has(full, 'blob-digest', flipped), 'flipped byte found with --full');
  t.notOk(has(full, 'blob-digest', imgs[0]!.layers[1]!.digest), 'intact blobs pass');

  const human = await fsckCli(broken, '--full');
  t.equal(human.code, 1);
  t.match(human.stdout, new RegExp(`blob-digest\\s+${flipped}`));

  const repair = await fsckCli(broken, '--repair', '--json');
  t.equal(repair.code, 1, 'unrepairable problems remain');
  t.ok(repair.json.problems.some((p: { kind: string; subject: string; repaired: boolean }) => p.kind === 'orphan-file' && p.subject === orphan && p.repaired), 'orphan reported as repaired');
  t.notOk(existsSync(blobPath(broken, orphan)), 'orphan file removed');
  t.equal(statSync(blobPath(broken, truncated)).size, imgs[0]!.layers[0]!.bytes.length - 10, 'a corrupt blob is left as it is');
  t.ok(repair.json.problems.filter((p: { kind: string }) => p.kind === 'blob-size').every((p: { repaired: boolean }) => !p.repaired));
  t.ok(repair.json.problems.some((p: { kind: string; subject: string; repaired: boolean }) => p.kind === 'store-totals' && p.subject === 'blobs' && p.repaired), 'blob totals reported as repaired');
  const again = await fsckCli(broken, '--json');
  t.notOk(has(again, 'store-totals', 'blobs'), 'the blob totals match the records after the repair');
});
