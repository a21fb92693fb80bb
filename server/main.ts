/**
 * Wires the engine to the four listeners and starts them:
 * registry (uWS), upload (own HTTP/1.1 listener, same registry router), API (uWS), auth (uWS).
 */
import { appNameRef } from '../engine/platform/app-names.js';
import { dataDisk } from '../engine/storage/disk-deadline.js';
import { readFileSync } from 'node:fs';
import { secureDataDir } from '../engine/data-dir.js';
import { ensureTlsFiles } from './http/tls.js';
import { authorityOf, byHost } from './http/by-host.js';
import type { us_listen_socket } from 'uWebSockets.js';
import { databaseOf, inspectLimitsOf, type Config } from './config.js';
import { createLogger, lifecycleLogger, type Logger } from './log.js';
import { systemClock, type Clock } from '../engine/clock.js';
import { openStore, storeOver, type Store } from '../engine/store.js';
import { LmdbMetadataStore } from '../engine/storage/lmdb-metadata.js';
import type { MetadataStore } from '../engine/storage/metadata.js';
import { ServerKeys } from '../engine/identity/keys.js';
import { checkServerKey, resealSecrets } from '../engine/identity/key-check.js';
import { WEBHOOK_SECRETS } from '../engine/webhooks/reseal.js';
import { followGrace, graceInForce, SETTING_POLL_MS, touchEveryMs } from '../engine/registry/gc-grace.js';
import { claimNodeName, type NodeClaim } from '../engine/blobs/node-claim.js';
import { GarbageCollector, type GcReport } from '../engine/registry/gc.js';
import { FsBlobBackend } from '../engine/blobs/fs-backend.js';
import type { S3BlobBackend } from '../engine/blobs/s3-backend.js';
import { blobHasher } from '../engine/blobs/hash-blob.js';
import { EVENT_KINDS, subscribeEvent } from '../engine/events.js';
import { Uploads } from '../engine/blobs/uploads.js';
import { UploadMemory } from '../engine/blobs/upload-memory.js';
import { BodyLanes } from '../engine/blobs/body-lanes.js';
import { setSharedPoolLimit } from '../engine/blobs/aligned-buffer.js';
import { LegacyBlobCheck } from '../engine/blobs/quarantine.js';
import { Registry } from '../engine/registry/registry.js';
import { releaseRetention } from '../engine/platform/retention.js';
import { Accounts, type CreatedAccount } from '../engine/identity/accounts.js';
import { bootstrapOperator } from '../engine/identity/operator.js';
import { writeCredentialsFile } from './ops/operator-credentials.js';
import { Apps } from '../engine/platform/apps.js';
import { Releases } from '../engine/platform/releases.js';
import { Dynos } from '../engine/platform/dynos.js';
import { AppSettings } from '../engine/platform/app-settings.js';
import { Teams } from '../engine/platform/teams.js';
import { HashThread } from '../workers/hash-thread.js';
import { WorkerPool } from '../workers/pool.js';
import { SourceAddresses } from './http/client-address.js';
import { listenUws, loadUws, serveUws } from './http/uws.js';
import { createH1Server } from './http/h1-server.js';
import type { Exchange, Handler } from './http/exchange.js';
import type { RegistryContext } from './registry/context.js';
import type { ApiContext } from './api/context.js';
import { handleRegistry, sendRegistryError } from './registry/routes.js';
import { handleApi } from './api/routes.js';
import { sendApiError } from './api/respond.js';
import { handleAuth, sendAuthError } from './auth-host/routes.js';
import type { AuthContext } from './auth-host/context.js';
import { Views } from './auth-host/views.js';
import { createOAuth, type OAuth } from '../engine/oauth/service.js';
import { rateLimitPoolFor } from '../engine/identity/shared-rate-limit.js';
import { webUrlOf } from './api/web-url.js';
import { Metrics } from './ops/metrics.js';
import { observe, type Observers } from './ops/observe.js';
import { RequestTracker } from './ops/drain.js';
import { probeReadiness } from './ops/readiness.js';
import { startAdmin } from './ops/admin.js';
import { webhooksOf } from './webhooks.js';
import { openBlobStore, type OpenedBlobStore } from './blob-store.js';
import type { BlobBackend } from '../engine/blobs/contract.js';
import { logOutcome, startNotifications } from './notifications/start.js';

/** The four hosts, each on its own listener. */
type HostName = 'registry' | 'api' | 'auth' | 'upload';

export interface StartOptions {
  clock?: Clock;
  log?: Logger;
  /**
   * Create the operator account when the store has no account, or complete an earlier start's
   * unfinished bootstrap (default true; engine/identity/operator.ts).
   */
  bootstrap?: boolean;
  /**
   * Opens the metadata store to run on instead of the embedded LMDB one (tests of cluster
   * behaviour: two servers over one PostgreSQL database). The server closes it on close().
   */
  metadata?: () => Promise<MetadataStore>;
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
  /** The blob bytes (SLIPWAY_BLOB_STORE: the filesystem or S3 backend). */
  blobs: BlobBackend;
  /**
   * The operator credentials this start issued (creating the account, or completing an earlier
   * start's bootstrap), also written to `credentialsFile`; null otherwise.
   */
  bootstrap: CreatedAccount | null;
  /** Absolute path of the credentials file this start wrote (server/ops/operator-credentials.ts); null when it wrote none. */
  credentialsFile: string | null;
  /** Runs the scheduled GC job now (the `gc` lock, the grace in force: engine/registry/gc-grace.ts); null when another node holds the lock. */
  collectGarbage(): Promise<GcReport | null>;
  /** Runs the upload reaper now (it also runs every SLIPWAY_UPLOAD_REAP_INTERVAL); resolves with the sessions removed. */
  reapUploads(): Promise<number>;
  /** Runs the reaping of other nodes' long-dead upload sessions now, without taking the reaper lock (tests; the lock's holder does it every interval); resolves with the sessions removed. */
  reapOtherNodesUploads(): Promise<number>;
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
  // Loaded only when configured: the default listener needs no native module.
  const uws = config.listener === 'uws' ? loadUws() : undefined;
  const clock = opts.clock ?? systemClock;
  const log = opts.log ?? createLogger(config.logLevel, config.logFile);
  const lifecycle = lifecycleLogger(log);
  secureDataDir(config.dataDir);
  const keys = ServerKeys.load(config);
  const store = opts.metadata ? await storeOver(await opts.metadata()) : await openStore(config.dataDir, databaseOf(config));
  // Refuse to start with a key the cluster's other nodes do not share (engine/identity/key-check.ts).
  try {
    if ((await checkServerKey(store.metadata, keys, clock.now())) === 'rotated') log.info({ fingerprint: keys.fingerprint().slice(0, 12) }, 'server key rotation recorded: this key signs and seals from now on');
  } catch (e) {
    await store.close();
    throw e;
  }
  // One running node per SLIPWAY_NODE_NAME, before start-up recovery touches "our" sessions (engine/blobs/node-claim.ts).
  let nodeClaim: NodeClaim;
  try {
    nodeClaim = await claimNodeName(store.metadata, config.nodeName, (what, err) => {
      if (what === 'reclaimed') log.info({ node: config.nodeName }, 'node name claimed again');
      else if (what === 'taken') log.error({ node: config.nodeName }, 'another running node took this node\'s name: give every node its own SLIPWAY_NODE_NAME');
      else log.warn({ node: config.nodeName, err }, 'lost the node-name lock (database connection); claiming it again');
    });
  } catch (e) {
    await store.close();
    throw e;
  }
  // The bytes (SLIPWAY_BLOB_STORE): the data directory, or an S3 bucket probed now (bad or
  // unreachable settings stop the start naming the setting). Sessions hash on the hash thread.
  // Uploads dedupe by record, not by bytes: safe against online GC (engine/registry/gc.ts).
  let blobStore: OpenedBlobStore<FsBlobBackend | S3BlobBackend>;
  try {
    blobStore = await openBlobStore(config.blobStore, () => new FsBlobBackend(config.dataDir, { newHash: () => hashThread.create() }), () => hashThread.create(), config.nodeName);
  } catch (e) {
    await nodeClaim.release();
    await store.close();
    throw e;
  }
  const blobs = blobStore.backend;
  let resealRun: Promise<unknown> | undefined;
  /** Moves secrets sealed under the accepted key (second factors, webhook secrets) to the signing key (only with an accepted key). */
  const reseal = () => {
    if (keys.acceptedFingerprint() === null) return;
    resealRun ??= resealSecrets(store.metadata, keys, clock.now(), [WEBHOOK_SECRETS]).then(
      (n) => log.info({ resealed: n }, 'second-factor secrets re-sealed'),
      (e) => log.error({ err: e }, 're-sealing second-factor secrets failed')).finally(() => { resealRun = undefined; });
  };
  reseal();
  const pool = new WorkerPool({ maxThreads: config.inspectThreads, limits: inspectLimitsOf(config) });
  const hashThread = new HashThread();
  hashThread.start(); // before the first push rather than inside it (workers/hash-thread.ts)
  const uploadMemory = new UploadMemory(config.uploadMemoryMiB * 1024 * 1024);
  dataDisk.timeoutMs = config.diskTimeoutSeconds * 1000; // engine/storage/disk-deadline.ts
  setSharedPoolLimit(uploadMemory.limit); // free upload buffers kept for reuse: at most the budget again
  const uploads = new Uploads(store, blobs, clock, {
    staleAfterMs: config.uploadTtlSeconds * 1000,
    maxSessionsPerAccount: config.uploadSessionsPerAccount,
    memory: uploadMemory,
    lanes: new BodyLanes(config.uploadLanes),
    node: config.nodeName,
    appNameRef, // a blob of a session started before its app's rename is not linked under the old name
  });
  await uploads.init();
  // Blobs written before store schema 6: sizes checked before serving, sha256 in the background.
  const legacyCheck = new LegacyBlobCheck(store.metadata, blobs, blobHasher(blobs, hashThread.create));
  if (await legacyCheck.needed()) {
    await legacyCheck.sizes();
    void legacyCheck.hashes().then(
      (r) => log.info({ checked: r.checked, quarantined: r.quarantined }, 'blobs of an older build verified'),
      (e) => log.error({ err: e }, 'verifying blobs of an older build failed'));
  }
  // The worker opens its own instance of the backend (S3: the same settings, credentials from the SDK chain).
  const blobSpec = blobs.spec;
  if (!blobSpec) throw new Error('the blob backend cannot be opened by a worker thread (built on a client instance)');
  const registry = new Registry(store.metadata, blobs, clock, (r) => pool.inspectImage(blobSpec, r));
  registry.appNameRef = appNameRef; // pushes ordered against app renames (engine/registry/rename.ts)
  const gc = new GarbageCollector(store.metadata, blobs, clock, releaseRetention, { graceMs: config.gcGraceSeconds * 1000 });
  // The grace this node applies (its touch interval): the cluster setting, else SLIPWAY_GC_GRACE,
  // read again every SETTING_POLL_MS and announced (engine/registry/gc-grace.ts).
  const followGcGrace = followGrace(store.metadata, config.nodeName, gc.options.graceMs, () => clock.now(), (graceMs, setting) => {
    registry.touchEveryMs = touchEveryMs(graceMs);
    log.info({ graceSeconds: graceMs / 1000, source: setting ? 'cluster setting' : 'SLIPWAY_GC_GRACE' }, 'GC grace applied');
  });
  await followGcGrace();
  await gc.recoverTrash();
  // Domain events (engine/events.ts) become JSON log lines.
  const unsubscribeEvents = EVENT_KINDS.map((kind) => subscribeEvent(kind, (m) => log.info({ event: kind, ...m }, `${kind} event`)));
  const accounts = new Accounts(store.metadata, clock, keys);
  const apps = new Apps(store.metadata, clock);
  const releases = new Releases(store.metadata, clock);
  const settings = new AppSettings(store.metadata, clock, releases);
  const dynos = new Dynos(store.metadata, clock);
  const teams = new Teams(store, clock);
  const oauth = createOAuth(store, clock, accounts, teams, { cliLoginsPerSource: config.cliLoginsPerSource });
  const rateLimiter = rateLimitPoolFor(store.metadata, clock, config.rateLimitPool, config.rateLimitPerMinute);
  const views = new Views();
  const tracker = new RequestTracker();
  const metrics = new Metrics(store, pool, uploads);
  pool.onTask = (name, seconds) => metrics.workerTaskDuration.observe({ task: name }, seconds);
  const obs: Observers = { metrics, log, accessLogLevel: config.accessLogLevel, tracker };

  const urls = { registry: '', api: '', auth: '', upload: '', admin: '' };
  // Registry notifications for operators (docs/notifications.md), delivered by the node's delivery worker.
  const notifications = startNotifications({ endpoints: config.notificationEndpoints, store, clock, registry, accounts, log, nodeName: config.nodeName, urls });
  if (notifications) metrics.watchPullBuffer(notifications.pulls);
  if (store.metadata.readCache) metrics.watchReadCache(store.metadata.readCache);
  const rctx: RegistryContext = { store, clock, registry, uploads, blobs, blobRedirectSeconds: blobStore.redirectExpirySeconds, accounts, apps, keys, log, urls, tokenTtlSeconds: config.registryTokenTtlSeconds, legacyCheck,
    receiveRate: { minBytesPerSecond: config.uploadMinRateKiB * 1024, windowMs: config.uploadRateWindowSeconds * 1000 }, shutdown: tracker,
    notifications, sources: new SourceAddresses(config.trustedProxies) };
  const webUrl = webUrlOf(config.appUrlTemplate, config.apiUrl ?? 'http://localhost');
  // App webhooks and the delivery worker (docs/webhooks.md): deliveries run in the background, never on a request.
  const { webhooks, worker: deliveryWorker, sender: webhookSender } = webhooksOf(config, store.metadata, clock, keys, accounts, urls, webUrl, log,
    notifications ? { sources: [notifications.source], onOutcome: (d) => logOutcome(log, d) } : undefined);
  const actx: ApiContext = { store, clock, accounts, apps, registry, releases, dynos, settings, teams, webhooks, oauth, keys, rateLimiter, log, vendor: config.vendor, acceptVendors: config.acceptVendors, urls, webUrl };
  const authCtx: AuthContext = { ...actx, views, secureCookies: false, cliLoginPollMs: config.cliLoginPollSeconds * 1000, sources: new SourceAddresses(config.trustedProxies),
    gc: { options: gc.options, intervalSeconds: config.gcIntervalSeconds } };

  const tls = config.registryTls || config.uploadTls ? await ensureTlsFiles(config.dataDir, config.host, config.tlsCert, config.tlsKey,
    [config.registryUrl, config.apiUrl].flatMap((u) => (u ? [new URL(u).hostname] : []))) : undefined;
  /** Each host's listener: stop accepting new connections; end every open connection. */
  const listeners: Partial<Record<HostName, { stopAccepting(): void; cutAll(): void }>> = {};
  const tlsPair = () => (tls ? { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } : undefined);
  const listenH1 = (name: HostName, port: number, handler: Handler, onError: (ex: Exchange, e: unknown) => void, secure: boolean) => {
    const h1 = createH1Server(handler, onError, secure ? tlsPair() : undefined);
    listeners[name] = {
      stopAccepting: () => { if (h1.server.listening) h1.server.close(); },
      cutAll: () => h1.closeAllConnections(),
    };
    return new Promise<number>((resolve, reject) => {
      h1.server.once('error', reject);
      h1.server.listen(port, config.host, () => resolve((h1.server.address() as { port: number }).port));
    });
  };
  /** One host on the configured listener (the upload host passes `h1`). */
  const listen = async (name: HostName, port: number, handler: Handler, onError: (ex: Exchange, e: unknown) => void, secure = false, listener = config.listener) => {
    if (listener === 'h1' || !uws) return listenH1(name, port, handler, onError, secure);
    const app = secure && tls ? uws.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile }) : uws.App();
    serveUws(app, handler, onError);
    const bound = await listenUws(uws, app, config.host, port);
    let socket: us_listen_socket | undefined = bound.socket;
    listeners[name] = {
      stopAccepting: () => { if (socket) uws.us_listen_socket_close(socket); socket = undefined; },
      // close() (native, not in the typings) ends every open connection, idle or not.
      cutAll: () => (app as unknown as { close?: () => void }).close?.(),
    };
    return bound.port;
  };
  // Every host's handler goes through observe (access log, metrics, Request-Id, drain count).
  const registryError = (ex: Exchange, e: unknown) => sendRegistryError(rctx, ex, e);
  const apiError = (ex: Exchange, e: unknown) => sendApiError(actx, ex, e);
  const authError = (ex: Exchange, e: unknown) => sendAuthError(authCtx, ex, e);
  const registryHandler = observe('registry', (ex) => handleRegistry(rctx, ex), registryError, obs);
  const apiHandler = observe('api', (ex) => handleApi(actx, ex), apiError, obs);
  // An API URL on another host name than the registry's is also served by the registry listener
  // (the platform's layout: api.<domain> and registry.<domain> on one port; docs/container-workflow.md).
  const apiOnRegistry = new Map(config.apiUrl && authorityOf(config.apiUrl) !== (config.registryUrl && authorityOf(config.registryUrl))
    ? [[authorityOf(config.apiUrl), apiHandler]] : []);
  const registryPort = await listen('registry', config.registryPort, byHost(registryHandler, apiOnRegistry), registryError, config.registryTls);
  const apiPort = await listen('api', config.apiPort, apiHandler, apiError);
  const authPort = await listen('auth', config.authPort, observe('auth', (ex) => handleAuth(authCtx, ex), authError, obs), authError);
  const uploadPort = await listen('upload', config.uploadPort, observe('upload', (ex) => handleRegistry(rctx, ex), registryError, obs), registryError, config.uploadTls, 'h1');
  const base = (port: number, secure = false, host = config.host) => `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  urls.registry = config.registryUrl ?? base(registryPort, config.registryTls);
  urls.api = config.apiUrl ?? base(apiPort);
  actx.webUrl = webUrlOf(config.appUrlTemplate, urls.api);
  urls.auth = config.authUrl ?? base(authPort);
  urls.upload = config.uploadUrl ?? base(uploadPort, config.uploadTls);
  authCtx.secureCookies = urls.auth.startsWith('https:');
  const admin = await startAdmin(config.adminHost, config.adminPort, metrics, () => probeReadiness({
    store, dataDir: config.dataDir, minFreeBytes: config.minFreeDiskMb * 1024 * 1024,
    hashFile: (p) => pool.hashFile(p), newHash: hashThread.create, tracker, blobStore: blobStore.check,
  }));
  urls.admin = base(admin.port, false, config.adminHost);

  // Every node reaps its own idle upload sessions and the bytes of its sessions that no longer
  // exist (disjoint sets: no lock), then the holder of
  // the `upload-reaper` lock also reaps other nodes' sessions left far past the TTL (a dead
  // node's; engine/blobs/peer-sessions.ts). GC runs on one node at a time (the store's
  // exclusive lock): a node whose turn it is not skips the round.
  let reapRun: Promise<unknown> | undefined;
  const reaper = setInterval(() => {
    reapRun ??= uploads.reap()
      .then(() => uploads.reapOrphans())
      .then((orphans) => { if (orphans > 0) log.warn({ orphans }, 'removed upload session bytes that belonged to no session'); })
      .then(() => store.metadata.exclusive('upload-reaper', () => uploads.peers.reap()))
      // The lock holder's reap re-read every record; the others refresh the other nodes' counts.
      .then((outcome) => (outcome.ran ? undefined : uploads.peers.refresh()))
      .catch((e) => log.error({ err: e }, 'upload reaper failed')).finally(() => { reapRun = undefined; });
  }, config.uploadReapIntervalSeconds * 1000);
  reaper.unref();
  let graceRun: Promise<unknown> | undefined;
  const gracePoll = setInterval(() => {
    graceRun ??= followGcGrace().catch((e) => log.warn({ err: e }, 'reading the GC grace setting failed')).finally(() => { graceRun = undefined; });
  }, SETTING_POLL_MS);
  gracePoll.unref();
  const oauthPruner = setInterval(() => {
    oauth.prune().catch((e) => log.error({ err: e }, 'OAuth pruning failed'));
    reseal();
  }, 10 * 60_000);
  oauthPruner.unref();
  // One GC run under the cluster-wide lock, with the grace in force (the setting, else the longest announced).
  const collect = () => store.metadata.exclusive('gc', async (signal) =>
    gc.run({ signal, graceMs: (await graceInForce(store.metadata, gc.options.graceMs, clock.now())).graceMs }));
  let gcRun: Promise<unknown> | undefined;
  const gcTimer = config.gcIntervalSeconds > 0 ? setInterval(() => {
    gcRun ??= collect().catch((e) => log.error({ err: e }, 'garbage collection failed')).finally(() => { gcRun = undefined; });
  }, config.gcIntervalSeconds * 1000) : undefined;
  gcTimer?.unref();

  const stopListening = (names: HostName[]) => {
    for (const name of names) listeners[name]?.stopAccepting();
  };
  let closing: Promise<void> | undefined;
  const closeAll = () => (closing ??= (async () => {
    clearInterval(reaper);
    clearInterval(gracePoll);
    clearInterval(oauthPruner);
    clearInterval(gcTimer);
    stopListening(['registry', 'api', 'auth', 'upload']);
    const deliveriesStopped = deliveryWorker.stop();
    for (const l of Object.values(listeners)) l.cutAll();
    // Handlers of cut requests wind up (an aborted body ends its upload append) before the store closes.
    await tracker.settle(0, performance.now() + CUT_GRACE_MS);
    await gcRun;
    await reapRun;
    await graceRun;
    await resealRun;
    await deliveriesStopped;
    await webhookSender.close();
    // Pulls still buffered go to the outbox (delivered after the next start).
    await notifications?.stop();
    for (const off of unsubscribeEvents) off();
    metrics.close();
    await new Promise<void>((resolve) => admin.server.close(() => resolve()));
    admin.server.closeAllConnections();
    await pool.close();
    await hashThread.close();
    blobStore.close();
    await nodeClaim.release();
    await store.close();
  })());
  // The operator account, once every listener is bound (a port in use stops the start before
  // anything is created) and idempotently (a start failing in between leaves it for the next).
  let credentialsFile: string | null = null;
  let bootstrap: CreatedAccount | null = null;
  try {
    if (opts.bootstrap !== false) {
      bootstrap = await bootstrapOperator(accounts, async (issued) => {
        credentialsFile = writeCredentialsFile(config.dataDir, issued, config.nodeName, clock.now());
      });
    }
  } catch (e) {
    await closeAll();
    throw e;
  }
  if (bootstrap) {
    lifecycle.info({ credentialsFile, node: config.nodeName, email: bootstrap.account.email }, `operator account ready: its credentials are in ${credentialsFile} (readable by this user only); they are not logged`);
  }
  if (config.webhookDeliver) deliveryWorker.start();
  // `ports`: the bound ports (their URLs above may be public ones behind a load balancer, and a
  // configured port 0 is only known here).
  const ports = { registry: registryPort, api: apiPort, auth: authPort, upload: uploadPort, admin: admin.port };
  lifecycle.info({ urls, ports, dataDir: config.dataDir, blobStore: blobs.kind, node: config.nodeName }, 'slipway listening');
  if (store.metadata instanceof LmdbMetadataStore && config.prewarmMiB > 0) {
    store.metadata.prewarm(config.prewarmMiB * 1024 * 1024).then(
      (r) => lifecycle.info({ entries: r.entries, mib: Math.round(r.bytes / 1048576), ms: r.ms, complete: r.complete }, 'embedded store prewarmed: hot records read once'),
      (e) => log.warn({ err: e }, 'prewarm of the embedded store stopped'));
  }
  return {
    config, urls, store, accounts, apps, oauth, blobs, bootstrap, credentialsFile,
    collectGarbage: async () => { const o = await collect(); return o.ran ? o.value : null; },
    reapUploads: () => uploads.reap(),
    reapOtherNodesUploads: () => uploads.peers.reap(),
    async drain() {
      tracker.draining = true;
      // API and auth requests stand alone: those listeners close at once. A push is a sequence
      // of requests (HEAD, POST, PATCH, PUT per blob, then the manifest) and clients open a new
      // connection for many of them (skopeo: one per PATCH and per PUT), so the registry and
      // upload listeners accept until the registry has been quiet; readiness already sends new
      // clients elsewhere.
      stopListening(['api', 'auth']);
      lifecycle.info({ inFlight: tracker.inFlight, drainSeconds: config.drainSeconds }, 'draining: readiness off, API and auth listeners closed, waiting for requests in flight');
      const settled = await tracker.settle(DRAIN_QUIET_MS, performance.now() + config.drainSeconds * 1000);
      if (!settled) {
        tracker.cutting = true;
        lifecycle.warn({ inFlight: tracker.inFlight }, 'drain deadline reached: cutting the requests still running');
      }
      await closeAll();
      return { cut: !settled };
    },
    close: closeAll,
  };
}
