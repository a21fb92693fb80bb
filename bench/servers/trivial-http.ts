/**
 * The least a keep-alive HTTP/1.1 server can do per request, run as its own process by
 * bench/load-limit.ts: for each complete request head (CRLF CRLF) on a connection, one write of a
 * fixed answer. A request starting `GET` gets one shaped like a registry's manifest GET (status
 * 200, its header fields, and a body of the byte count given as the first argument, default
 * 1 KiB); any other, one shaped like a blob HEAD answer (the same header fields and about the
 * same size, no body). Parses nothing else; prints its port on stdout.
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
const bodyBytes = Number(process.argv[2] ?? 1024);
const MANIFEST = Buffer.concat([Buffer.from([
  'HTTP/1.1 200 OK',
  'docker-distribution-api-version: registry/2.0',
  'content-type: application/vnd.docker.distribution.manifest.v2+json',
  `docker-content-digest: ${digest}`,
  `etag: "${digest}"`,
  `content-length: ${bodyBytes}`,
  'date: Tue, 24 Nov 2026 00:00:00 GMT',
  'keep-alive: timeout=30',
  '', '',
].join('\r\n'), 'latin1'), Buffer.alloc(bodyBytes, 0x7b)]);
const END = Buffer.from('\r\n\r\n');
const GET = Buffer.from('GET ');

const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let carry = Buffer.alloc(0);
  socket.on('data', (d: Buffer) => {
    let buf = carry.length ? Buffer.concat([carry, d]) : d;
    const answers: Buffer[] = [];
    for (let end = buf.indexOf(END); end >= 0; end = buf.indexOf(END)) {
      answers.push(buf.subarray(0, 4).equals(GET) ? MANIFEST : RESPONSE);
      buf = buf.subarray(end + 4);
    }
    carry = Buffer.from(buf);
    if (answers.length === 1) socket.write(answers[0]!);
    else if (answers.length > 1) socket.write(Buffer.concat(answers));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
