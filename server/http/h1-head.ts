/**
 * HTTP/1.1 request-head parsing and body framing for the own listener (server/http/h1-server.ts).
 * Strict on purpose, never more lenient than llhttp (node:http) in its default strict mode:
 * anything a request-smuggling or desync attack relies on (bare LF, obs-fold, whitespace before
 * a colon, both Content-Length and Transfer-Encoding, a repeated or list-valued Content-Length,
 * unknown transfer codings, a missing or repeated Host) is refused. Rules from RFC 9112 §2–§7
 * and RFC 9110 §5, §7.2, §9.1; docs/architecture.md "Which listener, and why" lists where the
 * listener is deliberately stricter than llhttp, and test/http/differential.test.ts proves it.
 */
import { parseTarget, validAuthority } from './h1-target.js';

/** A request head. Header names are lowercase; repeated fields are joined with ", " (RFC 9110 §5.3). */
export interface RequestHead {
  /** The method as sent: case-sensitive (RFC 9110 §9.1), one of IMPLEMENTED_METHODS. */
  method: string;
  /**
   * Path and query as sent (origin-form); for an absolute-form target, its path and query, and
   * `headers.get('host')` is its authority (RFC 9112 §3.2.2: the received Host is ignored).
   */
  target: string;
  /** Minor version: 0 for HTTP/1.0, 1 for HTTP/1.1. */
  minor: 0 | 1;
  headers: Map<string, string>;
  /** Bytes the head used in the buffer, including leading empty lines and the final CRLF CRLF. */
  length: number;
}

/** How the request body is delimited (RFC 9112 §6.3). */
export type BodyFraming = { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' };

/** A request the listener refuses: answered with `status` and the connection closed. */
export class HttpParseError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Largest request head accepted (bytes); larger ones get 431. */
export const MAX_HEAD_BYTES = 16 * 1024;
/** Most header fields accepted in one head. */
export const MAX_HEADER_FIELDS = 100;

/**
 * The methods the listener serves, matched byte for byte (RFC 9110 §9.1: methods are
 * case-sensitive): RFC 9110 §9.3's methods a server can serve without proxying, and PATCH (RFC
 * 5789). A route that does not allow one of them answers 405 with Allow. Any other token (a
 * method no route implements such as PROPFIND or CONNECT, or a known one in another case such
 * as `delete`) is 501 Not Implemented (RFC 9110 §15.6.2) and the connection closes, as node:http
 * closes it on a method llhttp does not know.
 */
export const IMPLEMENTED_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE']);

const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e]+) HTTP\/1\.([01])$/;
const FIELD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
/** Field values are HTAB, SP, VCHAR and obs-text (RFC 9110 §5.5): no other control byte, no DEL. */
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * One field line of a head or a trailer section (RFC 9112 §5): a token name, a colon right
 * after it (no whitespace before it, §5.1), the value with surrounding whitespace removed.
 * @returns [lowercase name, value]
 * @throws HttpParseError 400 for a malformed line (obs-fold included, §5.2) or a value with a
 *         control character (RFC 9110 §5.5)
 */
export function parseFieldLine(line: string): [string, string] {
  const field = FIELD_LINE.exec(line);
  if (!field) throw new HttpParseError(400, 'malformed header field');
  const value = field[2]!;
  if (BAD_VALUE.test(value)) throw new HttpParseError(400, 'invalid character in a header value');
  return [field[1]!.toLowerCase(), value];
}

/**
 * Parses the request head at the start of `buf`.
 * @returns the head, or null when `buf` does not hold a complete head yet
 * @throws HttpParseError 400 for a malformed head (request line, field line, Host), 501 for a
 *         method outside IMPLEMENTED_METHODS, 431 when it exceeds MAX_HEAD_BYTES or
 *         MAX_HEADER_FIELDS
 */
export function parseHead(buf: Buffer): RequestHead | null {
  // RFC 9112 §2.2: ignore empty lines received before the request line.
  let start = 0;
  while (buf.length >= start + 2 && buf[start] === 0x0d && buf[start + 1] === 0x0a) start += 2;
  const end = buf.indexOf(CRLFCRLF, start);
  if (end === -1) {
    if (buf.length - start > MAX_HEAD_BYTES) throw new HttpParseError(431, 'request head too large');
    return null;
  }
  if (end - start > MAX_HEAD_BYTES) throw new HttpParseError(431, 'request head too large');
  const lines = buf.toString('latin1', start, end).split('\r\n');
  const line = REQUEST_LINE.exec(lines[0]!);
  if (!line) throw new HttpParseError(400, 'malformed request line');
  const method = line[1]!;
  if (!IMPLEMENTED_METHODS.has(method)) throw new HttpParseError(501, 'method not implemented');
  const target = parseTarget(line[2]!);
  if (!target) throw new HttpParseError(400, 'malformed request target');
  if (lines.length - 1 > MAX_HEADER_FIELDS) throw new HttpParseError(431, 'too many header fields');
  const headers = new Map<string, string>();
  let hosts = 0;
  for (let i = 1; i < lines.length; i++) {
    const [name, value] = parseFieldLine(lines[i]!);
    if (name === 'host') hosts++;
    // llhttp refuses an HTAB after a Content-Length's digits or after `chunked`: so does this.
    if ((name === 'content-length' || name === 'transfer-encoding') && lines[i]!.slice(name.length + 1).trimStart().includes('\t')) {
      throw new HttpParseError(400, `invalid ${name === 'content-length' ? 'Content-Length' : 'Transfer-Encoding'}`);
    }
    const prior = headers.get(name);
    headers.set(name, prior === undefined ? value : `${prior}, ${value}`);
  }
  const minor = line[3] === '1' ? 1 : 0;
  // RFC 9112 §3.2: 400 for an HTTP/1.1 request without Host, and for any request with more than
  // one Host line or an invalid one.
  if (hosts > 1) throw new HttpParseError(400, 'more than one Host field');
  if (hosts === 0 && minor === 1) throw new HttpParseError(400, 'no Host field');
  if (hosts === 1 && !validAuthority(headers.get('host')!)) throw new HttpParseError(400, 'invalid Host field');
  if (target.authority !== undefined) headers.set('host', target.authority);
  return { method, target: target.path, minor, headers, length: end + 4 };
}

/**
 * How the body of `head` is delimited.
 * @throws HttpParseError 400 for conflicting or malformed framing, 501 for a transfer coding
 *         other than chunked (RFC 9112 §6.1)
 */
export function bodyFraming(head: RequestHead): BodyFraming {
  const te = head.headers.get('transfer-encoding');
  const cl = head.headers.get('content-length');
  if (te !== undefined) {
    if (cl !== undefined) throw new HttpParseError(400, 'both Content-Length and Transfer-Encoding sent');
    if (head.minor === 0) throw new HttpParseError(400, 'Transfer-Encoding in an HTTP/1.0 request');
    if (te.trim().toLowerCase() !== 'chunked') throw new HttpParseError(501, `transfer coding "${te.slice(0, 40)}" not supported`);
    return { kind: 'chunked' };
  }
  if (cl === undefined) return { kind: 'none' };
  // One field line of digits only: a repeated line (joined with ", " above) or a list is
  // refused even when the values agree, as llhttp refuses it (RFC 9110 §8.6 allows either).
  if (!/^\d{1,16}$/.test(cl) || Number(cl) > Number.MAX_SAFE_INTEGER) throw new HttpParseError(400, 'invalid Content-Length');
  const length = Number(cl);
  return length === 0 ? { kind: 'none' } : { kind: 'length', length };
}

/** Whether the connection stays open after this exchange (RFC 9112 §9.3). */
export function keepsAlive(head: RequestHead): boolean {
  const connection = (head.headers.get('connection') ?? '').toLowerCase();
  const options = connection.split(',').map((o) => o.trim());
  if (options.includes('close')) return false;
  return head.minor === 1 || options.includes('keep-alive');
}
