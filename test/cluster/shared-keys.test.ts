/**
 * Shared node secrets across two nodes on one real PostgreSQL (docs/cluster.md "Shared secrets
 * and rotation"): a registry token minted on A authenticates on B; an upload session's `_state`
 * capability from A passes B's admission; a second factor enrolled through A verifies on B; a
 * node given another key refuses to start; a rotation (accept the new key everywhere, then sign
 * with it, then drop the old one) keeps old tokens valid until the old key is dropped, re-seals
 * every second-factor secret, and never flips back.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startPostgres, postgresSkip } from '../helpers/postgres.js';
import { startInProcess, TEST_EPOCH, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { basic, bearer, createApp, errCode, http } from '../helpers/http.js';
import { Browser, findForm, currentCode } from '../helpers/oauth.js';
import { ManualClock } from '../../engine/clock.js';
import { TOTP_STEP_SECONDS } from '../../engine/identity/totp.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { serverKey } from '../../engine/identity/keyspaces.js';

const skip = postgresSkip();

t.test('one server key across the cluster', { skip }, async (t) => {
  const pg = await startPostgres();
  const metadata = () => PostgresMetadataStore.open({ connectionString: pg.connectionString });
  const clock = new ManualClock(TEST_EPOCH);
  const nodes: InProcessSlipway[] = [];
  t.teardown(async () => {
    for (const n of nodes) await n.stop();
    await pg.stop();
  });
  const node = async (env: Record<string, string>) => {
    const n = await startInProcess({ metadata, clock, env });
    nodes.push(n);
    return n;
  };
  const k1 = randomBytes(32).toString('base64');
  const k2 = randomBytes(32).toString('base64');
  const a = await node({ SLIPWAY_SERVER_KEY: k1 });
  const b = await node({ SLIPWAY_SERVER_KEY: k1 });
  const op = a.operator;
  t.equal((await createApp(a.api, op.apiKey, 'keyapp')).status, 201);
  const registryToken = async (n: InProcessSlipway) => {
    const r = await http('GET', `${n.urls.registry}/token?scope=repository:keyapp/web:pull,push`, { headers: basic('_', op.apiKey) });
    t.equal(r.status, 200, 'registry token issued');
    return r.json.token as string;
  };
  const check = async (n: InProcessSlipway, token: string) => (await http('GET', `${n.urls.registry}/v2/`, { headers: bearer(token) })).status;
  /** Signs the operator in: the form comes from `from` (its CSRF token), the post goes to `to`. */
  const signInAcross = async (from: InProcessSlipway, to: InProcessSlipway) => {
    const browser = new Browser(from.auth);
    const page = await browser.get('/login');
    clock.advance(TOTP_STEP_SECONDS * 1000);
    const form = findForm(page.text, '/login');
    return browser.post(`${to.auth}/login`, { ...form.fields, email: op.email, password: op.password, code: currentCode(op, clock) });
  };

  await t.test('what A signs, B accepts', async (t) => {
    const token = await registryToken(a);
    t.equal(await check(b, token), 200, 'a registry token minted on A authenticates on B');
    t.equal(await check(b, token.slice(0, -2) + (token.endsWith('A') ? 'BB' : 'AA')), 401, 'a forged one does not');

    const started = await http('POST', `${a.urls.registry}/v2/keyapp/web/blobs/uploads/`, { headers: bearer(token) });
    t.equal(started.status, 202);
    const location = new URL(started.headers.location!);
    const onB = `${b.urls.upload}${location.pathname}${location.search}`;
    const r = await http('GET', onB);
    t.not(r.status, 401, "B's admission accepts A's _state capability (no credentials sent)");
    t.equal(errCode(r), 'BLOB_UPLOAD_UNKNOWN', 'and then finds the session is not one of B\'s (sessions live on their node)');
    const forged = onB.replace(/_state=[^&]+/, '_state=AAAA');
    const refused = await http('GET', forged);
    t.equal(refused.status, 401, `a forged capability is refused on B (${forged})`);

    const signedIn = await signInAcross(a, b);
    t.equal(signedIn.status, 303, 'the second factor enrolled through A (sealed under the shared key) verifies on B, with A\'s CSRF token');
  });

  await t.test('a node with another key refuses to start', async (t) => {
    await t.rejects(node({ SLIPWAY_SERVER_KEY: k2 }), /SLIPWAY_SERVER_KEY.*differs from the key the cluster's metadata store records/s);
    await t.rejects(node({}), /differs from the key/, 'so does one left with a generated key file');
  });

  await t.test('rotation', async (t) => {
    const oldToken = await registryToken(a);
    // Round 1: every node accepts the new key before any signs with it.
    const c = await node({ SLIPWAY_SERVER_KEY: k1, SLIPWAY_ACCEPTED_SERVER_KEY: k2 });
    // Round 2: nodes move to the new key, keeping the old one accepted; the first records the rotation.
    await a.stop();
    const a2 = await node({ SLIPWAY_SERVER_KEY: k2, SLIPWAY_ACCEPTED_SERVER_KEY: k1 });
    const rec = await a2.server.store.metadata.get(serverKey, 'current');
    t.ok(rec && rec.previous !== null, 'the store records the rotation');
    const newToken = await registryToken(a2);
    t.equal(await check(a2, oldToken), 200, 'old tokens stay valid on a rotated node');
    t.equal(await check(c, newToken), 200, 'new tokens are valid on a node of round 1');
    t.equal(await check(b, newToken), 401, 'a node that skipped round 1 refuses new tokens (why round 1 exists)');
    await t.rejects(node({ SLIPWAY_SERVER_KEY: k1, SLIPWAY_ACCEPTED_SERVER_KEY: k2 }), /rotated away from/, 'a node starting on the old key after the rotation is refused: no flip back');
    await waitFor('the second-factor secrets to be re-sealed', async () => (await a2.server.store.metadata.get(serverKey, 'current'))?.resealed === true);
    t.equal((await signInAcross(a2, c)).status, 303, 're-sealed secrets open on a node of round 1');
    // Round 3: the old key is dropped.
    await b.stop();
    await c.stop();
    const d = await node({ SLIPWAY_SERVER_KEY: k2 });
    t.equal(await check(d, newToken), 200);
    t.equal(await check(d, oldToken), 401, 'tokens of the old key end with it');
    t.equal((await signInAcross(d, a2)).status, 303, 'second factors open with the new key alone');
  });

  await t.test('the old key cannot be dropped while secrets are still sealed under it', async (t) => {
    const store = await metadata();
    t.teardown(() => store.close());
    const rec = (await store.get(serverKey, 'current'))!;
    await store.transact((tx) => tx.put(serverKey, 'current', { ...rec, resealed: false }));
    await t.rejects(node({ SLIPWAY_SERVER_KEY: k2 }), /SLIPWAY_ACCEPTED_SERVER_KEY/);
    await store.transact((tx) => tx.put(serverKey, 'current', rec));
  });
});

t.test('malformed keys are refused at the setting, without echoing them', async (t) => {
  const secretish = 'not-a-key-' + randomBytes(4).toString('hex');
  const e = await startInProcess({ env: { SLIPWAY_SERVER_KEY: secretish } }).then(() => null, (err: Error) => err);
  t.match(e?.message, /environment variable SLIPWAY_SERVER_KEY: expected the base64 of exactly 32 random bytes .*; the value given \(not shown\) decodes to \d+ bytes/);
  t.notMatch(e?.message, secretish, 'the value is not echoed');
  await t.rejects(startInProcess({ env: { SLIPWAY_SERVER_KEY: randomBytes(32).toString('base64'), SLIPWAY_KEY_FILE: '/nonexistent/k' } }), /both set/);
});
