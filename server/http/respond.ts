/** Small response helpers shared by every host. */
import type { Exchange, ResponseHeaders } from './exchange.js';

/** Sends `body` as JSON (`content-type` defaults to application/json; charset=utf-8). */
export function sendJson(ex: Exchange, status: number, body: unknown, headers: ResponseHeaders = {}): void {
  const text = JSON.stringify(body);
  ex.send(status, { 'content-type': 'application/json; charset=utf-8', ...headers }, text, Buffer.byteLength(text));
}
