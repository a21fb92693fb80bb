/**
 * Sends one attempt (docs/webhooks.md "Security", "Guarantees"): a POST made with node:http(s)
 * whose `lookup` resolves the host and keeps only the addresses the destination policy allows
 * (destination.ts), so every connection goes to an address that was checked, after DNS, when it
 * was made. Connections are kept alive between attempts (one agent per policy, idle ones closed
 * after IDLE_SOCKET_MS): a receiver that answers many deliveries is not connected to (and for
 * HTTPS, not handshaken with) once per delivery, which was the largest part of a delivery's CPU.
 * A kept connection stays with the address it was checked for, whatever DNS answers later.
 * Redirects are not followed (a 3xx is a failure), the whole exchange (connect, TLS, headers,
 * body) has one deadline, and the receiver's answer is read up to MAX_RESPONSE_BYTES and
 * discarded (a larger one closes the connection). Nothing of the request (headers, secrets) is
 * logged or returned.
 */
import http from 'node:http';
import https from 'node:https';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { OutboundRequest } from './sources.js';
import type { AttemptOutcome } from './deliveries.js';
import { addressAllowed, hostAndPort, urlProblem, type AllowedHosts } from './destination.js';

/** Bytes of the receiver's answer read before the connection is closed. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * How long an idle kept-alive connection waits for the next attempt (ms): below the 5 s idle
 * timeout of Node's HTTP server and of many proxies, so a connection is seldom reused just as the
 * receiver closes it.
 */
export const IDLE_SOCKET_MS = 2_000;

/** Keep-alive agents, one pair per destination policy (each agent's connections were checked under it). */
const agents = new WeakMap<AllowedHosts, { http: http.Agent; https: https.Agent }>();

/** The agent for `protocol` under policy `allowed`. */
function agentFor(protocol: string, allowed: AllowedHosts): http.Agent {
  let pair = agents.get(allowed);
  if (!pair) {
    const opts = { keepAlive: true, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' as const };
    pair = { http: new http.Agent(opts), https: new https.Agent(opts) };
    agents.set(allowed, pair);
  }
  return protocol === 'https:' ? pair.https : pair.http;
}

/** Error code of a destination refused by the address policy. */
const SSRF = 'ERR_WEBHOOK_DESTINATION_REFUSED';
const TIMEOUT = 'ERR_WEBHOOK_TIMEOUT';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for http.request that resolves `url`'s host and returns only allowed addresses. */
function checkedLookup(url: URL, allowed: AllowedHosts) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const ok = addresses.filter((a) => addressAllowed(url, a.address, allowed));
      if (ok.length === 0) {
        const e: NodeJS.ErrnoException = new Error(`${hostname} resolves only to forbidden addresses`);
        e.code = SSRF;
        return callback(e, []);
      }
      if (options.all) callback(null, ok);
      else callback(null, ok[0]!.address, ok[0]!.family);
    });
  };
}

/** The cause of a failed request, from its error. */
function causeOf(e: NodeJS.ErrnoException): Pick<AttemptOutcome, 'cause' | 'detail'> {
  const code = e.code ?? '';
  if (code === SSRF) return { cause: 'ssrf-refused', detail: 'destination address refused' };
  if (code === TIMEOUT) return { cause: 'timeout', detail: e.message };
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EPIPE' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return { cause: 'refused', detail: code };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return { cause: 'dns', detail: code };
  if (code.startsWith('ERR_TLS') || code.includes('CERT') || code === 'EPROTO') return { cause: 'tls', detail: code };
  return { cause: 'error', detail: code || 'request failed' };
}

/**
 * What makes an attempt's HTTP exchange: `send` below, on the event loop, or the sender thread's
 * (workers/sender-thread.ts), which runs the same `send` off it. Reports the outcome within
 * `timeoutMs` (ms) and never rejects.
 */
export type Sender = (req: OutboundRequest, timeoutMs: number, allowed: AllowedHosts) => Promise<AttemptOutcome>;

/**
 * POSTs `req` and reports the outcome within `timeoutMs` (never rejects).
 * @param allowed the operator's allowance (SLIPWAY_WEBHOOK_ALLOWED_HOSTS)
 */
export function send(req: OutboundRequest, timeoutMs: number, allowed: AllowedHosts): Promise<AttemptOutcome> {
  const problem = urlProblem(req.url, allowed);
  if (problem !== null) return Promise.resolve({ ok: false, code: null, cause: 'ssrf-refused', detail: problem });
  const url = new URL(req.url);
  const { host } = hostAndPort(url);
  if (isIP(host) !== 0 && !addressAllowed(url, host, allowed)) return Promise.resolve({ ok: false, code: null, cause: 'ssrf-refused', detail: 'destination address refused' });
  const body = typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (o: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(o);
    };
    const mod = url.protocol === 'https:' ? https : http;
    const request = mod.request(url, {
      method: 'POST', agent: agentFor(url.protocol, allowed), lookup: checkedLookup(url, allowed) as never,
      headers: { ...req.headers, 'Content-Length': String(body.byteLength) },
    });
    const timer = setTimeout(() => {
      const e: NodeJS.ErrnoException = new Error(`no complete answer within ${timeoutMs} ms`);
      e.code = TIMEOUT;
      request.destroy(e);
    }, timeoutMs);
    request.on('error', (e: NodeJS.ErrnoException) => finish({ ok: false, code: null, ...causeOf(e) }));
    request.on('response', (res) => {
      const code = res.statusCode ?? 0;
      let read = 0;
      const done = () => {
        const ok = code >= 200 && code < 300;
        finish({ ok, code, cause: ok ? null : 'http-status', detail: ok ? null : `HTTP ${code}` });
      };
      res.on('data', (chunk: Buffer) => {
        read += chunk.byteLength;
        if (read < MAX_RESPONSE_BYTES) return;
        done();
        res.destroy(); // the rest is not read: the connection is closed, not reused
      });
      // Read to its end, the answer leaves the connection free for the next attempt.
      res.on('end', done);
      res.on('error', (e: NodeJS.ErrnoException) => finish({ ok: false, code, ...causeOf(e) }));
    });
    request.end(body);
  });
}
