/**
 * Wires the engine to the four listeners and starts them:
 * registry (uWS), upload (own HTTP/1.1 listener, same registry router), API (uWS), auth (uWS).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { ensureTlsFiles } from './http/tls.js';
import type { us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { systemClock, type Clock } from '../engine/clock.js';
import { openStore, type Store } from '../engine/store.js';
import { ServerKeys } from '../engine/auth/keys.js';
import { GarbageCollector, GcSafeBlobStore } from '../engine/registry/gc.js';
import { EVENT_KINDS, subscribeEvent } from '../engine/events.js';
import { Uploads } from '../engine/blobs/uploads.js';
import { Registry } from '../engine/registry/registry.js';
import { Accounts, type CreatedAccount } from '../engine/auth/accounts.js';
import { Apps } from '../engine/platform/apps.js';
import { Releases } from '../engine/platform/releases.js';
import { AppSettings } from '../engine/platform/app-settings.js';
import { Teams } from '../engine/platform/teams.js';
import { HashThread } from '../workers/hash-thread.js';
import { WorkerPool } from '../workers/pool.js';
import { listenUws, loadUws, serveUws } from './http/uws.js';
import { createH1Server } from './http/h1-server.js';
import type { RegistryContext } from './registry/context.js';
import type { Exchange } from './http/exchange.js';
import type { ApiContext } from './api/context.js';
import { handleRegistry, sendRegistryError } from './registry/routes.js';
import { handleApi } from './api/routes.js';
import { sendApiError } from './api/respond.js';
import { handleAuth, sendAuthError } from './auth/routes.js';
import type { AuthContext } from './auth/context.js';
import { Views } from './auth/views.js';
import { createOAuth, type OAuth } from '../engine/oauth/service.js';
import { RateLimiter } from './api/rate-limit.js';
import { Metrics } from './ops/metrics.js';
import { observe, type Observers } from './ops/observe.js';
import { RequestTracker } from './ops/drain.js';
import { probeReadiness } from './ops/readiness.js';
import { startAdmin } from './ops/admin.js';

/** E-mail of the operator account created at first start. */
export const OPERATOR_EMAIL = 'operator@slipway.local';

export interface StartOptions {
  clock?: Clock;
  log?: Logger;
  /** Create the operator account when the store has no account (default true). */
  bootstrap?: boolean;
}

/**
 * After the last request of a drain ends, the wait for another one before the connections close
 * (ms): a client's push is several requests in a row (blob, commit, manifest) on its open
 * connections, and the listeners no longer accept new ones.
 */
const DRAIN_QUIET_MS = 1_000;
/** After cutting connections at the drain deadline, how long handlers get to wind up (ms). */
const CUT_GRACE_MS = 5_000;

export interface RunningServer {
  config: Config;
  urls: { registry: string; api: string; auth: string; upload: string; admin: string };
  store: Store;
  accounts: Accounts;
  apps: Apps;
  oauth: OAuth;
  /** The operator account created by this start, with its one-time secrets; null otherwise. */
  bootstrap: CreatedAccount | null;
  /**
   * Graceful drain (SIGTERM/SIGINT): readiness turns 503, the listeners stop accepting, in-flight
   * requests get up to `config.drainSeconds`, then the remaining connections are cut (an upload
   * cut there stays resumable at its last acknowledged offset) and everything closes.
   * Resolves with whether anything had to be cut.
   */
  drain(): Promise<{ cut: boolean }>;
  /** Immediate close: every connection ends now. */
  close(): Promise<void>;
}

export async function startServer(config: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const uws = loadUws();
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel, config.logFile);
  mkdirSync(config.dataDir, { recursive: true });
  const keys = ServerKeys.loadOrCreate(config.dataDir);
  const store = openStore(config.dataDir);
  const pool = new WorkerPool();
  // Dedupe by record, not by file: safe against online GC (engine/registry/gc.ts).
  const blobs = new GcSafeBlobStore(config.dataDir, store);
  const hashThread = new HashThread();
  const uploads = new Uploads(store, blobs, clock, (p) => pool.hashFile(p), config.dataDir, { staleAfterMs: config.uploadTtlSeconds * 1000, newHash: hashThread.create });
  await uploads.init();
  const registry = new Registry(store, blobs, clock, (r) => pool.inspectImage(r));
  const gc = new GarbageCollector(store, blobs, clock, { graceMs: config.gcGraceSeconds * 1000 });
  registry.touchEveryMs = Math.min(5 * 60_000, gc.options.graceMs / 4);
  await gc.recoverTrash();
  // Domain events (engine/events.ts) become JSON log lines.
  const unsubscribeEvents = EVENT_KINDS.map((kind) => subscribeEvent(kind, (m) => log.info({ event: kind, ...m }, `${kind} event`)));
  const accounts = new Accounts(store, clock, keys);
  const apps = new Apps(store, clock);
  const releases = new Releases(store, clock);
  const settings = new AppSettings(store, clock);
  const teams = new Teams(store, clock);
  const bootstrap = opts.bootstrap !== false && accounts.isEmpty() ? await accounts.create(OPERATOR_EMAIL, undefined, { operator: true }) : null;
  const oauth = createOAuth(store, clock, accounts, teams);
  const rateLimiter = new RateLimiter(clock, config.rateLimitPool, config.rateLimitPerMinute);
  const views = new Views();
  const tracker = new RequestTracker();
  const metrics = new Metrics(store, pool);
  pool.onTask = (name, seconds) => metrics.workerTaskDuration.observe({ task: name }, seconds);
  const obs: Observers = { metrics, log, accessLogLevel: config.accessLogLevel, tracker };

  const urls = { registry: '', api: '', auth: '', upload: '', admin: '' };
  const rctx: RegistryContext = { store, clock, registry, uploads, blobs, accounts, apps, keys, log, urls, tokenTtlSeconds: config.registryTokenTtlSeconds, shutdown: tracker };
  const actx: ApiContext = { store, clock, accounts, apps, registry, releases, settings, teams, oauth, keys, rateLimiter, log, vendor: config.vendor, urls };
  const authCtx: AuthContext = { ...actx, views, secureCookies: false };

  const tls = config.registryTls || config.uploadTls ? await ensureTlsFiles(config.dataDir, config.host, config.tlsCert, config.tlsKey) : undefined;
  const sockets: Partial<Record<'registry' | 'api' | 'auth', us_listen_socket>> = {};
  const uwsApps: Array<{ close?: () => void }> = [];
  const listen = async (name: 'registry' | 'api' | 'auth', port: number, setup: (app: ReturnType<typeof uws.App>) => void, secure = false) => {
    const app = secure && tls ? uws.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile }) : uws.App();
    setup(app);
    uwsApps.push(app as unknown as { close?: () => void });
    const bound = await listenUws(uws, app, config.host, port);
    sockets[name] = bound.socket;
    return bound.port;
  };
  // Every host's handler goes through observe (access log, metrics, Request-Id, drain count).
  const registryError = (ex: Exchange, e: unknown) => sendRegistryError(rctx, ex, e);
  const registryHandler = observe('registry', (ex) => handleRegistry(rctx, ex), registryError, obs);
  const registryPort = await listen('registry', config.registryPort, (app) => serveUws(app, registryHandler, registryError), config.registryTls);
  const apiError = (ex: Exchange, e: unknown) => sendApiError(actx, ex, e);
  const apiPort = await listen('api', config.apiPort, (app) => serveUws(app, observe('api', (ex) => handleApi(actx, ex), apiError, obs), apiError));
  const authError = (ex: Exchange, e: unknown) => sendAuthError(authCtx, ex, e);
  const authPort = await listen('auth', config.authPort, (app) => serveUws(app, observe('auth', (ex) => handleAuth(authCtx, ex), authError, obs), authError));
  const upload = createH1Server(observe('upload', (ex) => handleRegistry(rctx, ex), registryError, obs), registryError,
    config.uploadTls && tls ? { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } : undefined);
  const uploadPort = await new Promise<number>((resolve, reject) => {
    upload.server.once('error', reject);
    upload.server.listen(config.uploadPort, config.host, () => resolve((upload.server.address() as { port: number }).port));
  });
  const base = (port: number, secure = false, host = config.host) => `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  urls.registry = config.registryUrl ?? base(registryPort, config.registryTls);
  urls.api = config.apiUrl ?? base(apiPort);
  urls.auth = config.authUrl ?? base(authPort);
  urls.upload = config.uploadUrl ?? base(uploadPort, config.uploadTls);
  authCtx.secureCookies = urls.auth.startsWith('https:');
  const admin = await startAdmin(config.adminHost, config.adminPort, metrics, () => probeReadiness({
    store, dataDir: config.dataDir, minFreeBytes: config.minFreeDiskMb * 1024 * 1024,
    hashFile: (p) => pool.hashFile(p), newHash: hashThread.create, tracker,
  }));
  urls.admin = base(admin.port, false, config.adminHost);

  const reaper = setInterval(() => {
    uploads.reap().catch((e) => log.error({ err: e }, 'upload reaper failed'));
  }, 10 * 60_000);
  reaper.unref();
  const oauthPruner = setInterval(() => {
    oauth.prune().catch((e) => log.error({ err: e }, 'OAuth pruning failed'));
  }, 10 * 60_000);
  oauthPruner.unref();
  let gcRun: Promise<unknown> | undefined;
  const gcTimer = config.gcIntervalSeconds > 0 ? setInterval(() => {
    gcRun ??= gc.run().catch((e) => log.error({ err: e }, 'garbage collection failed')).finally(() => { gcRun = undefined; });
  }, config.gcIntervalSeconds * 1000) : undefined;
  gcTimer?.unref();
  log.info({ urls, dataDir: config.dataDir }, 'slipway started');

  const stopListening = (names: Array<'registry' | 'api' | 'auth' | 'upload'>) => {
    for (const name of names) {
      if (name === 'upload') {
        if (upload.server.listening) upload.server.close();
        continue;
      }
      const socket = sockets[name];
      delete sockets[name];
      if (socket) uws.us_listen_socket_close(socket);
    }
  };
  let closing: Promise<void> | undefined;
  const closeAll = () => (closing ??= (async () => {
    clearInterval(reaper);
    clearInterval(oauthPruner);
    clearInterval(gcTimer);
    stopListening(['registry', 'api', 'auth', 'upload']);
    // close() (native, not in the typings) ends every open connection, idle or not.
    for (const a of uwsApps) a.close?.();
    upload.closeAllConnections();
    // Handlers of cut requests wind up (an aborted body ends its upload append) before the store closes.
    await tracker.settle(0, performance.now() + CUT_GRACE_MS);
    await gcRun;
    for (const off of unsubscribeEvents) off();
    metrics.close();
    await new Promise<void>((resolve) => admin.server.close(() => resolve()));
    admin.server.closeAllConnections();
    await pool.close();
    await hashThread.close();
    await store.close();
  })());
  return {
    config, urls, store, accounts, apps, oauth, bootstrap,
    async drain() {
      tracker.draining = true;
      // API and auth requests stand alone: those listeners close at once. A push is a sequence
      // of requests (HEAD, POST, PATCH, PUT per blob, then the manifest) and clients open a new
      // connection for many of them (skopeo: one per PATCH and per PUT), so the registry and
      // upload listeners accept until the registry has been quiet; readiness already sends new
      // clients elsewhere.
      stopListening(['api', 'auth']);
      log.info({ inFlight: tracker.inFlight, drainSeconds: config.drainSeconds }, 'draining: readiness off, API and auth listeners closed, waiting for requests in flight');
      const settled = await tracker.settle(DRAIN_QUIET_MS, performance.now() + config.drainSeconds * 1000);
      if (!settled) {
        tracker.cutting = true;
        log.warn({ inFlight: tracker.inFlight }, 'drain deadline reached: cutting the requests still running');
      }
      await closeAll();
      return { cut: !settled };
    },
    close: closeAll,
  };
}
