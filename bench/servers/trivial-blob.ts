/**
 * The least an HTTP/1.1 server can do to serve a blob, run as its own process by
 * bench/pull-limit.ts: for a request `GET /<n>` it answers 200 with a Content-Length of n and a
 * body of n bytes written from one 4 MiB buffer held in memory (each write waits for the
 * socket's drain), then closes the connection. Parses nothing else; prints its port on stdout.
 * What a pull client reaches against it is the client's own limit on this machine (the bytes
 * cost no disk and no page cache), and its CPU per GiB is the floor of a server's.
 */
import { createServer, type Socket } from 'node:net';
import { randomFillSync } from 'node:crypto';

const BLOCK = randomFillSync(Buffer.allocUnsafe(4 * 1024 * 1024));

/** Writes `left` bytes of BLOCK to `socket`, waiting for drain, then ends it. */
function send(socket: Socket, left: number): void {
  while (left > 0) {
    const n = Math.min(left, BLOCK.length);
    left -= n;
    if (!socket.write(n === BLOCK.length ? BLOCK : BLOCK.subarray(0, n))) {
      socket.once('drain', () => send(socket, left));
      return;
    }
  }
  socket.end();
}

const server = createServer((socket) => {
  socket.setNoDelay(true);
  socket.on('error', () => {});
  let head = '';
  const onData = (d: Buffer) => {
    head += d.toString('latin1');
    if (!head.includes('\r\n\r\n')) return;
    socket.off('data', onData);
    const m = /^GET \/(\d+)/.exec(head);
    if (!m) {
      socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      return;
    }
    const size = Number(m[1]);
    socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: ${size}\r\nconnection: close\r\n\r\n`, 'latin1');
    send(socket, size);
  };
  socket.on('data', onData);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as { port: number }).port}\n`));
