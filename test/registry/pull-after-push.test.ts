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

  const monolithic = async (bytes: Buffer) => (await pushBlob(me, 'cached/web', bytes)).status;
  const chunked = async (bytes: Buffer) => {
    let location = await startUpload(me, 'cached/web');
    for (let at = 0; at < bytes.length; at += 4 * MiB) {
      const part = bytes.subarray(at, Math.min(bytes.length, at + 4 * MiB));
      const r = await http('PATCH', location, {
        headers: { ...me.auth, 'content-type': 'application/octet-stream', 'content-range': `${at}-${at + part.length - 1}`, 'content-length': String(part.length) },
        body: part,
      });
      if (r.status !== 202) return r.status;
      location = new URL(String(r.headers.location), location).toString();
    }
    return (await http('PUT', withDigest(location, sha256(bytes)), { headers: { ...me.auth, 'content-length': '0' } })).status;
  };

  // The kernel may reclaim clean pages at any moment when the machine (or the CI's memory
  // group) is short of memory, which no writer can prevent. So residency is read right after
  // each acknowledgement, and a push found short is tried again with new bytes, up to three
  // times: a writer that bypassed the cache (O_DIRECT) leaves the aligned pages out every time.
  const ATTEMPTS = 3;
  for (const [name, push, size] of [['monolithic', monolithic, 12 * MiB + 4097], ['chunked', chunked, 3 * 4 * MiB + 1]] as const) {
    const seen: string[] = [];
    let whole: Buffer | undefined;
    for (let attempt = 1; attempt <= ATTEMPTS && !whole; attempt++) {
      const bytes = randomBytes(size);
      t.equal(await push(bytes), 201, `${name} push ${attempt} acknowledged`);
      const resident = residentBytes(blobFile(sha256(bytes)));
      const pages = Math.ceil(bytes.length / 4096) * 4096;
      seen.push(`${resident} of ${pages}`);
      if (resident === pages) whole = bytes;
    }
    t.ok(whole, `${name}: every page of a ${size}-byte blob is in the page cache when its push is acknowledged (resident bytes per push: ${seen.join('; ')})`);
    if (!whole) continue;
    const digest = sha256(whole);
    const got = await http('GET', `${me.registry}/v2/cached/web/blobs/${digest}`, { headers: me.auth });
    t.equal(got.status, 200);
    t.ok(got.bytes.equals(whole), `${name}: the pull right after the push returns every byte`);
  }
});

