/**
 * Response heads of the own HTTP/1.1 listener (h1-connection.ts), serialized as one latin1
 * string so that a response is one socket write. The fixed parts are built once: the status line
 * per status code, the `date` line per second, and the connection trailer (`keep-alive` or
 * `connection: close`) per listener; per response only the handler's own fields, the length and
 * the request id are added (a HEAD request costs about 100 µs of server CPU in all, so the few
 * microseconds of rebuilding fixed text each time showed in the profile).
 */
import { STATUS_CODES } from 'node:http';
import type { ResponseHeaders } from './exchange.js';

const statusLines = new Map<number, string>();

/** `HTTP/1.1 <status> <reason>\r\n` (built once per status code). */
export function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) statusLines.set(status, (line = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`));
  return line;
}

let dateLine = '';
let dateSecond = 0;

/** `date: <IMF-fixdate>\r\n` (RFC 9110 §6.6.1), rebuilt once per second. */
export function dateField(): string {
  const s = Math.floor(Date.now() / 1000);
  if (s !== dateSecond) {
    dateSecond = s;
    dateLine = `date: ${new Date(s * 1000).toUTCString()}\r\n`;
  }
  return dateLine;
}

/** The last field and the empty line of a head: keep the connection (timeout in seconds) or close it. */
export function connectionTrailer(keepAlive: boolean, keepAliveSeconds: number): string {
  return keepAlive ? `keep-alive: timeout=${keepAliveSeconds}\r\n\r\n` : 'connection: close\r\n\r\n';
}

/**
 * A complete response head: status line, the handler's `headers` (names lowercase; `connection`
 * is the listener's and skipped), `request-id` unless the handler set it, `content-length`
 * (never for 204 and 304, RFC 9110 §8.6), `date`, then `trailer` (`connectionTrailer`).
 * @param requestId the exchange's id, '' for none (a refusal before any exchange existed)
 */
export function responseHead(status: number, headers: ResponseHeaders, length: number, requestId: string, trailer: string): string {
  let head = statusLine(status);
  for (const k in headers) if (k !== 'connection') head += k + ': ' + headers[k] + '\r\n';
  if (requestId !== '' && headers['request-id'] === undefined) head += 'request-id: ' + requestId + '\r\n';
  if (status !== 204 && status !== 304) head += 'content-length: ' + length + '\r\n';
  return head + dateField() + trailer;
}
