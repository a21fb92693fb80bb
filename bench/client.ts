/**
 * The one registry client used against every server: undici Pools with keep-alive (one per
 * origin, so upload Locations on another host get their own pool), an optional Authorization
 * header on every request, and helpers that follow upload Locations the way a client does.
 */
import { Pool } from 'undici';
import type { Readable } from 'node:stream';

/** A finished response: status, lower-case headers, and the body (empty when dumped). */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Options of one request. */
export interface CallOptions {
  headers?: Record<string, string>;
  body?: Buffer | string | Readable;
  /** Discard the body instead of buffering it. */
  dump?: boolean;
  /** Per-request timeout for headers and body gaps (ms). */
  timeoutMs?: number;
}

/** HTTP client over undici Pools, bound to one registry base URL. */
export class RegistryClient {
  readonly #pools = new Map<string, Pool>();

  /**
   * @param base registry base URL, e.g. http://127.0.0.1:5000
   * @param authorization value of the Authorization header sent on every request, if any
   * @param connections max keep-alive connections per origin
   */
  constructor(readonly base: string, readonly authorization: string | undefined, readonly connections: number) {}

  /** The pool for `origin`, created on first use. */
  pool(origin: string): Pool {
    let p = this.#pools.get(origin);
    if (!p) {
      p = new Pool(origin, {
        connections: this.connections,
        pipelining: 1,
        keepAliveTimeout: 60_000,
        headersTimeout: 120_000,
        bodyTimeout: 120_000,
      });
      this.#pools.set(origin, p);
    }
    return p;
  }

  /** Absolute URL of a registry path (`/v2/...`) or of a Location relative to `from`. */
  resolve(location: string, from: string = this.base): URL {
    return new URL(location, from);
  }

  /** Sends one request and reads (or dumps) the whole response body. */
  async call(method: string, url: string | URL, opts: CallOptions = {}): Promise<Reply> {
    const u = typeof url === 'string' ? this.resolve(url) : url;
    const headers: Record<string, string> = { ...opts.headers };
    if (this.authorization) headers.authorization = this.authorization;
    const res = await this.pool(u.origin).request({
      method: method as 'GET',
      path: u.pathname + u.search,
      headers,
      body: opts.body ?? null,
      headersTimeout: opts.timeoutMs,
      bodyTimeout: opts.timeoutMs,
    });
    let body = Buffer.alloc(0);
    if (opts.dump || method === 'HEAD') await res.body.dump();
    else body = Buffer.from(await res.body.arrayBuffer());
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
    return { status: res.statusCode, headers: out, body };
  }

  /** Like `call`, but throws a descriptive error unless the status is one of `expect`. */
  async expect(expect: number[], method: string, url: string | URL, opts: CallOptions = {}): Promise<Reply> {
    const r = await this.call(method, url, opts);
    if (!expect.includes(r.status)) {
      throw new Error(`${method} ${String(url)} answered ${r.status} (expected ${expect.join('/')}): ${r.body.toString('utf8').slice(0, 500)}`);
    }
    return r;
  }

  /** POST /v2/<repo>/blobs/uploads/: starts a session and returns its absolute Location. */
  async startUpload(repo: string): Promise<URL> {
    const r = await this.expect([202], 'POST', `/v2/${repo}/blobs/uploads/`, { headers: { 'content-length': '0' } });
    return this.location(r, `/v2/${repo}/blobs/uploads/`);
  }

  /** The Location of a reply, resolved against the URL the request went to. */
  location(r: Reply, requestUrl: string | URL): URL {
    const loc = r.headers.location;
    if (!loc) throw new Error(`no Location header in the ${r.status} reply to ${String(requestUrl)}`);
    return this.resolve(loc, String(this.resolve(String(requestUrl))));
  }

  /** A session Location with `digest=` appended, as a client completes an upload. */
  withDigest(location: URL, digest: string): URL {
    const s = location.toString();
    return new URL(s + (location.search ? '&' : '?') + 'digest=' + digest);
  }

  /**
   * Sends one bodiless request to a prepared absolute URL and counts the response body bytes
   * without keeping them (pulls, load loops). Returns the status and byte count. `stallMs`
   * bounds the wait for each piece of the body.
   */
  async fetchCount(method: 'GET' | 'HEAD', url: URL, headers: Record<string, string> = {}, stallMs?: number): Promise<{ status: number; bytes: number; location?: string }> {
    const h = this.authorization ? { ...headers, authorization: this.authorization } : headers;
    const t0 = performance.now();
    const res = await this.pool(url.origin).request({ method, path: url.pathname + url.search, headers: h, bodyTimeout: stallMs });
    let bytes = 0;
    if (method === 'HEAD') await res.body.dump();
    else {
      try {
        for await (const c of res.body) bytes += (c as Buffer).length;
      } catch (e) {
        const secs = ((performance.now() - t0) / 1000).toFixed(1);
        throw new Error(`${method} ${url} (status ${res.statusCode}) broke off after ${bytes} of ${res.headers['content-length'] ?? '?'} bytes in ${secs} s: ${(e as Error).message}`);
      }
    }
    const loc = res.headers.location;
    return { status: res.statusCode, bytes, location: typeof loc === 'string' ? loc : undefined };
  }

  /** Closes every pool. */
  async close(): Promise<void> {
    await Promise.all([...this.#pools.values()].map((p) => p.close().catch(() => undefined)));
    this.#pools.clear();
  }
}

/** `Basic base64(user:password)`. */
export function basicAuth(user: string, password: string): string {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}
