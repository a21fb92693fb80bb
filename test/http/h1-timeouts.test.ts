/**
 * The upload listener's timeouts, on an in-process server with short limits: a request head
 * trickled byte by byte (slowloris) is cut off at the head deadline although the client is
 * never idle; an idle keep-alive connection is closed; a prompt request is answered.
 */
import t from 'tap';
import { waitFor } from '../helpers/harness.js';
import net from 'node:net';
import { createH1Server } from '../../server/http/h1-server.js';

const h1 = createH1Server(async (ex) => ex.send(200, { 'content-type': 'text/plain' }, 'ok'), () => {}, undefined, { headMs: 400, transferIdleMs: 1000 });
await new Promise<void>((resolve) => h1.server.listen(0, '127.0.0.1', resolve));
const port = (h1.server.address() as net.AddressInfo).port;
t.teardown(() => new Promise<void>((resolve) => { h1.closeAllConnections(); h1.server.close(() => resolve()); }));

function connect(): { socket: net.Socket; closed: Promise<number>; text: () => string } {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => { text += d.toString('latin1'); });
  socket.on('error', () => {});
  const started = Date.now();
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now() - started)));
  return { socket, closed, text: () => text };
}

t.test('a prompt request is answered and the connection kept', async (t) => {
  const c = connect();
  c.socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor('the answer', () => /\r\n\r\n/.test(c.text()), { timeoutMs: 5_000, intervalMs: 10 });
  t.match(c.text(), /^HTTP\/1\.1 200 OK/);
  t.match(c.text(), /keep-alive: timeout=\d+/i, 'advertises the keep-alive idle time');
  t.notOk(c.socket.destroyed);
  const ms = await c.closed;
  t.ok(ms >= 350 && ms < 2000, `idle keep-alive connection closed after ${ms} ms`);
});

t.test('a head trickled byte by byte is cut off at the deadline', async (t) => {
  const c = connect();
  const head = 'GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(100);
  let i = 0;
  const timer = setInterval(() => { if (!c.socket.destroyed) c.socket.write(head[i++ % head.length]!); }, 50);
  const ms = await c.closed;
  clearInterval(timer);
  t.ok(ms >= 350 && ms < 1500, `closed after ${ms} ms although a byte arrived every 50 ms`);
  t.equal(c.text(), '', 'no response to a head that never completed');
});
