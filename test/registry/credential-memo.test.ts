/**
 * A keep-alive connection keeps its parsed Authorization header (the token's hash, a registry
 * token's verified claims: server/registry/access.ts, `Exchange.memo`) and reuses it while the
 * client sends the same header. What it keeps must never outlive the credential: on the very
 * same connection, a revoked API token, a revoked registry token's authorization and an expired
 * registry token are refused at their next request, and a changed header is parsed anew.
 */
import t from 'tap';
import net from 'node:net';
import tls from 'node:tls';
import { startInProcess } from '../helpers/harness.js';
import { basic, bearer, http } from '../helpers/http.js';
import { api } from '../helpers/oauth.js';
import { waitFor } from '../helpers/harness.js';

const ts = await startInProcess();
t.teardown(() => ts.stop());
const admin = ts.operator.apiKey;
const reg = new URL(ts.server.urls.registry);

/** One raw keep-alive connection to the registry host (TLS in tests, self-signed): `get` sends GET /v2/ and resolves with the status. */
function connection(): { get: (headers: Record<string, string>) => Promise<number>; close: () => void } {
  const options = { port: Number(reg.port), host: reg.hostname };
  const socket = reg.protocol === 'https:' ? tls.connect({ ...options, rejectUnauthorized: false }) : net.connect(options);
  let text = '';
  let connects = 0;
  socket.on('connect', () => connects++);
  socket.on('data', (d) => { text += d.toString('latin1'); });
  socket.on('error', () => {});
  return {
    async get(headers) {
      text = '';
      let req = `GET /v2/ HTTP/1.1\r\nHost: ${reg.host}\r\n`;
      for (const [k, v] of Object.entries(headers)) req += `${k}: ${v}\r\n`;
      socket.write(req + '\r\n');
      await waitFor('a response', () => {
        const end = text.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(text);
        return end >= 0 && length !== null && text.length >= end + 4 + Number(length[1]);
      }, { timeoutMs: 10_000, intervalMs: 5 });
      if (socket.destroyed || connects !== 1) throw new Error('the connection was not kept');
      return Number(text.slice(9, 12));
    },
    close: () => socket.destroy(),
  };
}

const newAuthorization = async () => {
  const r = await api(ts, 'POST', '/oauth/authorizations', admin, { scope: ['global'], description: 'memo' });
  if (r.status !== 201) throw new Error(`authorization: ${r.status} ${r.text}`);
  return { id: r.json.id as string, token: r.json.access_token.token as string };
};
const revoke = async (id: string) => {
  const r = await api(ts, 'DELETE', `/oauth/authorizations/${id}`, admin);
  if (r.status !== 200) throw new Error(`revoke: ${r.status} ${r.text}`);
};

t.test('an API token revoked mid-connection is refused on that connection (Basic and Bearer)', async (t) => {
  for (const as of [(tok: string) => basic('_', tok), (tok: string) => bearer(tok)]) {
    const a = await newAuthorization();
    const c = connection();
    t.equal(await c.get(as(a.token)), 200);
    t.equal(await c.get(as(a.token)), 200, 'the same header again');
    await revoke(a.id);
    t.equal(await c.get(as(a.token)), 401, 'refused at once after the revocation');
    c.close();
  }
});

t.test('a registry token: refused once its authorization is revoked, and once it expired', async (t) => {
  const a = await newAuthorization();
  const tokenOf = async () => (await http('GET', `${ts.server.urls.registry}/token?scope=repository:any/web:pull`, { headers: basic('_', a.token) })).json.token as string;
  const c = connection();
  const first = await tokenOf();
  t.equal(await c.get(bearer(first)), 200);
  t.equal(await c.get(bearer(first)), 200, 'the same header again');
  ts.clock.advance(2 * 3600 * 1000); // past any registry token lifetime
  t.equal(await c.get(bearer(first)), 401, 'the kept claims expire');
  const second = await tokenOf();
  t.equal(await c.get(bearer(second)), 200, 'a new header on the same connection is parsed anew');
  await revoke(a.id);
  t.equal(await c.get(bearer(second)), 401, 'refused at once after its authorization was revoked');
  t.equal(await c.get(basic('_', 'wrong')), 401, 'a bad header after good ones');
  t.equal(await c.get(basic('_', admin)), 200, 'and a good one after the bad one');
  c.close();
});
