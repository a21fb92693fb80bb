/**
 * The least a registry can do for a push, run as its own process by bench/push-limit.ts: for each
 * request head on a keep-alive connection, it skips Content-Length bytes of body and answers:
 * `POST` 202 with a session Location, `PUT` 201 (Docker-Content-Digest from `?digest=`), anything
 * else 202. Nothing is hashed, stored or checked; the body is dropped as the socket delivers it
 * (no parser, no per-chunk events beyond the socket's). Prints its port on stdout.
 */
import { createServer } from 'node:net';

const END = Buffer.from('\r\n\r\n');
let sessions = 0;

/** The answer to one request head. */
function answer(head: string): string {
  const [method = '', target = '/'] = head.slice(0, head.indexOf('\r\n')).split(' ');
  const url = new URL(target, 'http://sink');
  const digest = url.searchParams.get('digest');
  const status = method === 'POST' ? '202 Accepted' : method === 'PUT' ? '201 Created' : '202 Accepted';
  const location = method === 'POST' ? `/v2/sink/blobs/uploads/${++sessions}` : url.pathname;
  return [`HTTP/1.1 ${status}`, `location: ${location}`, ...(digest ? [`docker-content-digest: ${digest}`] : []), 'content-length: 0', '', ''].join('\r\n');
}

const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let head: Buffer = Buffer.alloc(0);
  let skip = 0;
  let pending = '';
  socket.on('data', (d: Buffer) => {
    let buf = d;
    while (buf.length > 0) {
      if (skip > 0) {
        const n = Math.min(skip, buf.length);
        skip -= n;
        buf = buf.subarray(n);
        if (skip === 0) socket.write(pending);
        continue;
      }
      head = head.length ? Buffer.concat([head, buf]) : buf;
      const end = head.indexOf(END);
      if (end < 0) {
        head = Buffer.from(head);
        return;
      }
      const text = head.subarray(0, end).toString('latin1');
      buf = head.subarray(end + 4);
      head = Buffer.alloc(0);
      skip = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1] ?? 0);
      pending = answer(text);
      if (skip === 0) socket.write(pending);
    }
  });
});
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`${typeof a === 'object' && a ? a.port : 0}\n`);
});
