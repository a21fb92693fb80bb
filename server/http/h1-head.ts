/**
 * HTTP/1.1 request-head parsing and body framing for the upload host's own listener
 * (server/http/h1-server.ts). Strict on purpose: anything a request-smuggling or desync attack
 * relies on (bare LF, obs-fold, both Content-Length and Transfer-Encoding, differing
 * Content-Lengths, unknown transfer codings) is refused. Rules from RFC 9112 §2–§7.
 */

/** A request head. Header names are lowercase; repeated fields are joined with ", " (RFC 9110 §5.3). */
export interface RequestHead {
  method: string;
  /** Origin-form request target (path and query), as sent. */
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

const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\/[\x21-\x7e]*) HTTP\/1\.([01])$/;
const FIELD_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const CRLFCRLF = Buffer.from('\r\n\r\n');

/**
 * Parses the request head at the start of `buf`.
 * @returns the head, or null when `buf` does not hold a complete head yet
 * @throws HttpParseError 400 for a malformed head, 431 when it exceeds MAX_HEAD_BYTES
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
  if (lines.length - 1 > MAX_HEADER_FIELDS) throw new HttpParseError(431, 'too many header fields');
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const field = FIELD_LINE.exec(lines[i]!);
    if (!field) throw new HttpParseError(400, 'malformed header field');
    const value = field[2]!;
    if (BAD_VALUE.test(value)) throw new HttpParseError(400, 'invalid character in a header value');
    const name = field[1]!.toLowerCase();
    const prior = headers.get(name);
    headers.set(name, prior === undefined ? value : `${prior}, ${value}`);
  }
  return { method: line[1]!, target: line[2]!, minor: line[3] === '1' ? 1 : 0, headers, length: end + 4 };
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
  const values = new Set(cl.split(',').map((v) => v.trim()));
  if (values.size !== 1) throw new HttpParseError(400, 'conflicting Content-Length values');
  const [value] = values;
  if (!/^\d{1,16}$/.test(value!) || Number(value) > Number.MAX_SAFE_INTEGER) throw new HttpParseError(400, 'invalid Content-Length');
  const length = Number(value);
  return length === 0 ? { kind: 'none' } : { kind: 'length', length };
}

/** Whether the connection stays open after this exchange (RFC 9112 §9.3). */
export function keepsAlive(head: RequestHead): boolean {
  const connection = (head.headers.get('connection') ?? '').toLowerCase();
  const options = connection.split(',').map((o) => o.trim());
  if (options.includes('close')) return false;
  return head.minor === 1 || options.includes('keep-alive');
}
