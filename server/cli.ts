#!/usr/bin/env -S node --max-semi-space-size=16 --heap-growing-percent=30
/**
 * `slipway` command line.
 *   slipway serve [--data DIR] [--host H] [--registry-port N] [--api-port N] [--auth-port N] [--upload-port N] …
 *   slipway account create --email E [--password P] [--json]
 *   slipway app create --name N --owner E [--json]
 *   slipway gc [--dry-run] [--json]     image retention and blob GC, safe while the server runs (server/ops/gc-cli.ts)
 *   slipway gc grace [set DURATION]     the cluster's GC grace, changed at run time
 *   slipway backup --to DIR             online snapshot of the data directory (server/ops/backup.ts)
 *   slipway restore --from DIR --data NEWDIR
 *   slipway fsck [--full] [--repair] [--json]   records against blob files (server/ops/fsck.ts)
 *   slipway migrate --to-database URL [--to-blob-store s3] [--json]   copy into cluster stores (server/ops/migrate.ts)
 *   slipway key adopt                   record the configured server key as the installation's (a lost key)
 *   slipway key generate [--key-file F] write a new server key file (0600; never overwrites)
 *   slipway config check|print [--config FILE]   check the settings / print the effective ones (server/settings/)
 *   slipway s3 create-bucket            create the bucket of the s3.* settings (server/ops/create-bucket.ts)
 *   slipway operator reset-credentials  new credentials for the operator account (server/cli/operator.ts)
 * Settings come from a config file (--config FILE or SLIPWAY_CONFIG), SLIPWAY_* environment
 * variables and flags (server/settings/schema.ts; `slipway --help` lists them).
 */
import { parseArgs } from 'node:util';
import { databaseOf, loadSettings, type Config } from './config.js';
import { SETTING_FLAGS } from './settings/load.js';
import { settingsHelp } from './settings/describe.js';
import { checkSummary, printSettings } from './settings/config-command.js';
import { startServer } from './main.js';
import { createLogger, lifecycleLogger } from './log.js';
import { exitWhenFlushed } from './cli/exit.js';
import { withAccounts } from './cli/offline.js';
import { credentialsForTerminal } from './ops/operator-credentials.js';
import { openBlobStore } from './blob-store.js';
import { openStore } from '../engine/store.js';
import { StoreUnavailableError } from '../engine/storage/metadata.js';
import { isOrphanCommitFailure } from '../engine/storage/lmdb-metadata.js';
import { generateKeyFile, ServerKeys } from '../engine/identity/keys.js';
import { adoptServerKey } from '../engine/identity/key-check.js';
import type { CreatedAccount } from '../engine/identity/accounts.js';
import { systemClock } from '../engine/clock.js';
import { isSlipwayError } from '../engine/errors.js';
import { FsBlobBackend } from '../engine/blobs/fs-backend.js';
import { collectGarbage, setGrace, showGrace } from './ops/gc-cli.js';
import { graceInForce } from '../engine/registry/gc-grace.js';
import { bytes } from './ops/units.js';
import { backup, refuseInClusterMode, restore, type BackupReport } from './ops/backup.js';
import { resolve } from 'node:path';
import { fsck } from './ops/fsck.js';

const USAGE = `usage:
  slipway serve [--config FILE] [SETTING FLAGS (below)]
  slipway account create --email EMAIL [--password PASSWORD] [--json] [--data DIR]
  slipway app create --name NAME --owner EMAIL [--json] [--data DIR]
  slipway gc [--dry-run] [--json] [--data DIR]
  slipway gc grace [--json] [--data DIR]            the GC grace in force and what each node applies
  slipway gc grace set DURATION [--json] [--data DIR]  e.g. 1h, 15m, 90s: every node applies it, no restart
  slipway backup --to DIR [--json] [--data DIR]
  slipway restore --from DIR --data NEWDIR [--json]
  slipway fsck [--full] [--repair] [--json] [--data DIR]
  slipway migrate --to-database postgres://USER@HOST:PORT/DB [--to-blob-store s3] [--json] [--data DIR]
                  offline copy of the data directory into PostgreSQL (and S3: the s3.* settings)
  slipway key adopt [--key-file FILE] [--data DIR]
  slipway operator reset-credentials [--json] [--data DIR]
                  new password, second factor and API key for the operator account, written to
                  DATA/operator-credentials.json (0600); shown only on a terminal
  slipway key generate [--key-file FILE]     a new server key file (default <data>/keys/server.key)
  slipway config check [--config FILE]       check every setting; exit 1 naming each bad key
  slipway config print [--config FILE] [--json]   effective settings and their sources, secrets hidden
  slipway s3 create-bucket [--config FILE]   create the bucket of the s3.* settings
Every command takes --config FILE and the setting flags.`;

const options = {
  ...Object.fromEntries(SETTING_FLAGS.map((f) => [f, { type: 'string' as const }])),
  email: { type: 'string' as const },
  password: { type: 'string' as const },
  name: { type: 'string' as const },
  owner: { type: 'string' as const },
  json: { type: 'boolean' as const },
  'dry-run': { type: 'boolean' as const },
  to: { type: 'string' as const },
  full: { type: 'boolean' as const },
  repair: { type: 'boolean' as const },
  from: { type: 'string' as const },
  'to-database': { type: 'string' as const },
  'to-blob-store': { type: 'string' as const },
  help: { type: 'boolean' as const, short: 'h' },
};

function printAccount(created: CreatedAccount, json: boolean): void {
  const out = {
    id: created.account.id,
    email: created.account.email,
    api_key: created.apiKey,
    totp_secret: created.totpSecret,
    ...(created.generatedPassword ? { password: created.generatedPassword } : {}),
  };
  if (json) console.log(JSON.stringify(out));
  else {
    console.log('Account created. The API key, password and second-factor secret are shown only now:');
    for (const [k, v] of Object.entries(out)) console.log(`  ${k.padEnd(12)} ${v}`);
  }
}

/**
 * `slipway serve`: every line it prints is a JSON log line (server/log.ts), the start-up and
 * shutdown ones included; the operator's credentials go to a file (server/ops/operator-credentials.ts),
 * and on a terminal also to the screen. Never returns: the process ends on SIGTERM/SIGINT.
 */
async function serve(config: Config): Promise<void> {
  const log = createLogger(config.logLevel, config.logFile);
  const lifecycle = lifecycleLogger(log);
  // An error nothing handled, or a promise rejected with no handler, ends the process with exit
  // code 1 as Node's defaults do, but first as a JSON log line at `fatal`, so the operator's log
  // pipeline says why a node ended, not only a stack on stderr. The process's state is unknown
  // past this point: nothing else is started, only the logs flushed.
  let ending = false;
  const fatal = (origin: 'uncaughtException' | 'unhandledRejection') => (e: unknown) => {
    if (ending) return;
    ending = true;
    lifecycle.fatal({ err: e, origin }, `slipway stopped: ${origin === 'unhandledRejection' ? 'a promise was rejected with nothing to handle it' : 'an error nothing handled'}: ${reason(e)}`);
    void exitWhenFlushed(1);
  };
  process.on('uncaughtException', fatal('uncaughtException'));
  // But for the rejections lmdb-js leaves behind a failed commit, whose callers got the error.
  const rejected = fatal('unhandledRejection');
  process.on('unhandledRejection', (e) => { if (!isOrphanCommitFailure(e)) rejected(e); });
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer(config, { log });
  } catch (e) {
    lifecycle.fatal({ err: e }, `slipway did not start: ${reason(e)}`);
    return exitWhenFlushed(1);
  }
  if (server.bootstrap && server.credentialsFile && process.stdout.isTTY) process.stdout.write(credentialsForTerminal(server.bootstrap, server.credentialsFile));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      // A second signal: no more waiting. Sessions keep their last recorded offset.
      lifecycle.warn({ signal }, `second ${signal} received, exiting now`);
      void exitWhenFlushed(1);
      return;
    }
    stopping = true;
    lifecycle.info({ signal, drainSeconds: config.drainSeconds }, `${signal} received, draining (up to ${config.drainSeconds} s; send it again to exit at once)`);
    server.drain().then(({ cut }) => {
      lifecycle.info({ cut }, cut ? 'drain deadline reached, remaining requests were cut; stopped' : 'drained, stopped');
      return exitWhenFlushed(0);
    }, (e) => {
      lifecycle.error({ err: e }, `shutdown failed: ${reason(e)}`);
      return exitWhenFlushed(1);
    });
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/** What an operator reads when a command fails: for an unreachable database, the host and driver message. */
function reason(e: unknown): string {
  return e instanceof StoreUnavailableError ? e.reason : isSlipwayError(e) || e instanceof Error ? e.message : String(e);
}

function printBackup(verb: string, r: BackupReport, dir: string, json: boolean): number {
  if (json) console.log(JSON.stringify({ ...r, dir }));
  else {
    console.log(`${verb} ${dir}: snapshot of ${r.takenAt}, ${r.blobs} blob(s) (${bytes(r.bytes)}; ${r.linked} hard-linked, ${r.copied} copied).`);
    if (verb === 'Backed up to') console.log('The backup holds the server key, TLS key and every stored secret hash: keep it as safe as the data directory.');
    for (const d of r.missing) console.log(`  missing ${d}  (its file was deleted after the snapshot; \`slipway fsck\` reports it)`);
  }
  return r.missing.length > 0 ? 1 : 0;
}

/**
 * `slipway fsck`: prints each problem (or JSON); 1 when any problem is left unrepaired.
 * Safe while the server runs (LMDB is multi-process; repairs are the GC's and the reaper's).
 */
async function checkStore(config: Config, full: boolean, repair: boolean, json: boolean): Promise<number> {
  const blobs = await openBlobStore(config.blobStore, () => new FsBlobBackend(config.dataDir));
  const store = await openStore(config.dataDir, databaseOf(config));
  try {
    const report = await fsck(store, blobs.backend, systemClock, {
      full, repair, uploadTtlMs: config.uploadTtlSeconds * 1000,
      // Orphan files go after the grace GC uses (the cluster setting, else the longest announced).
      orphanGraceMs: (await graceInForce(store.metadata, config.gcGraceSeconds * 1000, systemClock.now())).graceMs,
    });
    const left = report.problems.filter((p) => !p.repaired).length;
    if (json) console.log(JSON.stringify(report));
    else {
      for (const p of report.problems) console.log(`${p.repaired ? 'repaired ' : ''}${p.kind.padEnd(24)} ${p.subject}  ${p.detail}`);
      const c = report.checked;
      console.log(`Checked ${c.blobs} blob record(s) (${full ? `${c.hashed} re-hashed` : 'sizes only; --full re-hashes'}), ${c.files} blob file(s), ${c.manifests} repository manifest(s), ${c.tags} tag(s), ${c.uploads} upload session(s), ${c.sessionFiles} session file(s): ${report.problems.length === 0 ? 'no problems' : `${report.problems.length} problem(s), ${left} unrepaired`}.`);
    }
    return left > 0 ? 1 : 0;
  } finally {
    await store.close();
    blobs.close();
  }
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) {
    console.log(values.help ? `${USAGE}\n\n${settingsHelp()}` : USAGE);
    return values.help ? 0 : 2;
  }
  const flags = Object.fromEntries(SETTING_FLAGS.map((f) => [f, values[f as keyof typeof values] as string | undefined]));
  // `gc grace set` takes its value as a positional (`slipway gc grace set 1h`).
  const value = positionals[0] === 'gc' && positionals[1] === 'grace' && positionals[2] === 'set' ? positionals[3] : undefined;
  const command = positionals.slice(0, value === undefined ? undefined : 3).join(' ');
  // `migrate` copies from the data directory; its s3.* settings name the target bucket
  // (server/ops/migrate-cli.ts), not where this installation keeps its blobs.
  const loaded = loadSettings(process.env, flags, command === 'migrate' ? { blobStore: 'fs' } : command === 's3 create-bucket' ? { blobStore: 's3' } : {});
  const config = loaded.config;
  switch (command) {
    case 'config check':
      console.log(checkSummary(loaded, process.env));
      return 0;
    case 'config print':
      console.log(printSettings(loaded, values.json === true));
      return 0;
    case 'key generate': {
      const path = config.keyFile ?? resolve(config.dataDir, 'keys', 'server.key');
      const key = generateKeyFile(path);
      console.log(`Server key written to ${path} (mode 0600; fingerprint ${new ServerKeys(key).fingerprint().slice(0, 12)}). Give every node of a cluster this file (server_key.file / SLIPWAY_KEY_FILE) or its base64 as SLIPWAY_SERVER_KEY.`);
      return 0;
    }
    case 's3 create-bucket': {
      const b = config.blobStore;
      if (b.kind !== 's3') throw new Error('unreachable: the blob store is forced to s3');
      const outcome = await (await import('./ops/create-bucket.js')).createBucket(b);
      console.log(`Bucket ${b.bucket} ${outcome === 'created' ? 'created' : 'already exists'} at ${b.endpoint ?? `AWS S3 (${b.region})`}; it answers.`);
      return 0;
    }
    case 'serve':
      await serve(config);
      return -1;
    case 'account create': {
      if (!values.email) throw new Error('account create needs --email');
      const created = await withAccounts(config, (a) => a.create(values.email!, values.password));
      printAccount(created, values.json === true);
      return 0;
    }
    case 'app create': {
      if (!values.name || !values.owner) throw new Error('app create needs --name and --owner');
      const app = await withAccounts(config, async (a, apps) => {
        const owner = await a.byEmail(values.owner!);
        if (!owner) throw new Error(`no account with e-mail ${values.owner}`);
        return apps.create({ name: values.name, ownerId: owner.id });
      });
      console.log(values.json ? JSON.stringify({ id: app.id, name: app.name }) : `App ${app.name} created (${app.id}).`);
      return 0;
    }
    case 'gc':
      await collectGarbage(config, values['dry-run'] === true, values.json === true);
      return 0;
    case 'gc grace':
      await showGrace(config, values.json === true);
      return 0;
    case 'gc grace set':
      return setGrace(config, value, values.json === true);
    case 'backup': {
      refuseInClusterMode('backup', config.databaseUrl);
      if (!values.to) throw new Error('backup needs --to DIR');
      const to = resolve(values.to);
      return printBackup('Backed up to', await backup(config.dataDir, to), to, values.json === true);
    }
    case 'fsck':
      return checkStore(config, values.full === true, values.repair === true, values.json === true);
    case 'migrate':
      return (await import('./ops/migrate-cli.js')).migrateDataDir(config.dataDir, values['to-database'], values['to-blob-store'], values.json === true,
        () => loadSettings(process.env, flags, { blobStore: 's3' }).config.blobStore);
    case 'restore': {
      refuseInClusterMode('restore', config.databaseUrl);
      if (!values.from || !flags.data) throw new Error('restore needs --from DIR and --data NEWDIR');
      return printBackup('Restored into', await restore(resolve(values.from), config.dataDir), config.dataDir, values.json === true);
    }
    case 'key adopt': {
      const store = await openStore(config.dataDir);
      try {
        const keys = ServerKeys.load(config);
        const before = await adoptServerKey(store.metadata, keys, systemClock.now());
        console.log(`Server key ${keys.fingerprint().slice(0, 12)} recorded as this installation's key${before && before !== keys.fingerprint() ? ` (was ${before.slice(0, 12)}): values signed and second factors sealed under the old key no longer work` : ''}.`);
      } finally {
        await store.close();
      }
      return 0;
    }
    case 'operator reset-credentials':
      return (await import('./cli/operator.js')).resetOperatorCredentials(config, values.json === true);
    default:
      console.error(`unknown command "${command}"\n${USAGE}`);
      return 2;
  }
}

// Every exit waits for stdout and stderr to drain (server/cli/exit.ts): a piped report stays whole.
main(process.argv.slice(2)).then(
  (code) => { if (code >= 0) void exitWhenFlushed(code); },
  (e) => {
    console.error(`slipway: ${reason(e)}`);
    void exitWhenFlushed(1);
  },
);
