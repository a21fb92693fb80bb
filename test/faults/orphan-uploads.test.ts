/**
 * Upload session bytes that belong to no session (docs/faults.md "Orphaned upload bytes"): left
 * by a crash between bytes and record, a tool killed mid-way, or a session ended while its
 * bytes could not be removed (a full disk). A live node removes them on its reaper's interval,
 * not only at its next start, and never a live session's bytes (one mid-upload); `slipway fsck` reports them as `orphan-upload` and `--repair`
 * removes those untouched for the GC grace. Both fail on builds before this (the reaper ran
 * only at start-up; fsck reported `problems: []`).
 */
import t from 'tap';
import { existsSync, mkdirSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { sha256 } from '../helpers/image.js';
import { startUpload, withDigest } from '../helpers/registry.js';
import { runCli, tempDir } from '../helpers/server.js';
import { prng } from '../helpers/metadata-contract-suite.js';

const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
const random = prng(seed);
/** A session id as the server makes them (32 hex), from the seed. */
const sessionId = () => Array.from({ length: 32 }, () => Math.floor(random() * 16).toString(16)).join('');

/**
 * Plants session bytes with no session, as a crash or a failed abort leaves them. The file is
 * written and aged beside the uploads folder, then renamed in (rename keeps its times): a live
 * node's reaper may run at any moment, and once it removed a file between its write and its
 * `utimes` (a CI run: ENOENT on utime).
 */
function plantOrphan(dataDir: string, ageMs = 0): string {
  const id = sessionId();
  mkdirSync(join(dataDir, 'uploads'), { recursive: true });
  const staging = join(dataDir, `planting-${id}`);
  writeFileSync(staging, randomBytes(64 * 1024 + Math.floor(random() * 1024 * 1024)));
  if (ageMs > 0) utimesSync(staging, new Date(Date.now() - ageMs), new Date(Date.now() - ageMs));
  renameSync(staging, join(dataDir, 'uploads', id));
  return id;
}

t.test('a live node removes orphan session bytes on its reaper interval; fsck reports and repairs them', async (t) => {
  t.comment(`seed ${seed} (SLIPWAY_TEST_SEED=${seed} replays it)`);
  const tmp = tempDir();
  let server: SpawnedSlipway | undefined = await startSpawned({ dataDir: tmp.dir, env: { SLIPWAY_UPLOAD_REAP_INTERVAL: '0.2' } });
  t.teardown(async () => { await server?.kill(); tmp.cleanup(); });
  const auth = basic('_', server.apiKey!);
  await createApp(server.urls.api, server.apiKey!, 'orphans');

  // A live session with an acknowledged chunk: its bytes stay.
  const blob = randomBytes(3 * 1024 * 1024);
  const loc = await startUpload({ registry: server.urls.registry, auth }, 'orphans/web');
  const first = await http('PATCH', loc, { body: blob.subarray(0, 1024 * 1024), headers: { 'content-type': 'application/octet-stream' } });
  t.equal(first.status, 202);
  const liveId = first.headers['docker-upload-uuid']!;

  const orphans = [plantOrphan(tmp.dir), plantOrphan(tmp.dir, 3 * 24 * 3600_000)];
  const started = Date.now();
  await waitFor('the reaper to remove the orphan session bytes', () => orphans.every((id) => !existsSync(join(tmp.dir, 'uploads', id))), { timeoutMs: 30_000, intervalMs: 20 });
  t.comment(`removed after ${Date.now() - started} ms (interval 200 ms)`);
  // The log line comes through the child's stdout pipe, after the removal it reports: wait for it
  // (a CI run once read the output between the two).
  const logged = /removed upload session bytes that belonged to no session/;
  const running = server;
  await waitFor('the removal to be logged', () => logged.test(running.output()), { timeoutMs: 10_000, intervalMs: 20 }).catch(() => undefined);
  t.match(server.output(), logged, 'the removal is logged');
  t.ok(existsSync(join(tmp.dir, 'uploads', liveId)), "the live session's bytes stay");

  const rest = await http('PUT', withDigest(first.headers.location!, sha256(blob)), { body: blob.subarray(1024 * 1024), headers: { 'content-type': 'application/octet-stream' } });
  t.equal(rest.status, 201, `the live session completes: ${rest.text}`);
  const got = await http('GET', `${server.urls.registry}/v2/orphans/web/blobs/${sha256(blob)}`, { headers: auth });
  t.ok(got.bytes.equals(blob), 'and reads back byte-identical');

  await server.stop();
  server = undefined;
  const old = plantOrphan(tmp.dir, 3 * 24 * 3600_000);
  const fresh = plantOrphan(tmp.dir);
  const report = await runCli(['fsck', '--data', tmp.dir, '--json']);
  t.equal(report.code, 1, 'fsck exits 1 with orphan session bytes');
  const kinds = JSON.parse(report.stdout).problems.map((p: { kind: string; subject: string }) => `${p.kind} ${p.subject}`).sort();
  t.same(kinds, [`orphan-upload ${old}`, `orphan-upload ${fresh}`].sort(), 'both reported as orphan-upload');
  const repaired = await runCli(['fsck', '--data', tmp.dir, '--repair', '--json']);
  const problems = JSON.parse(repaired.stdout).problems as Array<{ subject: string; repaired: boolean }>;
  t.same(problems.find((p) => p.subject === old)?.repaired, true, '--repair removes the bytes untouched for the grace');
  t.same(problems.find((p) => p.subject === fresh)?.repaired, false, 'and leaves recent ones (maybe a running server\'s first chunk)');
  t.notOk(existsSync(join(tmp.dir, 'uploads', old)), 'the old bytes are gone');
  t.ok(existsSync(join(tmp.dir, 'uploads', fresh)), 'the recent bytes stay');
});
