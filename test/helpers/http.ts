/** HTTP helpers for tests: undici requests returning status, headers and body text/JSON. */
import { Agent, request, setGlobalDispatcher } from 'undici';

// The registry host serves a self-signed certificate by default (server/http/tls.ts).
setGlobalDispatcher(new Agent({ connect: { rejectUnauthorized: false } }));

export interface Reply {
  status: number;
  headers: Record<string, string>;
  text: string;
  json: any;
  bytes: Buffer;
}

/** One request; `signal` aborts it (a test's bound on its answer). */
export async function http(method: string, url: string, opts: { headers?: Record<string, string>; body?: string | Buffer; signal?: AbortSignal } = {}): Promise<Reply> {
  const res = await request(url, { method: method as any, headers: opts.headers, body: opts.body, signal: opts.signal });
  const bytes = Buffer.from(await res.body.arrayBuffer());
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) headers[k] = Array.isArray(v) ? v.join(', ') : String(v);
  const text = bytes.toString('utf8');
  let json: unknown;
  try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { status: res.statusCode, headers, text, json, bytes };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const basic = (user: string, pass: string) => ({ authorization: 'Basic ' + Buffer.from(`${user}:${pass}`).toString('base64') });

/** Creates an app through the API as the holder of `token`. */
export async function createApp(apiUrl: string, token: string, name: string, extra: Record<string, unknown> = {}): Promise<Reply> {
  return http('POST', `${apiUrl}/apps`, { headers: { ...bearer(token), 'content-type': 'application/json', accept: 'application/vnd.slipway+json; version=3' }, body: JSON.stringify({ name, ...extra }) });
}

/** The first error code of a distribution error envelope. */
export const errCode = (r: Reply): string | undefined => r.json?.errors?.[0]?.code;
export const errMessage = (r: Reply): string => r.json?.errors?.[0]?.message ?? '';
