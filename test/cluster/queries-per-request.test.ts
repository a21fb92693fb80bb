/**
 * Database statements per request of a warm push on PostgreSQL (docs/deployment.md "Capacity"):
 * one in-process node on a real PostgreSQL with its read cache, an image pushed once, then a warm
 * push as docker sends it (HEAD of each blob, PUT of the manifest under a new tag). Every
 * statement any connection of the process sends is counted by wrapping the driver's `query`.
 * The blob HEADs are answered by the read cache (only the read barrier's round trip on the
 * listening connection, engine/storage/postgres-invalidation.ts); the manifest PUT's checks too,
 * and its transaction costs BEGIN, one read of every record it needs (`getMany`), one write
 * statement and COMMIT: four statements, whatever the number of layers. A manifest GET by a tag
 * the read cache does not hold costs one statement, which reads the tag and the manifest it
 * names (engine/storage/postgres-reads.ts `cachedGetWithNamed`); read again, none.
 */
import t, { type Test } from 'tap';
import pg from 'pg';
import { Client } from 'undici';
import { randomBytes } from 'node:crypto';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess } from '../helpers/harness.js';
import { memImage, pushWithRetry } from '../helpers/cluster.js';
import { basic, createApp, http } from '../helpers/http.js';
import { putManifest } from '../helpers/registry.js';
import { sha256 } from '../helpers/image.js';
import { currentReadScope } from '../../engine/storage/read-scope.js';

const skip = postgresSkip();

/** What one statement was: the read barrier, or a statement of the store (its name, or its first words). */
function kindOf(args: unknown[]): string {
  const q = args[0] as string | { name?: string; text?: string };
  const text = typeof q === 'string' ? q : q.name ?? q.text ?? '?';
  return text.startsWith('SELECT pg_notify') ? 'barrier' : text.split(/\s+/).slice(0, 3).join(' ');
}

/** A node on a fresh PostgreSQL (delivery worker off) with an app `app`; stopped at the end of `t`. */
async function startNode(t: Test, app: string) {
  const db = await startPostgres();
  t.teardown(() => db.stop());
  // The delivery worker off: its passes (the outbox fan-out of the push's registry:image event, the
  // poll for due deliveries) run in the background on the same pool and are not the request's.
  const node = await startInProcess({ env: { SLIPWAY_WEBHOOK_DELIVER: 'off' }, metadata: () => PostgresMetadataStore.open({ connectionString: db.connectionString }) });
  t.teardown(() => node.stop());
  await createApp(node.api, node.operator.apiKey, app);
  return { node, auth: basic('_', node.operator.apiKey) };
}

/**
 * Counts every statement the process sends from now to the end of `t`, by wrapping the driver's
 * `query`: `seen` gets what requests send (inside a read scope) and the read barriers (which run
 * on the listener's own connection, outside scopes); `background` the rest (the GC grace
 * setting's poll every 10 s reads two records, and a slow run once put it inside a HEAD's window).
 */
function countStatements(t: Test): { seen: string[]; background: string[] } {
  const seen: string[] = [];
  const background: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const kind = kindOf(args);
    if (kind === 'barrier' || currentReadScope() !== undefined) seen.push(kind);
    else background.push(kind);
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  t.teardown(() => { pg.Client.prototype.query = query; });
  return { seen, background };
}

t.test('a warm push costs one write transaction of four statements', { skip }, async (t) => {
  const { node, auth } = await startNode(t, 'queries');
  const repo = 'queries/web';
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: ['N=1'] }, rootfs: { type: 'layers', diff_ids: [] } }));
  const img = memImage(config, [randomBytes(2000), randomBytes(3000), randomBytes(4000)]);
  const first = await pushWithRetry({ registry: node.urls.registry, auth }, repo, 'v0', img);
  t.ok(first.acked, `first push ${first.last}`);

  const { seen, background } = countStatements(t);
  const counted = async (what: () => Promise<{ status: number }>, status: number) => {
    seen.length = 0;
    t.equal((await what()).status, status);
    const statements = seen.filter((k) => k !== 'barrier');
    return { statements, barriers: seen.length - statements.length };
  };

  // Round 0 follows the first push, whose commit evicted the records it changed (the blob
  // records' references, the manifest): its reads fill the cache again. Rounds 1-3: steady state.
  for (let round = 0; round <= 3; round++) {
    for (const blob of img.blobs) {
      const head = await counted(() => http('HEAD', `${node.urls.registry}/v2/${repo}/blobs/${sha256(blob)}`, { headers: auth }), 200);
      if (round > 0) t.same(head.statements, [], `round ${round}: a blob HEAD sends no statement (read cache)`);
      else t.comment(`round 0: blob HEAD statements ${JSON.stringify(head.statements)}`);
      t.ok(head.barriers <= 2, 'at most its read barrier (and a heartbeat)');
    }
    const put = await counted(() => putManifest({ registry: node.urls.registry, auth }, repo, `v${round + 1}`, img.manifest), 201);
    t.comment(`round ${round}: manifest PUT statements ${JSON.stringify(put.statements)}, barriers ${put.barriers}`);
    const transaction = put.statements.slice(put.statements.indexOf('BEGIN ISOLATION LEVEL'));
    t.same(transaction, ['BEGIN ISOLATION LEVEL', 'slipway-get-many', 'slipway-apply-pn', 'COMMIT'], `round ${round}: the manifest PUT's transaction`);
    if (round > 0) t.equal(put.statements.length, transaction.length, `round ${round}: and nothing else (the checks before it read the cache)`);
  }
  t.comment(`statements of background work meanwhile: ${JSON.stringify(background)}`);
});

t.test('a first read of a manifest by tag costs one statement; the next none', { skip }, async (t) => {
  const { node, auth } = await startNode(t, 'reads');
  const repo = 'reads/web';
  const { seen } = countStatements(t);
  const get = async (ref: string) => {
    seen.length = 0;
    const r = await http('GET', `${node.urls.registry}/v2/${repo}/manifests/${ref}`, { headers: { ...auth, accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
    // The store's reads only, not the read barrier: a request may also start the once-a-minute "last used" stamp of its
    // token (engine/identity/usage.ts: BEGIN, a write, COMMIT, not awaited), which is not the GET's.
    return { status: r.status, digest: r.headers['docker-content-digest'], statements: seen.filter((k) => k !== 'barrier' && !/^(BEGIN|COMMIT|ROLLBACK|slipway-apply)/.test(k)) };
  };
  for (let round = 0; round < 3; round++) {
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: [`N=${round}`] }, rootfs: { type: 'layers', diff_ids: [] } }));
    const img = memImage(config, [randomBytes(1000)]);
    const pushed = await pushWithRetry({ registry: node.urls.registry, auth }, repo, `r${round}`, img);
    t.ok(pushed.acked, `round ${round}: push ${pushed.last}`);
    // The records a GET checks besides the tag and the manifest (token, app, repository) are
    // cached by a GET of an unknown tag; the push's commit evicted the new tag and manifest, and
    // neither was ever served (the registry's content cache does not hold the manifest either).
    const unknown = await get(`nothing-${round}`);
    t.equal(unknown.status, 404, `round ${round}: an unknown tag: 404`);
    t.equal(unknown.statements.filter((s) => s === 'slipway-get-named').length, 1, `round ${round}: its tag read in one statement (statements ${JSON.stringify(unknown.statements)})`);
    const first = await get(`r${round}`);
    t.same(first, { status: 200, digest: img.digest, statements: ['slipway-get-named'] }, `round ${round}: a first read of the manifest by its tag sends one statement`);
    const again = await get(`r${round}`);
    t.same(again, { status: 200, digest: img.digest, statements: [] }, `round ${round}: read again, none`);
  }
});

t.test('a first read by tag sends its statement beside the read barrier, not after it', { skip }, async (t) => {
  const { node, auth } = await startNode(t, 'ahead');
  const repo = 'ahead/web';
  const inv = (node.server.store.metadata as PostgresMetadataStore).invalidation;
  const accept = { accept: 'application/vnd.docker.distribution.manifest.v2+json' };
  // One keep-alive connection, as a registry client keeps: the read-ahead is for credentials the
  // connection was admitted with before.
  const connection = new Client(node.urls.registry, { pipelining: 1, connect: { rejectUnauthorized: false } });
  t.teardown(() => connection.close());
  const get = async (ref: string, headers: Record<string, string> = auth, via = connection) => {
    const r = await via.request({ method: 'GET', path: `/v2/${repo}/manifests/${ref}`, headers: { ...headers, ...accept } });
    await r.body.arrayBuffer();
    return { status: r.statusCode, headers: r.headers as Record<string, string> };
  };
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: ['N=ahead'] }, rootfs: { type: 'layers', diff_ids: [] } }));
  const img = memImage(config, [randomBytes(1000)]);
  t.ok((await pushWithRetry({ registry: node.urls.registry, auth }, repo, 'v1', img)).acked, 'pushed');
  t.equal((await get('nothing')).status, 404, 'an unknown tag: 404 (the credentials, app and repository are cached from here)');

  // The next request's read barrier is held back until its tag statement has been sent (or 3 s,
  // so the old order, statement after barrier, shows as a failure rather than a hang).
  const events: string[] = [];
  let statementSent!: () => void;
  const sent = new Promise<void>((resolve) => { statementSent = resolve; });
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (kindOf(args) === 'slipway-get-named') { events.push('statement sent'); statementSent(); }
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  t.teardown(() => { pg.Client.prototype.query = query; });
  const sync = inv.sync.bind(inv);
  let held = false;
  inv.sync = () => {
    if (held || currentReadScope() === undefined) return sync(); // heartbeats; later requests
    held = true;
    return sync().then(async (fresh) => {
      await Promise.race([sent, new Promise((resolve) => setTimeout(resolve, 3000).unref())]);
      events.push('barrier back');
      return fresh;
    });
  };
  t.teardown(() => { inv.sync = sync; });

  const first = await get('v1');
  t.equal(first.status, 200, 'the first read of the tag: 200');
  t.equal(first.headers['docker-content-digest'], img.digest, 'with the pushed manifest');
  t.same(events, ['statement sent', 'barrier back'], 'its statement went out while the credentials waited for the barrier');
  const again = await get('v1');
  t.equal(again.headers['docker-content-digest'], img.digest, 'read again (the cache, after the barrier): the same manifest');
  t.equal((await get('v1', basic('_', 'not-a-key'))).status, 401, 'wrong credentials: 401, whatever was read ahead');
  // Credentials never admitted, on a connection of their own: no read beyond their check.
  const stranger = new Client(node.urls.registry, { connect: { rejectUnauthorized: false } });
  t.teardown(() => stranger.close());
  events.length = 0;
  for (let i = 0; i < 3; i++) t.equal((await get(`never-${i}`, basic('_', 'made-up'), stranger)).status, 401, `made-up credentials ${i}: 401`);
  t.same(events, [], 'and no tag statement for them (nothing read ahead)');
  t.equal((await get('-bad')).status, 404, 'a reference that is neither tag nor digest: 404');
  t.equal((await get('sha256:12')).status, 400, 'a malformed digest: 400');
});
