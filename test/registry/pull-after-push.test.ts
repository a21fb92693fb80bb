/**
 * A blob pulled right after its push is served from memory: the filesystem store writes pushed
 * bytes through the page cache (engine/blobs/fs-writer.ts; docs/storage.md "Pulls and the page
 * cache"), so once the push is acknowledged every page of the blob's file is resident, for a
 * monolithic push and a chunked one alike, and the pull returns the same bytes. Residency is
 * read the way an operator would, with util-linux's `fincore`. (When pushed bytes were written
 * with `O_DIRECT`, none of the aligned pages were resident and the first pull read the disk.)
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startInProcess } from '../helpers/harness.js';
import { tempDir } from '../helpers/server.js';
import { basic, createApp, http } from '../helpers/http.js';
import { pushBlob, startUpload, withDigest, type Target } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';

const FINCORE = '/usr/bin/fincore';
const MiB = 1024 * 1024;

function fincoreSkip(): string | false {
  if (existsSync(FINCORE)) return false;
  if (process.env.CI) throw new Error(`${FINCORE} is missing; it comes with util-linux`);
  return `skipped: ${FINCORE} not installed (apt-get install util-linux)`;
}

/** Bytes of `path` in the page cache, by `fincore`. */
function residentBytes(path: string): number {
  return Number(execFileSync(FINCORE, ['--bytes', '--noheadings', '--raw', '--output', 'RES', path], { encoding: 'utf8' }).trim());
}

t.test('pushed blobs are in the page cache when acknowledged, and pull back whole', { skip: fincoreSkip() }, async (t) => {
  const tmp = tempDir('slipway-pull-after-push-');
  const server = await startInProcess({ dataDir: join(tmp.dir, 'data') });
  t.teardown(async () => { await server.stop(); tmp.cleanup(); });
  const key = server.apiKey!;
  const me: Target = { registry: server.urls.registry, auth: basic('_', key) };
  await createApp(server.urls.api, key, 'cached');
  const blobFile = (digest: string) => join(server.dataDir, 'blobs', 'sha256', digest.slice(7, 9), digest.slice(7));

  const single = randomBytes(12 * MiB + 4097);
  t.equal((await pushBlob(me, 'cached/web', single)).status, 201, 'monolithic push acknowledged');

  const chunked = randomBytes(3 * 4 * MiB + 1);
  let location = await startUpload(me, 'cached/web');
  for (let at = 0; at < chunked.length; at += 4 * MiB) {
    const part = chunked.subarray(at, Math.min(chunked.length, at + 4 * MiB));
    const r = await http('PATCH', location, {
      headers: { ...me.auth, 'content-type': 'application/octet-stream', 'content-range': `${at}-${at + part.length - 1}`, 'content-length': String(part.length) },
      body: part,
    });
    t.equal(r.status, 202, `PATCH at ${at}`);
    location = new URL(String(r.headers.location), location).toString();
  }
  const put = await http('PUT', withDigest(location, sha256(chunked)), { headers: { ...me.auth, 'content-length': '0' } });
  t.equal(put.status, 201, 'chunked push acknowledged');

  for (const [name, bytes] of [['monolithic', single], ['chunked', chunked]] as const) {
    const digest = sha256(bytes);
    const pages = Math.ceil(bytes.length / 4096) * 4096;
    t.equal(residentBytes(blobFile(digest)), pages, `${name}: every page of the ${bytes.length}-byte blob is in the page cache`);
    const got = await http('GET', `${me.registry}/v2/cached/web/blobs/${digest}`, { headers: me.auth });
    t.equal(got.status, 200);
    t.ok(got.bytes.equals(bytes), `${name}: the pull right after the push returns every byte`);
  }
});
