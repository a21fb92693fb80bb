/**
 * The embedded store's prewarm (engine/storage/lmdb-prewarm.ts): after a start it reads every
 * record of the hot keyspaces once, so their pages are mapped into the process. Checked on a real
 * LMDB store reopened in this process (a fresh memory map): the map's resident pages, from
 * /proc/self/smaps, grow from the few a start touches to most of the file; every hot record is
 * read and nothing else; the event loop turns between slices (a timer fires before it ends); a
 * byte budget stops it early; closing the store stops it without an error. And a server started
 * on the store logs its prewarm once listening, or none with `prewarm_mib` 0. Commits at random
 * moments beside a prewarm all land and it still finishes.
 */
import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { tempDir } from '../helpers/server.js';
import { startSpawned, waitFor } from '../helpers/harness.js';
import { http } from '../helpers/http.js';
import { openStore } from '../../engine/store.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { PREWARM_SLICE_ENTRIES } from '../../engine/storage/lmdb-prewarm.js';
import { manifests, repositoryBlobs, tags } from '../../engine/registry/keyspaces.js';
import { events as webhookEvents } from '../../engine/webhooks/keyspaces.js';
import type { Digest } from '../../engine/digest.js';

const TAGS = 3000;
const MANIFESTS = 6000;
const LINKS = 4000;

/** Resident KiB of this process's mappings of `file` (/proc/self/smaps). */
function residentKiB(file: string): number {
  let kib = 0;
  let inFile = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.endsWith(file);
    else if (inFile && line.startsWith('Rss:')) kib += Number(/(\d+) kB/.exec(line)![1]);
  }
  return kib;
}

const tmp = tempDir();
t.teardown(() => tmp.cleanup());
const dataFile = join(tmp.dir, 'lmdb', 'data.mdb');

// A store of about 10 MiB: manifests of ~1.2 KiB, tags, blob links, and records of a keyspace
// that is not hot (webhook events), which a prewarm leaves alone.
{
  const store = await openStore(tmp.dir);
  const text = JSON.stringify({ schemaVersion: 2, layers: Array.from({ length: 12 }, () => ({ digest: `sha256:${randomBytes(32).toString('hex')}`, size: 1 })) });
  for (let i = 0; i < MANIFESTS; i += 500) {
    await store.metadata.transact((tx) => {
      for (let j = i; j < i + 500; j++) {
        const digest = `sha256:${randomBytes(32).toString('hex')}` as Digest;
        tx.put(manifests, digest, { mediaType: 'application/vnd.docker.distribution.manifest.v2+json', text, configDigest: digest, layers: [], blobs: [], links: 1, createdAt: j, image: {} as never });
        if (j < TAGS) tx.put(tags, `app/web\u001fv${j}`, { digest, updatedAt: j });
        if (j < LINKS) tx.put(repositoryBlobs, `app/web\u001f${digest}`, j);
        if (j < 2000) tx.put(webhookEvents, `event-${j}`, { filler: text } as never);
      }
    });
  }
  await store.close();
}

t.test('a prewarm maps the hot keyspaces\' pages and reads every hot record once', async (t) => {
  const store = await openStore(tmp.dir);
  t.teardown(() => store.close());
  const metadata = store.metadata as LmdbMetadataStore;
  t.ok(metadata instanceof LmdbMetadataStore, 'the embedded store');
  const fileKiB = statSync(dataFile).size / 1024;
  const before = residentKiB(dataFile);

  let turns = 0;
  let done = false;
  const counting = (async () => { while (!done) { turns++; await nextTurn(); } })();
  const result = await metadata.prewarm(1024 ** 3);
  done = true;
  await counting;
  const after = residentKiB(dataFile);
  t.comment(`data.mdb ${Math.round(fileKiB)} KiB; resident ${before} KiB before, ${after} KiB after; ${result.entries} records in ${result.ms} ms over ${turns} turns`);

  t.equal(result.complete, true);
  // Every record of the three hot keyspaces written here, plus whatever the store's start wrote
  // to hot keyspaces (none of these); the webhook events are not read.
  t.equal(result.entries, TAGS + MANIFESTS + LINKS, 'each hot record once, nothing else');
  t.ok(turns >= Math.floor((TAGS + MANIFESTS + LINKS) / PREWARM_SLICE_ENTRIES) - 1, 'the event loop turned between slices');
  t.ok(before < fileKiB * 0.25, `a reopened store has few pages mapped (${before} of ${Math.round(fileKiB)} KiB)`);
  t.ok(after > fileKiB * 0.6, `after the prewarm most of them are (${after} of ${Math.round(fileKiB)} KiB)`);
});

t.test('a budget stops a prewarm early; closing the store stops it quietly', async (t) => {
  const store = await openStore(tmp.dir);
  const metadata = store.metadata as LmdbMetadataStore;
  const budget = 64 * 1024;
  const small = await metadata.prewarm(budget);
  t.equal(small.complete, false, 'stopped by the budget');
  t.ok(small.bytes >= budget, 'it read the budget');
  t.ok(small.entries < TAGS + MANIFESTS + LINKS, `and not everything (${small.entries} records)`);

  const running = metadata.prewarm(1024 ** 3);
  await nextTurn();
  await store.close();
  const stopped = await running;
  t.equal(stopped.complete, false, 'stopped by the close, without an error');
  t.ok(stopped.entries < TAGS + MANIFESTS + LINKS);
});

t.test('a server prewarms its store once listening, unless prewarm_mib is 0', async (t) => {
  const prewarmLine = (out: string) => out.split('\n').map((l) => { try { return JSON.parse(l) as Record<string, unknown>; } catch { return undefined; } })
    .find((e) => e?.msg === 'embedded store prewarmed: hot records read once');
  const on = await startSpawned({ dataDir: tmp.dir, env: { SLIPWAY_GC_INTERVAL: '0' } });
  const line = await waitFor('the prewarm log line', () => prewarmLine(on.output()), { timeoutMs: 60_000, intervalMs: 100 });
  await on.stop();
  t.match(line, { complete: true, entries: Number }, 'logged with what it read');
  t.ok((line.entries as number) >= TAGS + MANIFESTS + LINKS, `every hot record (${line.entries}, the server's own records too)`);

  const off = await startSpawned({ dataDir: tmp.dir, env: { SLIPWAY_GC_INTERVAL: '0', SLIPWAY_PREWARM_MIB: '0' } });
  t.equal((await http('GET', `${off.urls.registry}/v2/`)).status, 401, 'serving');
  await off.stop();
  // A prewarm that ran would have logged, even one cut short by the stop.
  t.equal(prewarmLine(off.output()), undefined, 'prewarm_mib 0: none');
});

t.test('a prewarm beside commits: every commit lands, the prewarm finishes, nothing it read is changed', async (t) => {
  const store = await openStore(tmp.dir);
  t.teardown(() => store.close());
  const metadata = store.metadata as LmdbMetadataStore;
  const before = new Map<string, unknown>();
  for (const { key, value } of await store.metadata.range(tags, { prefix: 'app/web\u001f' })) before.set(key, value);
  // Writers at random moments while the prewarm reads: new tags, moved tags, removed tags.
  const added: string[] = [];
  const removed: string[] = [];
  const running = metadata.prewarm(1024 ** 3);
  let settled = false;
  let duringPrewarm = 0;
  void running.finally(() => { settled = true; });
  const writers = Array.from({ length: 4 }, async (_, w) => {
    for (let i = 0; i < 25; i++) {
      await new Promise((r) => setTimeout(r, Math.random() * 4));
      const k = `app/race\u001fw${w}-${i}`;
      await store.metadata.transact((tx) => tx.put(tags, k, { digest: `sha256:${'a'.repeat(64)}` as Digest, updatedAt: i }));
      added.push(k);
      if (!settled) duringPrewarm++;
      if (i % 5 === 0) {
        const gone = `app/web\u001fv${w * 100 + i}`;
        await store.metadata.transact((tx) => tx.remove(tags, gone));
        removed.push(gone);
      }
    }
  });
  await Promise.all(writers);
  const result = await running;
  t.comment(`${duringPrewarm} commits landed while the prewarm ran; ${result.entries} records in ${result.ms} ms`);
  t.ok(duringPrewarm > 0, 'commits landed while it ran');
  t.equal(result.complete, true, 'the prewarm finished');
  t.ok(result.entries >= TAGS + MANIFESTS + LINKS - removed.length, 'and read every record that stayed');
  for (const k of added) t.ok(await store.metadata.get(tags, k), `${k} committed`);
  for (const k of removed) t.equal(await store.metadata.get(tags, k), undefined, `${k} removed`);
  for (const [k, v] of before) if (!removed.includes(k)) t.same(await store.metadata.get(tags, k), v, `${k} unchanged`);
});
