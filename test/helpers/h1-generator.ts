/**
 * Seeded generator of raw HTTP/1.1 request streams for the differential test of the own listener
 * against node:http (test/http/differential.test.ts, test/helpers/h1-differential.ts).
 *
 * A case is the bytes one client connection sends (one or more pipelined requests) and the
 * points where they are split into separate writes. It comes from one of three sources:
 * - valid requests: every implemented method, origin- and absolute-form targets, Content-Length
 *   and chunked bodies (extensions, trailers), HTTP/1.0 and 1.1, Connection options, pipelining;
 * - known smuggling and desync shapes: CL.TE, TE.CL, TE.TE obfuscations, duplicate and list
 *   Content-Lengths, requests hidden in trailers, chunk-size tricks, bare LF and CR, NUL, obs-fold,
 *   whitespace before a colon, method case, absolute-form oddities;
 * - byte-level mutations of either: bytes inserted, deleted or replaced (with bytes that matter to
 *   a parser: CR, LF, NUL, SP, HTAB, ":", ";", ",", '"', DEL, obs-text, digits, hex letters), lines
 *   duplicated, dropped or case-flipped, header lines inserted, numbers changed, the stream cut.
 * Every case is a pure function of (seed, index): `generateCase(seed, i)` rebuilds a failing one.
 */

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let x = Math.imul(s ^ (s >>> 15), 1 | s);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** One generated connection: its bytes and where they are split into writes. */
export interface GeneratedCase {
  index: number;
  /** Which generator made it (for the summary): valid, smuggle, mutated-valid, mutated-smuggle. */
  kind: string;
  bytes: Buffer;
  /** Ascending offsets in (0, bytes.length) where a new write starts. */
  splits: number[];
}

type Rng = () => number;

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const BODY_METHODS = ['POST', 'PUT', 'PATCH'];
const PATHS = ['/', '/v2/', '/v2/app/web/blobs/uploads/', '/v2/app/web/manifests/latest', '/apps', '/apps/a%20b?x=1&y=%2F', '/login?return_to=/x', '/a/../b', '/q?', '/x;p=1', '/~user/!$&\'()*+,=@:'];
const HOSTS = ['h', 'localhost:5000', '127.0.0.1:8080', '[::1]:443', 'registry.example.com', 'a-b.c_d~', ''];
const EXTRA = [
  'Accept: */*', 'User-Agent: diff/1.0', 'Authorization: Bearer abc.def', 'X-Empty:', 'X-Ws: \t a b \t', 'Cookie: a=1; b=2',
  'Accept-Encoding: gzip, deflate', 'X-Obs: caf\xe9', 'Content-Type: application/json', 'Range: bytes=0-10', 'If-None-Match: "x"',
  'X-Dup: 1', 'X-Dup: 2', 'Via: 1.1 proxy', 'Forwarded: for=1.2.3.4', 'X-Quote: "a\\"b"', 'Expect: 100-continue',
];
const SMUGGLE_HEADERS = [
  'Transfer-Encoding: chunked', 'Transfer-Encoding: xchunked', 'Transfer-Encoding: chunked ', 'Transfer-Encoding:\tchunked',
  'Transfer-Encoding : chunked', ' Transfer-Encoding: chunked', 'Transfer-Encoding: chunked, identity', 'Transfer-Encoding: identity, chunked',
  'Transfer-Encoding: gzip, chunked', 'Transfer-Encoding: CHUNKED', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked',
  'Transfer-Encoding:\r\n chunked', 'Transfer-Encoding: "chunked"', 'Transfer_Encoding: chunked', 'Transfer-Encoding: chunked;q=1',
  'Content-Length: 0', 'Content-Length: 5', 'Content-Length: 05', 'Content-Length: +5', 'Content-Length: -1', 'Content-Length: 5 ', 'Content-Length: 5\t', 'Content-Length:\t5',
  'Content-Length: 5, 5', 'Content-Length: 5,5', 'Content-Length: 5\r\nContent-Length: 5', 'Content-Length: 5\r\nContent-Length: 6',
  'Content-Length: 0x5', 'Content-Length: 5.0', 'Content-Length: 1e1', 'Content-Length:', 'Content-Length: 99999999999999999999',
  'Content-Length : 5', 'Content-Length: 5\x00', 'Host: a\r\nHost: b', 'Host: a b', 'Host: a@b', 'Connection: close', 'Connection: keep-alive',
  'Connection: close, keep-alive', 'Upgrade: h2c', 'X: a\nY: b', 'X: a\rY: b', 'X:\x00', 'X\x00: a', 'X : a', 'X\t: a', ': a', 'X', '\xe9: a',
];
const INTERESTING = [0x0d, 0x0a, 0x00, 0x20, 0x09, 0x3a, 0x3b, 0x2c, 0x22, 0x7f, 0x80, 0xff, 0x30, 0x31, 0x35, 0x61, 0x46, 0x2f, 0x3f, 0x40, 0x5c, 0x3d, 0x01, 0x0b];

const int = (r: Rng, n: number) => Math.floor(r() * n);
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[int(r, xs.length)]!;

function token(r: Rng, n = 1 + int(r, 8)): string {
  const cs = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!#$%&\'*+^`|~';
  let s = '';
  for (let i = 0; i < n; i++) s += cs[int(r, cs.length)];
  return s;
}

function bodyBytes(r: Rng, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(r() < 0.9 ? 0x20 + int(r, 95) : int(r, 256));
  return s;
}

/** A chunked body of `payload`: random chunk sizes (hex case, leading zeros), extensions, trailers. */
function chunked(r: Rng, payload: string): string {
  let out = '';
  let pos = 0;
  while (pos < payload.length) {
    const n = 1 + int(r, Math.min(payload.length - pos, 40));
    let size = n.toString(16);
    if (r() < 0.2) size = size.toUpperCase();
    if (r() < 0.1) size = '000'.slice(0, 1 + int(r, 3)) + size;
    out += size + extensions(r) + '\r\n' + payload.slice(pos, pos + n) + '\r\n';
    pos += n;
  }
  out += (r() < 0.1 ? '000' : '0') + extensions(r) + '\r\n';
  if (r() < 0.3) for (let i = int(r, 3); i >= 0; i--) out += `${pick(r, ['X-Trailer', 'Digest', 'Server-Timing', 'Expires'])}: ${token(r)}\r\n`;
  return out + '\r\n';
}

function extensions(r: Rng): string {
  if (r() < 0.8) return '';
  let s = '';
  for (let i = int(r, 2); i >= 0; i--) {
    s += ';' + token(r);
    const v = r();
    if (v < 0.3) s += '=' + token(r);
    else if (v < 0.5) s += '="' + pick(r, ['a b', 'x\\"y', '', 'caf\xe9', 'q\\\\']) + '"';
  }
  return s;
}

/** One valid request. */
function validRequest(r: Rng): string {
  const v = r();
  const method = v < 0.5 ? pick(r, METHODS) : pick(r, BODY_METHODS);
  const minor = r() < 0.9 ? 1 : 0;
  const host = pick(r, HOSTS);
  let target = pick(r, PATHS);
  if (r() < 0.1) target = `${pick(r, ['http', 'https', 'HTTP'])}://${host || 'h'}${target}`;
  const lines = [`${method} ${target} HTTP/1.${minor}`];
  if (minor === 1 || r() < 0.5) lines.push(`${pick(r, ['Host', 'host', 'HOST'])}: ${host}`);
  for (let i = int(r, 4); i > 0; i--) lines.push(pick(r, EXTRA));
  if (minor === 0 && r() < 0.5) lines.push('Connection: keep-alive');
  if (r() < 0.05) lines.push('Connection: close');
  let body = '';
  if (BODY_METHODS.includes(method) || r() < 0.1) {
    const payload = bodyBytes(r, int(r, 60));
    if (minor === 1 && r() < 0.4) {
      lines.push(`${pick(r, ['Transfer-Encoding', 'transfer-encoding'])}: ${pick(r, ['chunked', 'Chunked'])}`);
      body = chunked(r, payload);
    } else if (payload.length > 0 || r() < 0.5) {
      lines.push(`Content-Length: ${payload.length}`);
      body = payload;
    }
  }
  return (r() < 0.05 ? '\r\n' : '') + lines.join('\r\n') + '\r\n\r\n' + body;
}

/** One of the known smuggling and desync shapes (often followed by a request a wrong reading would run). */
function smuggleRequest(r: Rng): string {
  const next = 'GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n';
  const shapes: Array<() => string> = [
    () => `POST /apps HTTP/1.1\r\nHost: h\r\nContent-Length: ${pick(r, ['4', '6', '35'])}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${next}`,
    () => `POST /apps HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n`,
    () => `POST /apps HTTP/1.1\r\nHost: h\r\n${pick(r, SMUGGLE_HEADERS)}\r\n\r\n${pick(r, ['0\r\n\r\n', '5\r\nhello\r\n0\r\n\r\n', 'hello', ''])}${next}`,
    () => `POST /apps HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${next}`,
    () => `POST /apps HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n${pick(r, ['X: a', 'X : a', 'X:\x00', ' folded', 'Content-Length: 5', 'Transfer-Encoding: chunked', 'Host: x', 'X', 'X: a\nY: b', 'X\ta: b'])}\r\n\r\n${next}`,
    () => `POST /apps HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n${pick(r, ['5 junk', '5\t', '5 ', '5;a="\x01"', '5;a=b c', '5 ;a', '5;', '5;=', '5;a=', '5;a="b', '+5', '-5', '0x5', '5\n', 'fffffffffffffffff', '00000000000000005', '5;a=b;c="d\\"e"', '5;a\x00'])}\r\nhello\r\n0\r\n\r\n${next}`,
    () => `POST /apps HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello${pick(r, ['', '\n', '\r', 'X\r\n', '\r\r\n'])}\r\n0\r\n\r\n${next}`,
    () => `${pick(r, ['dElEtE', 'delete', 'get', 'Get', 'PROPFIND', 'CONNECT', 'M-SEARCH', 'PRI', 'GET\t', 'G ET', 'QUERY', 'SOURCE', 'FOO'])} ${pick(r, ['/apps/x', 'h:443', '*', '/'])} HTTP/1.1\r\nHost: h\r\n\r\n${next}`,
    () => `GET ${pick(r, ['http://h/x', 'https://h:1/x?y', 'ftp://h/x', 'http://u@h/x', 'http:///x', 'http://h', 'http://h?x', 'HTTP://H/', 'http://[::1]:80/', 'http://h:/', '//h/x', 'http:/h/x', '*', 'h:80', 'http://h#f'])} HTTP/1.1\r\nHost: ${pick(r, ['h', 'other', ''])}\r\n\r\n${next}`,
    () => `GET / HTTP/${pick(r, ['1.1', '1.0', '0.9', '2.0', '1.2', '11', '1.1 ', '1.1\t'])}\r\n${pick(r, ['Host: h\r\n', ''])}\r\n${next}`,
    () => `GET ${pick(r, ['/a b', '/a\tb', '/\x7f', '/\x80', '/a#b', '/a\\b', '/%00'])} HTTP/1.1\r\nHost: h\r\n\r\n${next}`,
    () => `GET / HTTP/1.1\r\nHost: h\r\n${pick(r, SMUGGLE_HEADERS)}\r\n\r\n${next}`,
    () => `GET / HTTP/1.1${pick(r, ['\n', '\r', '\r\r\n', ' \r\n'])}Host: h\r\n\r\n${next}`,
    () => `GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n${next}`,
    () => `POST / HTTP/1.0\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${next}`,
    () => `GET / HTTP/1.1\r\n${pick(r, ['', 'Host: h\r\nHost: h\r\n', 'Host: h\r\nhost: i\r\n', 'Host:\r\n', 'Host: h:x\r\n', 'Host: [::1\r\n', 'Host: h/x\r\n'])}\r\n${next}`,
  ];
  return pick(r, shapes)();
}

/** Applies one byte- or line-level mutation. */
function mutate(r: Rng, s: string): string {
  const at = int(r, s.length + 1);
  const byte = () => String.fromCharCode(r() < 0.8 ? pick(r, INTERESTING) : int(r, 256));
  const lines = () => s.split('\r\n');
  switch (int(r, 11)) {
    case 0: return s.slice(0, at) + byte() + s.slice(at);
    case 1: return s.slice(0, at) + s.slice(at + 1 + int(r, 2));
    case 2: return s.slice(0, at) + byte() + s.slice(at + 1);
    case 3: { const l = lines(); const i = int(r, l.length); l.splice(i, 0, l[i]!); return l.join('\r\n'); }
    case 4: { const l = lines(); l.splice(int(r, l.length), 1); return l.join('\r\n'); }
    case 5: { const c = s[at] ?? ''; return s.slice(0, at) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + s.slice(at + 1); }
    case 6: { const l = lines(); l.splice(1 + int(r, Math.max(1, l.length - 1)), 0, pick(r, SMUGGLE_HEADERS)); return l.join('\r\n'); }
    case 7: return s.replace(/\d+/g, (d) => (r() < 0.3 ? String(Math.max(0, Number(d) + int(r, 5) - 2)) : d));
    case 8: { const i = s.indexOf('\r\n', at); return i < 0 ? s : s.slice(0, i) + pick(r, ['\n', '\r', '\r\r\n', ' \r\n', '\r\n ', '\r\n\t']) + s.slice(i + 2); }
    case 9: return s.slice(0, at);
    default: return s + pick(r, ['\r\n', 'GET / HTTP/1.1\r\nHost: h\r\n\r\n', 'x', '0\r\n\r\n', '\x00']);
  }
}

/** Case `index` of the stream seeded with `seed`. */
export function generateCase(seed: number, index: number): GeneratedCase {
  const r = prng((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
  const base = r() < 0.45 ? 'valid' : 'smuggle';
  let text = '';
  for (let n = base === 'valid' ? 1 + (r() < 0.3 ? int(r, 3) : 0) : 1; n > 0; n--) text += base === 'valid' ? validRequest(r) : smuggleRequest(r);
  let kind = base;
  if (r() < 0.6) {
    kind = `mutated-${base}`;
    for (let m = 1 + (r() < 0.3 ? int(r, 3) : 0); m > 0; m--) text = mutate(r, text);
  }
  const bytes = Buffer.from(text, 'latin1');
  const splits = new Set<number>();
  if (bytes.length > 1) for (let k = r() < 0.5 ? 0 : 1 + int(r, 3); k > 0; k--) splits.add(1 + int(r, bytes.length - 1));
  return { index, kind, bytes, splits: [...splits].sort((a, b) => a - b) };
}
