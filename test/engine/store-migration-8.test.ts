/**
 * A data directory at schema 7 (written here with lmdb-js as that build stored it: msgpack with
 * shared structures, manifest bytes as binary) opens with this build at schema 8: every manifest
 * record holds its bytes as text (UTF-8, or base64 for bytes that are not UTF-8, which older
 * builds accepted), every record is JSON-representable, and a manifest GET serves exactly the
 * bytes pushed (their sha256 is the digest) whether they were stored as a Buffer or a
 * Uint8Array.
 */
import t from 'tap';
import { open } from 'lmdb';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { openStore, key } from '../../engine/store.js';
import { SCHEMA_VERSION, schemaVersion } from '../../engine/migrations.js';
import * as reg from '../../engine/registry/keyspaces.js';
import { ManualClock } from '../../engine/clock.js';
import { Registry, manifestTotals } from '../../engine/registry/registry.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { checkValue } from '../../engine/storage/metadata.js';
import type { Digest } from '../../engine/digest.js';
import { tempDir } from '../helpers/server.js';

const now = Date.UTC(2026, 0, 1);
const C = `sha256:${'c'.repeat(64)}` as Digest;
const L = `sha256:${'d'.repeat(64)}` as Digest;

const sha = (b: Uint8Array) => `sha256:${createHash('sha256').update(b).digest('hex')}` as Digest;

function manifestJson(note: string): Buffer {
  return Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', digest: C, size: 5 },
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', digest: L, size: 10 }],
    note,
  }, null, 3));
}

function legacyRecord(bytes: Uint8Array) {
  return {
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json', bytes, configDigest: C,
    layers: [{ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', digest: L, size: 10 }], blobs: [C, L], links: 1, createdAt: now,
    image: { architecture: 'amd64', os: 'linux', entrypoint: null, cmd: ['sh'], workingDir: '', env: [], user: '', ignoredInstructions: [], layerCount: 1, whiteouts: 0, warnings: [] },
  };
}

t.test('schema 7 → 8: manifest bytes become text, byte-identical', async (t) => {
  const tmp = tempDir('slipway-migrate8-');
  t.teardown(() => tmp.cleanup());
  const notUtf8 = manifestJson('~');
  notUtf8[notUtf8.lastIndexOf(0x7e)] = 0xff;
  const pushed: Array<[string, Uint8Array]> = [
    ['ascii as Buffer', manifestJson('plain')],
    ['non-ASCII as Uint8Array', new Uint8Array(manifestJson('Grüße, 日本, 🚢'))],
    ['with a BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), manifestJson('bom')])],
    ['not UTF-8', notUtf8],
  ];
  const env = open({ path: join(tmp.dir, 'lmdb'), maxDbs: 64, encoding: 'msgpack' });
  const db = (name: string) => env.openDB(name, { encoding: 'msgpack', sharedStructuresKey: Symbol.for('structures') });
  await db('meta').put('schema', 7);
  await db('repositories').put('app/web', { name: 'app/web', appId: 'app-1', createdAt: now });
  for (const [, bytes] of pushed) {
    const digest = sha(bytes);
    await db('manifests').put(digest, legacyRecord(bytes));
    await db('repository-manifests').put(key('app/web', digest), now);
  }
  await env.close();

  const store = await openStore(tmp.dir);
  t.equal(await schemaVersion(store.metadata), SCHEMA_VERSION, 'schema stamped');
  t.ok(SCHEMA_VERSION >= 8, 'schema 8 or later');
  const records = await store.metadata.range(reg.manifests);
  t.equal(records.length, pushed.length, 'every manifest record kept');
  for (const { key: digest, value } of records) {
    t.notOk('bytes' in value, `${digest.slice(7, 15)}: no binary field left`);
    t.equal(typeof value.text, 'string');
    t.doesNotThrow(() => checkValue(reg.manifests, digest, value), 'the record is JSON-representable');
  }
  const registry = new Registry(store.metadata, new FsBlobBackend(tmp.dir), new ManualClock(now), async () => { throw new Error('no inspection in this test'); });
  for (const [label, bytes] of pushed) {
    const digest = sha(bytes);
    const record = (await store.metadata.get(reg.manifests, digest))!;
    t.equal(record.encoding, label === 'not UTF-8' ? 'base64' : undefined, `${label}: stored as ${record.encoding ?? 'UTF-8 text'}`);
    const got = await registry.manifestContent('app/web', digest);
    t.ok(got.bytes.equals(Buffer.from(bytes)), `${label}: GET serves the bytes pushed`);
    t.equal(sha(got.bytes), digest, `${label}: which hash to the digest`);
  }
  const bytesPushed = pushed.reduce((n, [, bytes]) => n + bytes.length, 0);
  t.same(await manifestTotals(store.metadata), { manifests: pushed.length, bytes: bytesPushed }, 'the manifest totals (schema 9) count the migrated records');
  const before = JSON.stringify(await store.metadata.range(reg.manifests));
  await store.close();
  const again = await openStore(tmp.dir);
  t.equal(JSON.stringify(await again.metadata.range(reg.manifests)), before, 'reopening a migrated store changes nothing');
  await again.close();
});
