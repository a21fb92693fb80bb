/**
 * The least a keep-alive HTTP/1.1 server can do per request, run as its own process by
 * bench/load-limit.ts: for each complete request head (CRLF CRLF) on a connection, one write of a
 * fixed response head shaped like a registry's blob HEAD answer (status 200, the same header
 * fields and about the same size, no body). Parses nothing else; prints its port on stdout.
 */
import { createServer } from 'node:net';

const digest = 'sha256:' + '0'.repeat(64);
const RESPONSE = Buffer.from([
  'HTTP/1.1 200 OK',
  'docker-distribution-api-version: registry/2.0',
  'content-type: application/octet-stream',
  `docker-content-digest: ${digest}`,
  `etag: "${digest}"`,
  'accept-ranges: bytes',
  'cache-control: max-age=31536000',
  'request-id: 00000000-0000-4000-8000-000000000000',
  'content-length: 1234',
  'date: Tue, 24 Nov 2026 00:00:00 GMT',
  'keep-alive: timeout=30',
  '', '',
].join('\r\n'), 'latin1');
const END = Buffer.from('\r\n\r\n');

const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let carry = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    let buf = carry.length ? Buffer.concat([carry, d]) : d;
    let n = 0;
    for (let end = buf.indexOf(END); end >= 0; end = buf.indexOf(END)) {
      n++;
      buf = buf.subarray(end + 4);
    }
    carry = Buffer.from(buf);
    if (n === 1) socket.write(RESPONSE);
    else if (n > 1) socket.write(Buffer.concat(Array.from({ length: n }, () => RESPONSE)));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
