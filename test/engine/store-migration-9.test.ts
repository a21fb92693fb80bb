/**
 * A data directory at schema 8 (written here with lmdb-js as that build stored it: blob and
 * manifest records, no totals) opens with this build at schema 9 with the store totals counted
 * from the records (engine/migrations.ts, storage/running-totals.ts): the blob records and their
 * sizes, the manifest records and their bytes (text, or base64 that counts its decoded bytes).
 * Reopening changes nothing; records written after the migration move the totals by exactly
 * themselves; and a schema 7 store migrated through 8 counts its manifests the same way.
 */
import t from 'tap';
import { open } from 'lmdb';
import { join } from 'node:path';
import { openStore } from '../../engine/store.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import { blobTotals, recordVerifiedBlobInTransaction } from '../../engine/blobs/refs.js';
import { manifestTotals } from '../../engine/registry/registry.js';
import type { Digest } from '../../engine/digest.js';
import { tempDir } from '../helpers/server.js';

const now = Date.UTC(2026, 0, 1);
const digest = (c: string) => `sha256:${c.repeat(64)}` as Digest;

function manifestRecord(text: string, encoding?: 'base64') {
  return {
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json', text, ...(encoding ? { encoding } : {}), configDigest: digest('c'),
    layers: [], blobs: [digest('c')], links: 1, createdAt: now,
    image: { architecture: 'amd64', os: 'linux', entrypoint: null, cmd: ['sh'], workingDir: '', env: [], user: '', ignoredInstructions: [], layerCount: 0, whiteouts: 0, warnings: [] },
  };
}

t.test('schema 8 → 9: the store totals are counted from the records', async (t) => {
  const tmp = tempDir('slipway-migrate9-');
  t.teardown(() => tmp.cleanup());
  const env = open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack' });
  const db = (name: string) => env.openDB(name, { encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') });
  await db('meta').put('schema', 8);
  const sizes = [5, 1000, 123_456, 0];
  for (const [i, size] of sizes.entries()) await db('blobs').put(digest('abcd'[i]!), { size, createdAt: now, refs: 1, ...(i === 3 ? { quarantined: 'test' } : {}) });
  const texts = ['{"schemaVersion":2,"note":"Grüße"}', '{"schemaVersion":2}'];
  await db('manifests').put(digest('1'), manifestRecord(texts[0]!));
  await db('manifests').put(digest('2'), manifestRecord(texts[1]!));
  await db('manifests').put(digest('3'), manifestRecord(Buffer.from([0xff, 0x7b, 0x7d]).toString('base64'), 'base64'));
  await env.close();

  const store = await openStore(tmp.dir);
  t.equal(await schemaVersion(store.metadata), SCHEMA_VERSION, 'schema stamped');
  t.equal(SCHEMA_VERSION, 9);
  const manifestBytes = Buffer.byteLength(texts[0]!) + Buffer.byteLength(texts[1]!) + 3;
  t.same(await blobTotals(store.metadata), { blobs: 4, bytes: 124_461 }, 'every blob record and its size, quarantined ones included');
  t.same(await manifestTotals(store.metadata), { manifests: 3, bytes: manifestBytes }, 'every manifest record and its bytes (base64 decoded)');
  await store.close();

  const again = await openStore(tmp.dir);
  t.same(await blobTotals(again.metadata), { blobs: 4, bytes: 124_461 }, 'reopening counts nothing twice');
  await again.metadata.transact((tx) => recordVerifiedBlobInTransaction(tx, digest('e'), 77, now));
  await again.metadata.transact((tx) => recordVerifiedBlobInTransaction(tx, digest('b'), 1000, now));
  await again.metadata.transact((tx) => recordVerifiedBlobInTransaction(tx, digest('d'), 10, now));
  t.same(await blobTotals(again.metadata), { blobs: 5, bytes: 124_461 + 77 + 10 }, 'a new record counts; an intact one pushed again does not; a quarantined one healed with other bytes counts its new size');
  await again.close();
});
