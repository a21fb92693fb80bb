/** The upload listener's HTTP/1.1 head parser, body framing and chunked decoder (RFC 9112). */
import t from 'tap';
import { bodyFraming, HttpParseError, keepsAlive, MAX_HEAD_BYTES, parseHead } from '../../server/http/h1-head.js';
import { ChunkedDecoder } from '../../server/http/h1-chunked.js';

const head = (s: string) => parseHead(Buffer.from(s, 'latin1'));
const status = (fn: () => unknown): number | undefined => {
  try {
    fn();
  } catch (e) {
    if (e instanceof HttpParseError) return e.status;
    throw e;
  }
  return undefined;
};

t.test('a complete head', async (t) => {
  const h = head('\r\nPATCH /v2/a/b/blobs/uploads/1?_state=x HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a:  2 \r\nContent-Length: 5\r\n\r\nhello')!;
  t.equal(h.method, 'PATCH');
  t.equal(h.target, '/v2/a/b/blobs/uploads/1?_state=x');
  t.equal(h.minor, 1);
  t.equal(h.headers.get('x-a'), '1, 2', 'repeated fields joined, whitespace trimmed');
  t.equal(h.length, Buffer.byteLength('\r\nPATCH /v2/a/b/blobs/uploads/1?_state=x HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a:  2 \r\nContent-Length: 5\r\n\r\n'));
  t.same(bodyFraming(h), { kind: 'length', length: 5 });
  t.ok(keepsAlive(h));
  t.equal(head('GET / HTTP/1.1\r\nHost: h\r\n'), null, 'incomplete');
});

t.test('refused heads', async (t) => {
  const cases: Array<[string, number]> = [
    ['GET / HTTP/2.0\r\n\r\n', 400],
    ['GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['GET http://u@x/ HTTP/1.1\r\nHost: x\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nHost: a b\r\n\r\n', 400],
    ['get / HTTP/1.1\r\nHost: h\r\n\r\n', 501],
    ['PROPFIND / HTTP/1.1\r\nHost: h\r\n\r\n', 501],
    ['GET /a b HTTP/1.1\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nBad Name: x\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nX: a\nY: b\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n', 400],
    ['GET / HTTP/1.1\r\nX: ' + 'a'.repeat(MAX_HEAD_BYTES) + '\r\n\r\n', 431],
  ];
  for (const [text, want] of cases) t.equal(status(() => head(text)), want, JSON.stringify(text.slice(0, 40)));
  t.equal(status(() => head('GET / HTTP/1.1\r\nX: ' + 'a'.repeat(MAX_HEAD_BYTES + 10))), 431, 'oversized before the end is seen');
});

t.test('body framing', async (t) => {
  const framing = (text: string) => bodyFraming(head(text.replace('\r\n', '\r\nHost: h\r\n') + '\r\n\r\n')!);
  t.same(framing('PUT / HTTP/1.1\r\nTransfer-Encoding: chunked'), { kind: 'chunked' });
  t.same(framing('PUT / HTTP/1.1\r\nContent-Length: 0'), { kind: 'none' });
  t.same(framing('PUT / HTTP/1.1\r\nContent-Length: 1000000000000'), { kind: 'length', length: 1e12 }, '13-digit lengths');
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 7')), 400, 'identical repeats, as llhttp');
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 7, 7')), 400, 'a list, as llhttp');
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 7\t')), 400, 'HTAB after the digits, as llhttp');
  t.same(framing('PUT / HTTP/1.1\r\nContent-Length:\t7 '), { kind: 'length', length: 7 }, 'HTAB before, SP after');
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\t')), 400, 'HTAB after chunked, as llhttp');
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 7\r\nTransfer-Encoding: chunked')), 400, 'smuggling shape');
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 7\r\nContent-Length: 8')), 400);
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: -1')), 400);
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 0x10')), 400);
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nContent-Length: 99999999999999999')), 400);
  t.equal(status(() => framing('PUT / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked')), 501);
  t.equal(status(() => framing('PUT / HTTP/1.0\r\nTransfer-Encoding: chunked')), 400);
  t.notOk(keepsAlive(head('GET / HTTP/1.0\r\n\r\n')!));
  t.ok(keepsAlive(head('GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n')!));
  t.notOk(keepsAlive(head('GET / HTTP/1.1\r\nHost: h\r\nConnection: Close\r\n\r\n')!));
});

/** Decodes `wire` fed in pieces of `step` bytes; returns payload and bytes consumed. */
function decode(wire: string, step: number): { payload: string; used: number; done: boolean } {
  const d = new ChunkedDecoder();
  const buf = Buffer.from(wire, 'latin1');
  let payload = '';
  let used = 0;
  for (let i = 0; i < buf.length && !d.done; i += step) {
    const piece = buf.subarray(i, Math.min(buf.length, i + step));
    const n = d.feed(piece, (p) => { payload += p.toString('latin1'); });
    used += n;
    if (n < piece.length) break;
  }
  return { payload, used, done: d.done };
}

t.test('chunked decoding in any split', async (t) => {
  const wire = '5\r\nhello\r\n0A;ext=1;q="a\\"b";e\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n';
  for (const step of [1, 2, 3, 7, 1000]) {
    const r = decode(wire + 'GET / HTTP/1.1', step);
    t.equal(r.payload, 'hello0123456789', `payload, step ${step}`);
    t.equal(r.used, wire.length, `stops at the message end, step ${step}`);
    t.ok(r.done);
  }
  t.same(decode('0\r\n\r\n', 1), { payload: '', used: 5, done: true }, 'empty body');
});

t.test('malformed chunked bodies', async (t) => {
  for (const wire of ['x\r\n', '5\nhello', '5\r\nhelloX\r\n', '\r\n', '12345678901234\r\n', '5\r\nhello\r\n0\r\nT: x\n\r\n', '5;' + 'a'.repeat(2000),
    '5 junk\r\n', '5\t\r\n', '5;a="\x01"\r\n', '5;\r\n', '5;a=\r\n', '5; a\r\n', '5;a =b\r\n', ' 5\r\n', '0\r\nX\r\n\r\n', '0\r\nX : a\r\n\r\n',
    '0\r\nX: a\r\n b\r\n\r\n', '0\r\nX: \x00\r\n\r\n', '0\r\nContent-Length: 0\r\n\r\n', '0\r\nGET / HTTP/1.1\r\n\r\n']) {
    t.equal(status(() => decode(wire, 3)), 400, JSON.stringify(wire.slice(0, 30)));
  }
});

t.test('absolute-form: the authority replaces Host (RFC 9112 §3.2.2)', async (t) => {
  const h = head('GET HTTP://Reg.Example:5000?x=1 HTTP/1.1\r\nHost: other\r\n\r\n')!;
  t.equal(h.target, '/?x=1');
  t.equal(h.headers.get('host'), 'Reg.Example:5000');
  t.equal(head('PUT https://[::1]:443/v2/a/blobs/uploads/1?_state=s HTTP/1.0\r\n\r\n')!.target, '/v2/a/blobs/uploads/1?_state=s');
  t.equal(status(() => head('GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n')), 400, 'no host');
  t.equal(status(() => head('GET http://h/x HTTP/1.1\r\n\r\n')), 400, 'HTTP/1.1 still needs a Host line');
});
