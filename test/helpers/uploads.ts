/**
 * A request whose body is sent in parts under test control (node:http), for starting one upload
 * operation while another is mid-body. Works against the upload host (plain HTTP) and the
 * registry host (HTTPS, self-signed).
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface OpenRequest {
  /** Sends part of the body now. */
  send(bytes: Buffer): Promise<void>;
  /** Sends the last part (if any) and ends the body. */
  end(bytes?: Buffer): void;
  /** Cuts the connection. */
  abort(): void;
  /** The answer: status and body text (status 0 when the connection broke without one). */
  response: Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }>;
}

/** Starts `method url` with `headers` (set Content-Length or Transfer-Encoding yourself) and returns control of its body. */
export function openRequest(method: string, url: string, headers: Record<string, string>): OpenRequest {
  const u = new URL(url);
  const make = u.protocol === 'https:' ? httpsRequest : httpRequest;
  const req: ClientRequest = make(u, { method, headers, agent: false, rejectUnauthorized: false } as object);
  req.flushHeaders();
  const response = new Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }>((resolve) => {
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (d: Buffer) => parts.push(d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString(), headers: res.headers }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString(), headers: res.headers }));
    });
    req.on('error', () => resolve({ status: 0, text: '', headers: {} }));
  });
  return {
    send: (bytes) => new Promise((resolve) => { if (req.destroyed) resolve(); else req.write(bytes, () => resolve()); }),
    end: (bytes) => { if (!req.destroyed) req.end(bytes); },
    abort: () => req.destroy(),
    response,
  };
}
