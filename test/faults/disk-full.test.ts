/**
 * A full data disk (docs/faults.md "A full data disk"): `slipway serve` with SLIPWAY_DATA on a
 * small tmpfs, filled to 0 bytes free and then to a few MiB free while skopeo and raw HTTP
 * clients push, pull and call the API concurrently (seeded random timing), then grown with a
 * remount. Invariants: every request ended within its bound, with 507 STORAGE_FULL (code
 * UNAVAILABLE, a message that says storage is full) or success; a chunked session is left at
 * its acknowledged offset; every acknowledged blob and manifest reads back byte-identical; no
 * request is left in flight; after the disk grows the same pushes succeed (sessions resumed
 * from their Range, the rest started again); the drain is prompt and `fsck --full` is clean.
 * Before the fix an 8 MiB upload onto the full disk got no answer at all.
 */
import t from 'tap';
import { createCipheriv, createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSpawned, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, errCode, errMessage, http, type Reply } from '../helpers/http.js';
import { buildImage, sha256 } from '../helpers/image.js';
import { pushBlob, putManifest, startUpload, withDigest } from '../helpers/registry.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { runCli, tempDir } from '../helpers/server.js';
import { scrape, sampleSum } from '../helpers/metrics.js';
import { prng } from '../helpers/metadata-contract-suite.js';
import { mountTmpfs, tmpfsSkip, type Tmpfs } from '../helpers/tmpfs.js';

const MiB = 1024 * 1024;
/** Every request made while the disk is full ends within this (ms; docs/faults.md states 5 s plus the body's transfer). */
const BOUND_MS = 10_000;
/** A skopeo push (several requests, its own retries) ends within this (ms). */
const SKOPEO_BOUND_MS = 30_000;
/** The drain after the fault completes within this (ms). */
const DRAIN_BOUND_MS = 5_000;

const seed = Number(process.env.SLIPWAY_TEST_SEED ?? Math.floor(Math.random() * 2 ** 31));
const random = prng(seed);

/** `n` pseudo-random, incompressible bytes from the seed (AES-CTR of zeros). */
function seededBytes(n: number): Buffer {
  const key = createHash('sha256').update(`disk-full ${seed} ${random()}`).digest().subarray(0, 16);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n));
}

/** Waits a seeded random 0–`maxMs` ms: requests start in a different order each run. */
function jitter(maxMs: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.floor(random() * maxMs)));
}

/** What one request of the traffic got, and how long it took. */
interface Outcome {
  what: string;
  status: number | 'timeout' | 'error';
  ms: number;
  reply?: Reply;
  detail?: string;
}

/** Runs `req`, giving up (status 'timeout') after `bound` ms. */
async function timed(what: string, bound: number, req: (signal: AbortSignal) => Promise<Reply>): Promise<Outcome> {
  const start = Date.now();
  try {
    const reply = await req(AbortSignal.timeout(bound));
    return { what, status: reply.status, ms: Date.now() - start, reply };
  } catch (e) {
    const name = (e as Error).name;
    return { what, status: name === 'TimeoutError' || name === 'AbortError' ? 'timeout' : 'error', ms: Date.now() - start, detail: (e as Error).message };
  }
}

/** `http` with an abort signal (the bound). */
function send(method: string, url: string, signal: AbortSignal, opts: { headers?: Record<string, string>; body?: Buffer | string } = {}): Promise<Reply> {
  return http(method, url, { ...opts, signal });
}

/** An upload session with its first chunk acknowledged before the fault; resumed after it. */
interface Chunked {
  blob: Buffer;
  location: string;
  acknowledged: number;
}

const skip = tmpfsSkip() || skopeoSkip();

t.test('a full data disk: prompt 507s under concurrent pushes, nothing acknowledged lost, pushes succeed once it grows', { skip }, async (t) => {
  t.comment(`seed ${seed} (SLIPWAY_TEST_SEED=${seed} replays it)`);
  const fs: Tmpfs = mountTmpfs(160);
  const work = tempDir();
  let server: SpawnedSlipway | undefined;
  t.teardown(async () => { await server?.kill(); fs.unmount(); work.cleanup(); });
  server = await startSpawned({ dataDir: fs.dir });
  const key = server.apiKey!;
  const auth = basic('_', key);
  const target = { registry: server.urls.registry, auth };
  await createApp(server.urls.api, key, 'full');
  const registryHost = new URL(server.urls.registry).host;
  const creds = ['--dest-creds', `_:${key}`, '--dest-tls-verify=false'];

  // Acknowledged before the fault: an image pushed by skopeo, and two sessions' first chunks.
  const base = await buildImage(join(work.dir, 'base'), { layers: [{ files: { 'app/base.bin': seededBytes(3 * MiB) }, level: 0 }] });
  const pushedBase = await skopeo(['copy', ...creds, `dir:${base.dir}`, `docker://${registryHost}/full/web:base`]);
  t.equal(pushedBase.code, 0, `baseline push: ${pushedBase.stderr}`);
  const acknowledgedBlobs = new Map<string, Buffer>([[base.layers[0]!.digest, base.layers[0]!.bytes], [sha256(base.config), base.config]]);
  const acknowledgedManifests = new Map<string, Buffer>([['base', base.manifest]]);
  const openChunked = async (): Promise<Chunked> => {
    const blob = seededBytes(9 * MiB);
    const first = await http('PATCH', await startUpload(target, 'full/web'), { body: blob.subarray(0, MiB), headers: { 'content-type': 'application/octet-stream' } });
    t.equal(first.status, 202, 'first chunk acknowledged');
    return { blob, location: first.headers.location!, acknowledged: MiB };
  };
  const sessions = [await openChunked(), await openChunked()];
  // Built before the fault (they live outside the tmpfs): what skopeo pushes during and after it.
  const big = await buildImage(join(work.dir, 'big'), { layers: [{ files: { 'app/big.bin': seededBytes(16 * MiB) }, level: 0 }] });
  const monoBlobs = [seededBytes(8 * MiB), seededBytes(8 * MiB)];

  /** The concurrent traffic of one phase; every outcome is checked against the bound. */
  const traffic = async (phase: string): Promise<Outcome[]> => {
    const ops: Array<Promise<Outcome>> = [
      jitter(300).then(() => timed(`${phase}: monolithic POST ?digest= of 8 MiB`, BOUND_MS, (signal) => {
        const b = monoBlobs[0]!;
        return send('POST', `${server!.urls.registry}/v2/full/web/blobs/uploads/?digest=${sha256(b)}`, signal, { headers: { ...auth, 'content-type': 'application/octet-stream' }, body: b });
      })),
      jitter(300).then(() => timed(`${phase}: PATCH of 8 MiB on an open session`, BOUND_MS, (signal) => {
        const s = sessions[0]!;
        return send('PATCH', s.location, signal, { headers: { 'content-type': 'application/octet-stream', 'content-range': `${s.acknowledged}-${s.blob.length - 1}` }, body: s.blob.subarray(s.acknowledged) });
      })),
      jitter(300).then(() => timed(`${phase}: PUT ?digest= with an 8 MiB body`, BOUND_MS, (signal) => {
        const s = sessions[1]!;
        return send('PUT', withDigest(s.location, sha256(s.blob)), signal, { headers: { 'content-type': 'application/octet-stream' }, body: s.blob.subarray(s.acknowledged) });
      })),
      jitter(300).then(() => timed(`${phase}: manifest PUT of a new tag`, BOUND_MS, (signal) => send('PUT', `${server!.urls.registry}/v2/full/web/manifests/${phase}`, signal, {
        headers: { ...auth, 'content-type': 'application/vnd.docker.distribution.manifest.v2+json' }, body: base.manifest,
      }))),
      jitter(300).then(() => timed(`${phase}: API app create`, BOUND_MS, (signal) => send('POST', `${server!.urls.api}/apps`, signal, {
        headers: { authorization: `Bearer ${key}`, accept: 'application/vnd.heroku+json; version=3', 'content-type': 'application/json' }, body: JSON.stringify({ name: `full-${phase}` }),
      }))),
      jitter(300).then(() => timed(`${phase}: pull of an acknowledged layer`, BOUND_MS, (signal) => send('GET', `${server!.urls.registry}/v2/full/web/blobs/${base.layers[0]!.digest}`, signal, { headers: auth }))),
      jitter(300).then(async () => {
        const start = Date.now();
        const r = await Promise.race([
          skopeo(['copy', ...creds, `dir:${big.dir}`, `docker://${registryHost}/full/web:big-${phase}`]),
          new Promise<undefined>((r) => setTimeout(() => r(undefined), SKOPEO_BOUND_MS).unref()),
        ]);
        return { what: `${phase}: skopeo push of a 16 MiB layer`, status: r === undefined ? 'timeout' : r.code === 0 ? 201 : 507, ms: Date.now() - start, detail: r?.stderr } as Outcome;
      }),
    ];
    return Promise.all(ops);
  };

  /** Checks one phase's outcomes: every request ended in time with 507 (saying so) or success. */
  const check = (outcomes: Outcome[], mustFail: RegExp) => {
    for (const o of outcomes) {
      t.comment(`${o.what}: ${o.status} in ${o.ms} ms`);
      t.not(o.status, 'timeout', `${o.what}: answered within its bound`);
      t.not(o.status, 'error', `${o.what}: answered (${o.detail ?? ''})`);
      if (o.reply && o.status !== 'timeout') {
        t.ok(o.reply.status < 300 || o.reply.status === 507, `${o.what}: success or 507, got ${o.reply.status} ${o.reply.text.slice(0, 300)}`);
        if (o.reply.status === 507) {
          t.equal(errCode(o.reply) ?? o.reply.json?.id, o.reply.json?.id ? 'unavailable' : 'UNAVAILABLE', `${o.what}: the error code clients retry`);
          t.match(errMessage(o.reply) || o.reply.json?.message, /storage is full/, `${o.what}: says storage is full`);
          if (errCode(o.reply)) t.ok(Number(o.reply.headers['retry-after']) > 0, `${o.what}: Retry-After`);
        }
      }
      if (mustFail.test(o.what)) t.not(o.status, 201, `${o.what}: refused while there is no room for it`);
    }
    const skopeoRun = outcomes.find((o) => /skopeo/.test(o.what))!;
    if (skopeoRun.status === 507) t.match(skopeoRun.detail, /storage is full|507|Insufficient Storage/, `skopeo says why: ${skopeoRun.detail?.slice(-300)}`);
    const pull = outcomes.find((o) => /pull/.test(o.what))!;
    t.ok(pull.reply?.bytes.equals(base.layers[0]!.bytes), 'an acknowledged layer pulls byte-identical during the fault');
  };

  /** The sessions stay at their acknowledged offsets (Range) after a refused append. */
  const checkSessions = async (phase: string) => {
    for (const s of sessions) {
      const st = await http('GET', s.location);
      t.equal(st.status, 204, `${phase}: the session is still open (${st.text})`);
      t.equal(st.headers.range, `0-${s.acknowledged - 1}`, `${phase}: at its acknowledged offset`);
    }
  };

  // Phase 1: no byte free.
  t.equal(fs.fill(0), 0, 'the data disk is full');
  const full = await traffic('zero');
  check(full, /8 MiB|16 MiB/);
  await checkSessions('zero');

  // Phase 2: a few MiB free: the uploads start, then run out of space part-way.
  const few = fs.fill(3 * MiB);
  t.ok(few > 2 * MiB && few <= 4 * MiB, `a few MiB free (${few} bytes)`);
  const partial = await traffic('few');
  check(partial, /8 MiB|16 MiB/);
  await checkSessions('few');

  const scraped = await scrape(server.urls.admin);
  const inFlight = ['registry', 'upload', 'api'].reduce((n, host) => n + sampleSum(scraped, 'slipway_http_requests_in_flight', `host="${host}"`), 0);
  t.equal(inFlight, 0, 'no registry, upload or API request left in flight');

  // The disk grows: the same pushes succeed (sessions resumed from their Range, the rest anew).
  fs.unfill();
  fs.resize(320);
  for (const s of sessions) {
    const st = await http('GET', s.location);
    const from = Number(st.headers.range!.split('-')[1]) + 1;
    const rest = await http('PATCH', st.headers.location!, { body: s.blob.subarray(from), headers: { 'content-type': 'application/octet-stream', 'content-range': `${from}-${s.blob.length - 1}` } });
    t.equal(rest.status, 202, `resumed from offset ${from}: ${rest.text}`);
    const put = await http('PUT', withDigest(rest.headers.location!, sha256(s.blob)));
    t.equal(put.status, 201, `the resumed session completes: ${put.text}`);
    acknowledgedBlobs.set(sha256(s.blob), s.blob);
  }
  for (const b of monoBlobs) {
    const r = await pushBlob(target, 'full/web', b);
    t.equal(r.status, 201, `the monolithic upload succeeds again: ${r.text}`);
    acknowledgedBlobs.set(sha256(b), b);
  }
  const again = await skopeo(['copy', ...creds, `dir:${big.dir}`, `docker://${registryHost}/full/web:big`]);
  t.equal(again.code, 0, `the skopeo push succeeds: ${again.stderr}`);
  acknowledgedBlobs.set(big.layers[0]!.digest, big.layers[0]!.bytes);
  acknowledgedManifests.set('big', big.manifest);
  const tagged = await putManifest(target, 'full/web', 'after', base.manifest);
  t.equal(tagged.status, 201, 'manifest PUT works again');
  acknowledgedManifests.set('after', base.manifest);
  for (const phaseOutcomes of [full, partial]) {
    for (const o of phaseOutcomes) if (/manifest PUT/.test(o.what) && o.status === 201) acknowledgedManifests.set(o.what.split(':')[0]!, base.manifest);
  }

  for (const [digest, bytes] of acknowledgedBlobs) {
    const got = await http('GET', `${server.urls.registry}/v2/full/web/blobs/${digest}`, { headers: auth });
    t.ok(got.status === 200 && got.bytes.equals(bytes), `blob ${digest.slice(0, 19)} (${bytes.length} bytes) reads back byte-identical`);
  }
  for (const [tag, bytes] of acknowledgedManifests) {
    const got = await http('GET', `${server.urls.registry}/v2/full/web/manifests/${tag}`, { headers: { ...auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    t.ok(got.status === 200 && got.bytes.equals(bytes), `manifest ${tag} reads back byte-identical`);
  }
  const pulled = join(work.dir, 'pulled');
  mkdirSync(pulled);
  const pull = await skopeo(['copy', '--src-creds', `_:${key}`, '--src-tls-verify=false', `docker://${registryHost}/full/web:big`, `dir:${pulled}`]);
  t.equal(pull.code, 0, pull.stderr);
  t.ok(readFileSync(join(pulled, big.layers[0]!.digest.slice(7))).equals(big.layers[0]!.bytes), 'skopeo pulls the layer pushed after the fault byte-identical');

  const drainStart = Date.now();
  await server.stop();
  t.equal(await server.exited, 0, 'the server drains and exits 0');
  t.ok(Date.now() - drainStart < DRAIN_BOUND_MS, `drained in ${Date.now() - drainStart} ms`);
  server = undefined;
  const fsck = await runCli(['fsck', '--data', fs.dir, '--full', '--json']);
  t.equal(fsck.code, 0, `fsck --full is clean after recovery: ${fsck.stdout}${fsck.stderr}`);
  t.same(JSON.parse(fsck.stdout).problems, [], 'no problems');
});

