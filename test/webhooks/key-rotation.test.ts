/**
 * A server key rotation (docs/cluster.md "Rotating the key") keeps app webhooks signing with the
 * secret their receivers were given: a webhook created under the old key, with a signing secret
 * and an `authorization` value (both sealed under the server key), still delivers with a valid
 * `Heroku-Webhook-Hmac-SHA256` and the same `Authorization` after the rotation's three steps
 * (accept the new key; sign with it, old one accepted, which re-seals; drop the old key), on one
 * embedded installation restarted in-process on the same data directory.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { startInProcess, waitFor, type InProcessSlipway } from '../helpers/harness.js';
import { bearer, createApp, http } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';
import { signatureValid, startReceiver } from '../helpers/webhook-receiver.js';
import { serverKey } from '../../engine/identity/keyspaces.js';

const ACCEPT = 'application/vnd.heroku+json; version=3.webhooks';
const SECRET = 'rotation-proof-secret';
const AUTHORIZATION = 'Bearer rotation-proof-token';

t.test('a webhook made before a key rotation delivers, signed with its secret, after it', async (t) => {
  const receiver = await startReceiver();
  const data = tempDir();
  let node: InProcessSlipway | undefined;
  t.teardown(async () => { await node?.stop(); await receiver.close(); data.cleanup(); });
  const oldKey = randomBytes(32).toString('base64');
  const newKey = randomBytes(32).toString('base64');
  const start = async (env: Record<string, string>) => {
    await node?.stop();
    node = await startInProcess({ dataDir: data.dir, env: { SLIPWAY_WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', SLIPWAY_WEBHOOK_POLL_INTERVAL: '0.1', ...env } });
    return node;
  };

  const first = await start({ SLIPWAY_SERVER_KEY: oldKey });
  const apiKey = first.operator.apiKey;
  t.equal((await createApp(first.api, apiKey, 'rotating')).status, 201);
  const created = await http('POST', `${first.api}/apps/rotating/webhooks`, {
    headers: { ...bearer(apiKey), accept: ACCEPT, 'content-type': 'application/json' },
    body: JSON.stringify({ include: ['api:release'], level: 'sync', url: receiver.url, secret: SECRET, authorization: AUTHORIZATION }),
  });
  t.equal(created.status, 201);
  /** A config change on `n`, and the delivery it makes. */
  const release = async (n: InProcessSlipway, step: string) => {
    const before = receiver.received.length;
    const r = await http('PATCH', `${n.api}/apps/rotating/config-vars`, { headers: { ...bearer(apiKey), 'content-type': 'application/json' }, body: JSON.stringify({ STEP: step }) });
    t.equal(r.status, 200, `${step}: config change`);
    const got = await waitFor(`${step}: the delivery`, () => receiver.received.slice(before).find((x) => x.json?.data?.description?.includes('STEP')), { timeoutMs: 20_000 });
    t.ok(signatureValid(SECRET, got.body, got.headers['heroku-webhook-hmac-sha256']), `${step}: the signature verifies with the secret given at creation`);
    t.equal(got.headers.authorization, AUTHORIZATION, `${step}: the same Authorization value`);
  };
  await release(first, 'before');

  await start({ SLIPWAY_SERVER_KEY: oldKey, SLIPWAY_ACCEPTED_SERVER_KEY: newKey }); // step 1
  const step2 = await start({ SLIPWAY_SERVER_KEY: newKey, SLIPWAY_ACCEPTED_SERVER_KEY: oldKey }); // step 2: re-seals
  await waitFor('the rotation to be re-sealed', async () => (await step2.server.store.metadata.get(serverKey, 'current'))?.resealed === true);
  await release(step2, 'during');
  const step3 = await start({ SLIPWAY_SERVER_KEY: newKey }); // step 3: the old key is gone
  await release(step3, 'after');
});
