/**
 * Race: SIGTERM with a short drain deadline at a random moment while several clients upload
 * blobs in random-sized chunks with random pauses. After a restart, every blob whose PUT was
 * answered 201 reads back byte-identical, every session with an acknowledged chunk is still
 * there at that offset (or at the end of the chunk in flight, if the server recorded it just as
 * the connection was cut) and completes when resumed, and `slipway fsck --full` finds nothing.
 */
import t, { type Test } from 'tap';
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { runCli, tempDir } from '../helpers/server.js';
import { startSpawned, waitFor, type SpawnedSlipway } from '../helpers/harness.js';
import { basic, createApp, http } from '../helpers/http.js';
import { startUpload, withDigest } from '../helpers/registry.js';

const ROUNDS = 4;
/** The operator API key of the round's data directory (a restart keeps it). */
let key = '';
const CLIENTS = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Client {
  blob: Buffer;
  digest: string;
  location?: string;
  /** Bytes the server acknowledged (last 202's Range end + 1). */
  acked: number;
  /** Length of the chunk sent when the connection broke (0 when none). */
  inFlight: number;
  done: boolean;
}

async function upload(c: Client, registry: string, auth: Record<string, string>, repo: string): Promise<void> {
  try {
    c.location = await startUpload({ registry, auth }, repo);
    while (c.acked < c.blob.length) {
      const len = Math.min(c.blob.length - c.acked, randomInt(64 * 1024, 2 * 1024 * 1024));
      c.inFlight = len;
      const r = await http('PATCH', c.location, { body: c.blob.subarray(c.acked, c.acked + len), headers: { 'content-type': 'application/octet-stream', 'content-range': `${c.acked}-${c.acked + len - 1}` } });
      if (r.status !== 202) return;
      c.acked += len;
      c.inFlight = 0;
      c.location = r.headers.location!;
      await sleep(randomInt(0, 30)); // deliberate: clients pause at random between chunks (the race)
    }
    const put = await http('PUT', withDigest(c.location, c.digest));
    c.done = put.status === 201;
  } catch {
    // connection refused or cut by the shutdown
  }
}

const rebase = (url: string, origin: string) => url.replace(/^https?:\/\/[^/]+/, origin);

/**
 * Finishes an upload the shutdown interrupted, from where the restarted server says it stands.
 * Returns true when the blob is now stored (fails the test otherwise).
 */
async function resume(t: Test, c: Client, server: SpawnedSlipway, repo: string, who: string): Promise<boolean> {
  const auth = basic('_', key);
  const loc = rebase(c.location!, server.urls.upload);
  const status = await http('GET', loc);
  if (status.status === 404 && c.acked === c.blob.length) {
    // The commit (PUT) was running when the connection was cut: it finished without the client
    // hearing the 201, so the session is gone and the blob must be there.
    const head = await http('HEAD', `${server.urls.registry}/v2/${repo}/blobs/${c.digest}`, { headers: auth });
    if (head.status !== 200) t.fail(`${who}: neither session nor blob after a cut commit (${head.status})`);
    return head.status === 200;
  }
  const offset = status.status === 204 ? Number(status.headers.range!.split('-')[1]) + 1 : -1;
  if (offset !== c.acked && offset !== c.acked + c.inFlight) {
    t.fail(`${who}: session at ${offset} (status ${status.status}), acknowledged ${c.acked}`);
    return false;
  }
  const rest = offset < c.blob.length
    ? await http('PATCH', loc, { body: c.blob.subarray(offset), headers: { 'content-type': 'application/octet-stream', 'content-range': `${offset}-${c.blob.length - 1}` } })
    : status;
  const put = await http('PUT', withDigest(rebase(rest.headers.location ?? loc, server.urls.upload), c.digest));
  if (put.status !== 201) t.fail(`${who}: resumed upload ended ${put.status} ${put.text}`);
  return put.status === 201;
}

t.test('SIGTERM at random moments during chunked uploads', async (t) => {
  for (let round = 0; round < ROUNDS; round++) {
    const tmp = tempDir();
    let server: SpawnedSlipway = await startSpawned({ dataDir: tmp.dir, env: { SLIPWAY_DRAIN_SECONDS: '0.3' } });
    t.teardown(async () => { await server.stop(); tmp.cleanup(); });
    key = server.apiKey!;
    const auth = basic('_', key);
    await createApp(server.urls.api, server.apiKey!, 'racing');
    const clients: Client[] = Array.from({ length: CLIENTS }, () => {
      const blob = randomBytes(randomInt(512 * 1024, 6 * 1024 * 1024));
      return { blob, digest: 'sha256:' + createHash('sha256').update(blob).digest('hex'), acked: 0, inFlight: 0, done: false };
    });
    const running = clients.map((c, i) => upload(c, server.urls.registry, auth, `racing/p${i % 3}`));
    await waitFor('a first acknowledged chunk', () => clients.some((c) => c.acked > 0), { intervalMs: 5 });
    await sleep(randomInt(0, 300)); // deliberate: SIGTERM lands at a random point of the pushes (the subject)
    server.proc.kill('SIGTERM');
    t.equal(await server.exited, 0, `round ${round}: exit 0`);
    await Promise.all(running);
    const finished = clients.filter((c) => c.done).length;

    server = await startSpawned({ dataDir: tmp.dir });
    for (const [i, c] of clients.entries()) {
      const repo = `racing/p${i % 3}`;
      if (!c.done && c.location && c.acked > 0) c.done = await resume(t, c, server, repo, `round ${round} client ${i}`);
      if (c.done) {
        const got = await http('GET', `${server.urls.registry}/v2/${repo}/blobs/${c.digest}`, { headers: auth });
        if (!got.bytes.equals(c.blob)) t.fail(`round ${round} client ${i}: blob differs (${got.status})`);
      }
    }
    await server.stop();
    const check = await runCli(['fsck', '--data', tmp.dir, '--full', '--json']);
    t.equal(check.code, 0, `round ${round}: fsck clean: ${check.stdout}`);
    const started = clients.filter((c) => c.acked > 0 || c.done);
    t.ok(started.length > 0 && started.every((c) => c.done), `round ${round}: every upload with an acknowledged chunk stored (${finished} before the shutdown, ${started.length - finished} resumed after it)`);
  }
});
