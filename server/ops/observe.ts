/**
 * One place where every request of every public host passes: it counts the request in flight
 * (graceful drain waits on that count), measures bytes in and out, and when the handler is done
 * writes the access-log line and the request metrics. The `Request-Id` response header is
 * written by the transports (h1-response.ts, uws.ts) from the exchange's id, so that no response
 * needs its headers object copied to add it.
 *
 * The access log line never carries a credential: the path is logged as its route template
 * (no query string, so no `_state`, `code` or token parameter), headers are not logged, and the
 * caller appears only as account and authorization ids (server/ops/request-info.ts).
 */
import type { BodySink, ByteSource, Exchange, Handler, ResponseHeaders } from '../http/exchange.js';
import { collectBody } from '../http/exchange.js';
import type { Logger } from '../log.js';
import { statusClass, type Metrics } from './metrics.js';
import { routeTemplate, type HostName } from './routes.js';
import { callerOf, type CallerIds } from './request-info.js';
import type { RequestTracker } from './drain.js';
import { isPromise, tryMaybe, type MaybePromise } from '../../engine/maybe-sync.js';

/** Methods that get their own metrics label; any other is `other` (labels stay bounded). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** pino level of access-log lines (a 500 is always `error`, another 5xx at least `warn`). */
export type AccessLogLevel = 'info' | 'debug' | 'trace' | 'silent';

/** What `observe` reports to. */
export interface Observers {
  metrics: Metrics;
  log: Logger;
  accessLogLevel: AccessLogLevel;
  tracker: RequestTracker;
}

/** An Exchange that counts body bytes (the transport adds `Request-Id` to every response). */
class ObservedExchange implements Exchange {
  bytesIn = 0;
  bytesOut = 0;
  /** Set by request-info.ts `noteCaller`. */
  caller: CallerIds | undefined = undefined;
  /** Set by request-info.ts `noteRoute`: the route pattern the dispatcher matched. */
  route: string | undefined = undefined;
  /** The client address, read just before responding when `wantAddress` (it costs a uWS call). */
  client = '';
  readonly #inner: Exchange;
  readonly #wantAddress: boolean;
  constructor(inner: Exchange, wantAddress: boolean) {
    this.#inner = inner;
    this.#wantAddress = wantAddress;
  }
  get method() { return this.#inner.method; }
  get path() { return this.#inner.path; }
  get query() { return this.#inner.query; }
  get id() { return this.#inner.id; }
  get transport() { return this.#inner.transport; }
  get remoteAddress() { return this.#inner.remoteAddress; }
  get memo() { return this.#inner.memo; }
  get aborted() { return this.#inner.aborted; }
  get responded() { return this.#inner.responded; }
  get status() { return this.#inner.status; }
  header(name: string): string { return this.#inner.header(name); }

  body(limit: number): Promise<Buffer> {
    return collectBody(this.header('content-length'), (sink) => this.pipeBody(sink), limit);
  }

  pipeBody(sink: BodySink): Promise<number> {
    const counted: BodySink = {
      write: (c) => { this.bytesIn += c.length; return sink.write(c); },
      onDrain: (cb) => sink.onDrain(cb),
    };
    if (sink.region && sink.commit) {
      counted.region = () => sink.region!();
      counted.commit = (n) => { this.bytesIn += n; return sink.commit!(n); };
    }
    return this.#inner.pipeBody(counted);
  }

  /** Reads the client address for the access log while the response is still open (uWS). */
  #noteClient(): void {
    if (this.#wantAddress && !this.responded) this.client = this.#inner.remoteAddress;
  }

  send(status: number, headers: ResponseHeaders, body?: string | Buffer, headLength?: number): void {
    if (!this.responded && !this.aborted && this.method !== 'HEAD' && body) this.bytesOut += typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    this.#noteClient();
    this.#inner.send(status, headers, body, headLength);
  }

  async sendBytes(status: number, headers: ResponseHeaders, source: ByteSource, start: number, length: number): Promise<void> {
    this.#noteClient();
    await this.#inner.sendBytes(status, headers, source, start, length);
    if (this.responded && !this.aborted) this.bytesOut += length;
  }
}

/**
 * Wraps a host's handler and error handler: the result handles errors itself (always ends in a
 * response or an aborted exchange) and reports every request to `obs`. A handler that answers
 * synchronously is reported synchronously (no promise on that path, engine/maybe-sync.ts).
 */
export function observe(host: HostName, handler: Handler, onError: (ex: Exchange, e: unknown) => void, obs: Observers): Handler {
  const { metrics, log, tracker } = obs;
  return (inner) => {
    const started = performance.now();
    const level0 = obs.accessLogLevel;
    const ex = new ObservedExchange(inner, level0 !== 'silent' && log.isLevelEnabled(level0));
    tracker.begin();
    metrics.inFlight[host] = (metrics.inFlight[host] ?? 0) + 1;
    let done: MaybePromise<void> = undefined;
    try {
      done = tryMaybe(() => handler(ex), (e) => onError(ex, e));
    } finally {
      if (!isPromise(done)) report(host, ex, started, obs);
    }
    return isPromise(done) ? done.finally(() => report(host, ex, started, obs)) : undefined;
  };
}

/** The end of a request: the in-flight counts, the request metrics and the access-log line. */
function report(host: HostName, ex: ObservedExchange, started: number, obs: Observers): void {
  const { metrics, log, tracker } = obs;
  tracker.end();
  metrics.inFlight[host]!--;
  const seconds = (performance.now() - started) / 1000;
  const route = routeTemplate(host, ex.path, ex.route);
  const status = ex.aborted && !ex.responded ? 0 : ex.status;
  const series = host + ' ' + route;
  const method = METHODS.has(ex.method) ? ex.method : 'other';
  const statusLabel = statusClass(status);
  metrics.requestDuration.observe(series + ' ' + method + ' ' + statusLabel, () => ({ host, route, method, status: statusLabel }), seconds);
  if (ex.bytesIn > 0) metrics.receivedBytes.add(series, () => ({ host, route }), ex.bytesIn);
  if (ex.bytesOut > 0) metrics.sentBytes.add(series, () => ({ host, route }), ex.bytesOut);
  const auth = ex.header('authorization');
  if (auth) {
    const prefix = auth.slice(0, 7).toLowerCase();
    const scheme = prefix.startsWith('basic ') ? 'basic' : prefix === 'bearer ' ? 'bearer' : 'other';
    const result = status === 401 ? 'rejected' : 'ok';
    metrics.tokenChecks.add(host + ' ' + scheme + ' ' + result, () => ({ host, scheme, result }), 1);
  }
  if (status === 429) metrics.rateLimited.inc();
  // A 500 is a fault; other 5xx are answers the server gives on purpose (503 while a CLI
  // login is pending, the upload memory budget spent, draining): worth a warning, not an error.
  const level = status === 500 ? 'error' : status > 500 ? 'warn' : obs.accessLogLevel;
  if (level !== 'silent' && log.isLevelEnabled(level)) {
    const caller = callerOf(ex);
    log[level]({
      reqId: ex.id, host, method: ex.method, route, status, bytesIn: ex.bytesIn, bytesOut: ex.bytesOut,
      ms: Math.round(seconds * 100_000) / 100, accountId: caller?.accountId ?? null, authorizationId: caller?.authorizationId ?? null,
      client: ex.client || ex.remoteAddress, via: ex.transport,
    }, 'request');
  }
}
