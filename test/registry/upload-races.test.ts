/**
 * Race suite for upload sessions, through the real HTTP interface. For every pair of upload
 * operations (PATCH, PATCH with Content-Range, PUT with and without body, DELETE, status GET,
 * the reaper), the second starts while the first is mid-body, with seeded random timing and
 * sizes, many times. After each round: no 5xx; a committed blob is served with bytes that hash
 * to its digest, are what its record and file say, and are made of whole chunks the client
 * sent; an ended session stays ended (status 404 BLOB_UPLOAD_UNKNOWN, PATCH and PUT 404); an
 * open one completes intact. At the end every blob record in the data directory matches its
 * file (size and sha256). A cross-account round checks that an account racing its own session
 * on a layer cannot stop another account from pushing and pulling that layer byte-identical.
 *
 * SLIPWAY_RACE_SEED=<n> replays a run; SLIPWAY_RACE_ROUNDS=<n> sets the rounds per pair (default 12; about 15 s).
 */
import t from 'tap';
import type { Test } from 'tap';
import { readFileSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { basic, createApp, errCode, http, type Reply } from '../helpers/http.js';
import { createAccount } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { startUpload, withDigest, pushBuiltImage, type Target } from '../helpers/registry.js';
import { buildImage, sampleSpec, sha256 } from '../helpers/image.js';
import { openRequest } from '../helpers/uploads.js';
import * as blobKs from '../../engine/blobs/keyspaces.js';

const seed = Number(process.env.SLIPWAY_RACE_SEED ?? Math.floor(Math.random() * 2 ** 31));
const ROUNDS = Number(process.env.SLIPWAY_RACE_ROUNDS ?? 12);
t.comment(`upload race seed ${seed} (replay with SLIPWAY_RACE_SEED=${seed})`);

/** mulberry32: a small seeded PRNG. */
let state = seed >>> 0;
function rand(): number {
  state = (state + 0x6d2b79f5) >>> 0;
  let x = state;
  x = Math.imul(x ^ (x >>> 15), x | 1);
  x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
}
const between = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
/** Random bytes from the seeded PRNG. */
function bytes(n: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rand() * 256);
  return b;
}
/** Deliberate random pauses between steps: the interleaving is the subject. */
const pause = () => new Promise((r) => setTimeout(r, between(0, 12)));

const ts = await startInProcess({ env: { SLIPWAY_UPLOAD_TTL: '1' } });
t.teardown(() => ts.stop());
const urls = ts.server.urls;
const dataDir = ts.server.config.dataDir;
const owner: Target = { registry: urls.registry, auth: basic('_', ts.operator.apiKey) };
await createApp(urls.api, ts.operator.apiKey, 'race');
const REPO = 'race/web';
const octet = { 'content-type': 'application/octet-stream' };
const idOf = (loc: string) => new URL(loc).pathname.split('/').pop()!;
const blobFile = (d: string) => join(dataDir, 'blobs', 'sha256', d.slice(7, 9), d.slice(7));

type Op = 'PATCH' | 'PATCH-CR' | 'PUT-BODY' | 'PUT' | 'DELETE' | 'STATUS' | 'REAPER';
const BODY_OPS: Op[] = ['PATCH', 'PATCH-CR', 'PUT-BODY'];
const ALL_OPS: Op[] = [...BODY_OPS, 'PUT', 'DELETE', 'STATUS', 'REAPER'];

interface Session { loc: string; chunks: Buffer[]; offset: number }

/** What one operation answered (status 0 for the reaper). */
interface Outcome { op: Op; status: number; reply?: { status: number; text: string; headers: Record<string, unknown> }; digest?: string }

/** Starts a body operation: returns functions to finish its body and its answer. */
function startBody(op: Op, s: Session): { chunk: Buffer; sendPrefix(): Promise<void>; finish(): void; done: Promise<Outcome> } {
  const chunk = bytes(between(1, 300_000));
  const headers: Record<string, string> = { ...octet, 'content-length': String(chunk.length) };
  if (op === 'PATCH-CR') headers['content-range'] = `${s.offset}-${s.offset + chunk.length - 1}`;
  // A PUT with body commits what the client believes the session holds plus this chunk.
  const digest = sha256(Buffer.concat([...s.chunks, chunk]));
  const url = op === 'PUT-BODY' ? withDigest(s.loc, digest) : s.loc;
  const req = openRequest(op === 'PUT-BODY' ? 'PUT' : 'PATCH', url, headers);
  const cut = between(0, chunk.length - 1);
  return {
    chunk,
    sendPrefix: () => req.send(chunk.subarray(0, cut)),
    finish: () => req.end(chunk.subarray(cut)),
    done: req.response.then((reply) => ({ op, status: reply.status, reply, digest })),
  };
}

/** Runs the second operation (a body one is sent whole); its chunk, if any, goes to `sent`. */
async function runOther(op: Op, s: Session, sent: Buffer[]): Promise<Outcome> {
  if (BODY_OPS.includes(op)) {
    const b = startBody(op, s);
    sent.push(b.chunk);
    await b.sendPrefix();
    b.finish();
    return b.done;
  }
  const toReply = (r: Reply) => ({ status: r.status, text: r.text, headers: r.headers as Record<string, unknown> });
  if (op === 'REAPER') {
    ts.clock.advance(1500); // past the 1 s lifetime: every session not in use is stale
    await ts.server.reapUploads();
    return { op, status: 0 };
  }
  if (op === 'STATUS') return { op, ...(await http('GET', s.loc, {}).then((r) => ({ status: r.status, reply: toReply(r) }))) };
  if (op === 'DELETE') return { op, ...(await http('DELETE', s.loc, {}).then((r) => ({ status: r.status, reply: toReply(r) }))) };
  const digest = sha256(Buffer.concat(s.chunks));
  return { op, digest, ...(await http('PUT', withDigest(s.loc, digest), {}).then((r) => ({ status: r.status, reply: toReply(r) }))) };
}

/** The blob as served must hash to its digest and match its record and file. */
async function checkBlob(t: Test, digest: string, where: string): Promise<Buffer | undefined> {
  const r = await http('GET', `${urls.registry}/v2/${REPO}/blobs/${digest}`, { headers: owner.auth });
  t.equal(r.status, 200, `${where}: committed blob is served`);
  if (r.status !== 200) return undefined;
  t.equal(sha256(r.bytes), digest, `${where}: served bytes hash to the digest`);
  const rec = await ts.server.store.metadata.get(blobKs.blobs, digest);
  t.equal(rec?.size, r.bytes.length, `${where}: record size is the served length`);
  t.equal(statSync(blobFile(digest)).size, r.bytes.length, `${where}: file size too`);
  return r.bytes;
}

/** `blob` is made of whole chunks from `sent`, in some order. */
function madeOfChunks(blob: Buffer, sent: Buffer[]): boolean {
  let p = 0;
  const left = [...sent];
  while (p < blob.length) {
    const i = left.findIndex((c) => c.length > 0 && c.length <= blob.length - p && blob.subarray(p, p + c.length).equals(c));
    if (i < 0) return false;
    p += left[i]!.length;
    left.splice(i, 1);
  }
  return true;
}


async function round(t: Test, first: Op, second: Op, n: number): Promise<void> {
  const where = `${first} vs ${second} #${n} (seed ${seed})`;
  const loc = await startUpload(owner, REPO);
  const s: Session = { loc, chunks: [], offset: 0 };
  // Some rounds start from a session that already holds bytes.
  if (rand() < 0.6) {
    const c = bytes(between(1, 200_000));
    const r = await http('PATCH', loc, { headers: octet, body: c });
    t.equal(r.status, 202, `${where}: setup PATCH`);
    s.chunks.push(c);
    s.offset = c.length;
  }
  const sent = [...s.chunks];
  const a = startBody(first, s);
  sent.push(a.chunk);
  await a.sendPrefix();
  await pause();
  const bPromise = runOther(second, s, sent);
  await pause();
  a.finish();
  const outcomes = await Promise.all([a.done, bPromise]);
  for (const o of outcomes) {
    if (o.op !== 'REAPER') t.ok(o.status > 0 && o.status < 500, `${where}: ${o.op} answered ${o.status} ${o.reply?.text.slice(0, 200) ?? ''}`);
    if (o.status === 409) t.equal(errCode({ json: JSON.parse(o.reply!.text) } as Reply), 'BLOB_UPLOAD_INVALID', `${where}: 409 is BLOB_UPLOAD_INVALID`);
  }
  let ended = false;
  for (const o of outcomes) {
    if (o.status === 201) {
      ended = true;
      const blob = await checkBlob(t, o.digest!, where);
      if (blob) t.ok(madeOfChunks(blob, sent), `${where}: the blob is whole chunks the client sent`);
    }
    if ((o.op === 'DELETE' && o.status === 204) || (o.status === 400 && o.reply && /DIGEST_INVALID|BLOB_UPLOAD_INVALID/.test(o.reply.text))) ended = true;
  }
  const status = await http('GET', loc, {});
  t.ok(status.status === 204 || status.status === 404, `${where}: status answers ${status.status}`);
  if (ended || status.status === 404) {
    t.equal(status.status, 404, `${where}: an ended session stays ended`);
    t.equal(errCode(status), 'BLOB_UPLOAD_UNKNOWN');
    t.equal((await http('PATCH', loc, { headers: octet, body: Buffer.from('late') })).status, 404, `${where}: PATCH to an ended session`);
    t.equal((await http('PUT', withDigest(loc, sha256('late')), {})).status, 404, `${where}: PUT to an ended session`);
    t.notOk(await ts.server.store.metadata.get(blobKs.uploads, idOf(loc)), `${where}: no record`);
    t.notOk(existsSync(join(dataDir, 'uploads', idOf(loc))), `${where}: no file`);
    return;
  }
  // Still open: what it holds is whole chunks, and it completes into a true blob.
  const held = readFileSync(join(dataDir, 'uploads', idOf(loc)));
  t.ok(madeOfChunks(held, sent), `${where}: the session holds whole chunks the client sent`);
  t.equal(status.headers.range, `0-${Math.max(0, held.length - 1)}`, `${where}: Range is the bytes held`);
  const put = await http('PUT', withDigest(loc, sha256(held)), {});
  t.equal(put.status, 201, `${where}: the open session completes (${put.text.slice(0, 200)})`);
  const blob = await checkBlob(t, sha256(held), where);
  if (blob) t.ok(blob.equals(held));
}

t.test('every pair of upload operations, the second started while the first is mid-body', async (t) => {
  for (const first of BODY_OPS) {
    for (const second of ALL_OPS) {
      for (let n = 0; n < ROUNDS; n++) await round(t, first, second, n);
    }
  }
});

t.test('every blob record matches its file, size and sha256', async (t) => {
  let n = 0;
  for (const { key, value } of await ts.server.store.metadata.range(blobKs.blobs)) {
    const bytesOnDisk = readFileSync(blobFile(key));
    t.equal(bytesOnDisk.length, value.size, `${key} size`);
    t.equal(sha256(bytesOnDisk), key, `${key} sha256`);
    n++;
  }
  t.ok(n > 0, `${n} blobs checked`);
});

t.test('an account racing its own session does not affect what another account pushes and pulls', async (t) => {
  const b = await createAccount(ts, 'race-b@example.com');
  await createApp(urls.api, b.apiKey, 'raceb');
  const bTarget: Target = { registry: urls.registry, auth: basic('_', b.apiKey) };
  for (let n = 0; n < 3; n++) {
    const img = await buildImage(join(dataDir, '..', `race-img-${process.pid}-${n}`), sampleSpec());
    const layer = img.layers[1]!;
    // A: a session on B's layer, the last MiB mid-body when a PUT without body and a DELETE arrive.
    const loc = await startUpload(owner, REPO);
    const head = layer.bytes.length - 1024 * 1024;
    t.equal((await http('PATCH', loc, { headers: octet, body: layer.bytes.subarray(0, head) })).status, 202);
    const req = openRequest('PATCH', loc, { ...octet, 'content-length': String(layer.bytes.length - head + 1) });
    await req.send(layer.bytes.subarray(head));
    await pause();
    const racing = Promise.all([http('PUT', withDigest(loc, layer.digest), {}), http('DELETE', loc, {})]);
    // B pushes an image with that layer meanwhile, then pulls every blob.
    const pushed = pushBuiltImage(bTarget, 'raceb/web', `v${n}`, img);
    for (const r of await racing) t.ok(r.status < 500, `A's racing request answered ${r.status}`);
    req.abort();
    await req.response;
    await pushed;
    for (const d of [img.configDigest, ...img.layers.map((l) => l.digest)]) {
      const r = await http('GET', `${urls.registry}/v2/raceb/web/blobs/${d}`, { headers: bTarget.auth });
      t.equal(r.status, 200);
      t.equal(sha256(r.bytes), d, 'B pulls byte-identical');
    }
    const m = await http('GET', `${urls.registry}/v2/raceb/web/manifests/v${n}`, { headers: { ...bTarget.auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    t.equal(m.status, 200);
    t.ok(m.bytes.equals(img.manifest), 'manifest byte-identical');
  }
});
