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
import { statusClass, type HistogramSeries, type Metrics } from './metrics.js';
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
  const series = new HostSeries(host, metrics);
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
      if (!isPromise(done)) report(series, ex, started, obs);
    }
    return isPromise(done) ? done.finally(() => report(series, ex, started, obs)) : undefined;
  };
}

/** The metric series of one route template on one host, built on first use and kept (labels are bounded). */
interface RouteSeries {
  received: { n: number };
  sent: { n: number };
  /** request-duration series by method label, then status class. */
  durations: Map<string, Map<string, HistogramSeries>>;
}

/**
 * The metric series of one host (one per `observe`), by route template and by credential
 * scheme and result: a request's metrics cost a few look-ups of constant strings, no key
 * building and no label objects.
 */
class HostSeries {
  readonly #routes = new Map<string, RouteSeries>();
  /** Token-check series by scheme (SCHEMES index × 2) + rejected. */
  readonly #checks: Array<{ n: number } | undefined> = [];
  constructor(readonly host: HostName, readonly metrics: Metrics) {}

  /** The series of `route` (created the first time). */
  route(route: string): RouteSeries {
    let r = this.#routes.get(route);
    if (!r) {
      const key = this.host + ' ' + route;
      const labels = { host: this.host, route };
      this.#routes.set(route, r = { received: this.metrics.receivedBytes.series(key, labels), sent: this.metrics.sentBytes.series(key, labels), durations: new Map() });
    }
    return r;
  }

  /** The request-duration series of `r` (the series of `route`) for `method` and `status` (a status class). */
  duration(r: RouteSeries, route: string, method: string, status: string): HistogramSeries {
    let byStatus = r.durations.get(method);
    if (!byStatus) r.durations.set(method, byStatus = new Map());
    let d = byStatus.get(status);
    if (!d) byStatus.set(status, d = this.metrics.requestDuration.series(this.host + ' ' + route + ' ' + method + ' ' + status, { host: this.host, route, method, status }));
    return d;
  }

  /** The token-check series of `scheme` and `result` (created the first time). */
  check(scheme: Scheme, rejected: boolean): { n: number } {
    const i = SCHEMES.indexOf(scheme) * 2 + (rejected ? 1 : 0);
    let c = this.#checks[i];
    if (!c) {
      const result = rejected ? 'rejected' : 'ok';
      this.#checks[i] = c = this.metrics.tokenChecks.series(this.host + ' ' + scheme + ' ' + result, { host: this.host, scheme, result });
    }
    return c;
  }
}

/** The credential schemes the token-check metric tells apart. */
const SCHEMES = ['basic', 'bearer', 'other'] as const;
type Scheme = typeof SCHEMES[number];

/** The scheme label of an Authorization header (scheme names are case-insensitive, RFC 9110 §11.1). */
function schemeOf(auth: string): Scheme {
  if ((auth.charCodeAt(0) | 0x20) !== 0x62 /* b */) return 'other';
  const prefix = auth.slice(0, 7).toLowerCase();
  return prefix.startsWith('basic ') ? 'basic' : prefix === 'bearer ' ? 'bearer' : 'other';
}

/** The end of a request: the in-flight counts, the request metrics and the access-log line. */
function report(series: HostSeries, ex: ObservedExchange, started: number, obs: Observers): void {
  const { metrics, log, tracker } = obs;
  const host = series.host;
  tracker.end();
  metrics.inFlight[host]!--;
  const seconds = (performance.now() - started) / 1000;
  const route = routeTemplate(host, ex.path, ex.route);
  const status = ex.aborted && !ex.responded ? 0 : ex.status;
  const method = METHODS.has(ex.method) ? ex.method : 'other';
  const r = series.route(route);
  metrics.requestDuration.observeSeries(series.duration(r, route, method, statusClass(status)), seconds);
  r.received.n += ex.bytesIn;
  r.sent.n += ex.bytesOut;
  const auth = ex.header('authorization');
  if (auth) series.check(schemeOf(auth), status === 401).n++;
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
