/**
 * The upload listener's keep-alive behaviour while a handler runs: the socket keeps reading
 * (pipelined requests are kept, at most MAX_WAITING_BYTES before it pauses), the head timeout
 * never cuts a connection whose request is being handled, a client that half-closes after
 * pipelining gets every complete request answered in order and then the close, and every
 * response carries the exchange's `request-id`.
 */
import t from 'tap';
import net from 'node:net';
import { setImmediate as immediate } from 'node:timers/promises';
import { waitFor } from '../helpers/harness.js';
import { createH1Server } from '../../server/http/h1-server.js';
import type { Exchange } from '../../server/http/exchange.js';

const HEAD_MS = 300;
/** Requests to `/slow` wait for this gate (opened by the test). */
let openGate: () => void = () => {};
let gate: Promise<void> = Promise.resolve();

async function handler(ex: Exchange): Promise<void> {
  if (ex.path === '/slow') await gate;
  else await immediate(); // answered later than the read: the request waits in the `wait` state
  if (ex.path === '/own-id') return ex.send(200, { 'request-id': 'handler-id' }, 'own');
  ex.send(200, { 'content-type': 'text/plain' }, ex.path);
}

const h1 = createH1Server(handler, () => {}, undefined, { headMs: HEAD_MS, transferIdleMs: 1000 });
await new Promise<void>((resolve) => h1.server.listen(0, '127.0.0.1', resolve));
const port = (h1.server.address() as net.AddressInfo).port;
t.teardown(() => new Promise<void>((resolve) => { h1.closeAllConnections(); h1.server.close(() => resolve()); }));

function connect(): { socket: net.Socket; closed: Promise<void>; text: () => string } {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => { text += d.toString('latin1'); });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  return { socket, closed, text: () => text };
}

/** The responses in `text`: status, headers (lowercase names) and body of each. */
function responses(text: string): Array<{ status: number; headers: Map<string, string>; body: string }> {
  const out = [];
  let rest = text;
  while (rest.includes('\r\n\r\n')) {
    const end = rest.indexOf('\r\n\r\n');
    const lines = rest.slice(0, end).split('\r\n');
    const headers = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
    const length = Number(headers.get('content-length') ?? 0);
    out.push({ status: Number(lines[0]!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

t.test('a request handled for longer than the head timeout is answered, the connection kept', async (t) => {
  gate = new Promise((resolve) => { openGate = resolve; });
  const c = connect();
  c.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  // The handler runs for 2.5 head timeouts: the connection must not be cut meanwhile.
  await new Promise((resolve) => setTimeout(resolve, HEAD_MS * 2.5));
  t.notOk(c.socket.destroyed, 'still open while the handler works');
  openGate();
  await waitFor('the answer', () => responses(c.text()).length === 1, { timeoutMs: 5_000, intervalMs: 10 });
  t.equal(responses(c.text())[0]!.body, '/slow');
  t.match(c.text(), /keep-alive: timeout=/);
  await c.closed; // then idle: closed by the keep-alive timeout
});

t.test('pipelined requests then a half-close: all answered in order, then closed', async (t) => {
  const c = connect();
  c.socket.end('GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n');
  await c.closed;
  const r = responses(c.text());
  t.same(r.map((x) => x.body), ['/a', '/b', '/c']);
  t.equal(r[2]!.headers.get('connection'), 'close', 'the last answer says the connection closes');
});

t.test('more pipelined bytes than are kept while waiting: the socket pauses, nothing is lost', async (t) => {
  const c = connect();
  const n = 600; // ~25 KiB of heads, over MAX_WAITING_BYTES
  let all = '';
  for (let i = 0; i < n; i++) all += `GET /p${i} HTTP/1.1\r\nHost: x\r\nX-Pad: ${'x'.repeat(10)}\r\n\r\n`;
  c.socket.write(all);
  await waitFor(`${n} answers`, () => responses(c.text()).length === n, { timeoutMs: 20_000, intervalMs: 20 });
  t.same(responses(c.text()).map((x) => x.body), Array.from({ length: n }, (_, i) => `/p${i}`), 'in order');
  c.socket.destroy();
});

t.test('every response carries the request id: the client\'s, a generated one, or the handler\'s own', async (t) => {
  const c = connect();
  c.socket.write('GET /x HTTP/1.1\r\nHost: x\r\nRequest-Id: client-chosen\r\n\r\nGET /y HTTP/1.1\r\nHost: x\r\n\r\nGET /own-id HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor('three answers', () => responses(c.text()).length === 3, { timeoutMs: 5_000, intervalMs: 10 });
  const [a, b, own] = responses(c.text());
  t.equal(a!.headers.get('request-id'), 'client-chosen');
  t.match(b!.headers.get('request-id') ?? '', /^[0-9a-f-]{36}$/, 'a generated UUID');
  t.equal(own!.headers.get('request-id'), 'handler-id');
  t.equal(c.text().match(/request-id:/gi)?.length, 3, 'one request-id field per response');
  c.socket.destroy();
});
