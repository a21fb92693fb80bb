/**
 * A real PostgreSQL 15 server for tests (Debian package postgresql-15): initdb into a temp
 * directory, started by pg_ctl on a free loopback port with its unix socket in the same
 * directory. initdb refuses root, so as root everything runs as the `postgres` user on a
 * directory it owns (mode 700). Ready in about 1–2 s here (initdb ~1 s with --no-sync, start
 * ~0.3 s; `timings` holds each phase, printed with SLIPWAY_HARNESS_VERBOSE=1).
 *
 * By default durability is traded for speed (fsync, synchronous_commit and full_page_writes
 * off); pass `durable: true` for a test about crashes, and `settings` for other server settings
 * (`-c name=value`, e.g. a benchmark's `shared_buffers`). One server per test file: ports come
 * from the kernel, so files run side by side. stop() shuts down with `pg_ctl -m immediate`
 * and removes the directory; a test process killed before stop() leaves a postmaster that the
 * next start sweeps (see daemons.ts).
 */
import { promises as fsp, existsSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { freePort, run, makeRunDir, readPidFile, killOnExit } from './daemons.js';

/** Connection details of a running server (user `postgres`, trust authentication). */
export interface Postgres {
  host: '127.0.0.1';
  port: number;
  user: 'postgres';
  database: 'postgres';
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  connectionString: string;
  /** Directory of the unix socket (`.s.PGSQL.<port>`). */
  socketDir: string;
  dir: string;
  /** Milliseconds spent in each phase, and `total`. */
  timings: Record<string, number>;
  /** Stops the server and removes the directory; safe to call twice. */
  stop(): Promise<void>;
  /**
   * Stops the server and keeps its data directory: an outage or the first half of a restart.
   * `fast` (default) ends sessions and checkpoints; `immediate` is a crash of the postmaster.
   */
  halt(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts the halted server again on the same directory and port; resolves once it accepts connections. */
  resume(): Promise<void>;
}

const BIN = '/usr/lib/postgresql/15/bin';
const PREFIX = 'slipway-pg-';

/** True when PostgreSQL 15's server programs are installed. */
export function postgresAvailable(): boolean {
  return existsSync(join(BIN, 'initdb')) && existsSync(join(BIN, 'pg_ctl'));
}

/**
 * tap `skip` value: false when PostgreSQL 15 is installed; a message when not and CI is unset.
 * @throws Error under CI=true when it is missing.
 */
export function postgresSkip(): string | false {
  if (postgresAvailable()) return false;
  if (process.env.CI) throw new Error('PostgreSQL 15 (postgresql-15) is required in CI but not installed');
  return 'skipped: PostgreSQL 15 not installed (apt-get install --no-install-recommends postgresql-15)';
}

const asRoot = process.getuid?.() === 0;

/** Runs a PostgreSQL program, as `postgres` when we are root. */
function pg(prog: string, args: string[]): Promise<string> {
  return asRoot ? run('runuser', ['-u', 'postgres', '--', join(BIN, prog), ...args]) : run(join(BIN, prog), args);
}

/**
 * Creates and starts a server.
 * @throws RangeError for a setting whose name or value is not plain; Error with pg_ctl's output
 *   and the server log when it does not start within 60 s.
 */
export async function startPostgres(opts: { durable?: boolean; settings?: Readonly<Record<string, string>> } = {}): Promise<Postgres> {
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  const root = await makeRunDir(PREFIX, (d) => {
    const p = readPidFile(join(d, 'data', 'postmaster.pid'));
    return p ? [p] : [];
  });
  const data = join(root, 'data');
  let pid: number | undefined;
  const unregister = killOnExit(() => (pid ? [pid] : []));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (existsSync(join(data, 'postmaster.pid'))) {
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {
        if (pid) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
      });
    }
    unregister();
    await fsp.rm(root, { recursive: true, force: true });
  };
  try {
    await fsp.mkdir(data, { mode: 0o700 });
    if (asRoot) {
      const u = Number(execFileSync('id', ['-u', 'postgres']).toString());
      const g = Number(execFileSync('id', ['-g', 'postgres']).toString());
      await fsp.chown(root, u, g);
      await fsp.chown(data, u, g);
    }
    await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
    timings.initdb = Date.now() - t0;
    const port = await freePort();
    const settings = [`-p ${port}`, `-k ${root}`, '-c listen_addresses=127.0.0.1', '-c max_connections=50'];
    if (!opts.durable) settings.push('-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off');
    for (const [name, value] of Object.entries(opts.settings ?? {})) {
      if (!/^[a-z_]+$/.test(name) || !/^[A-Za-z0-9_.]+$/.test(value)) throw new RangeError(`PostgreSQL setting ${name}=${value}: a name of [a-z_] and a plain value`);
      settings.push(`-c ${name}=${value}`);
    }
    const t1 = Date.now();
    // pg_ctl -w returns once the server accepts connections; the postmaster writes to the log.
    const pgStart = async () => {
      await pg('pg_ctl', ['-D', data, '-l', join(root, 'server.log'), '-w', '-t', '60', '-o', settings.join(' '), 'start'])
        .catch(async (e) => {
          throw new Error(`${(e as Error).message}\n${await fsp.readFile(join(root, 'server.log'), 'utf8').catch(() => '')}`);
        });
      pid = readPidFile(join(data, 'postmaster.pid'));
    };
    await pgStart();
    timings.start = Date.now() - t1;
    timings.total = Date.now() - t0;
    if (process.env.SLIPWAY_HARNESS_VERBOSE) console.error(`# postgres ready in ${timings.total} ms ${JSON.stringify(timings)}`);
    return {
      host: '127.0.0.1', port, user: 'postgres', database: 'postgres',
      connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`,
      socketDir: root, dir: root, timings, stop,
      halt: async (mode = 'fast') => {
        await pg('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop']);
        pid = undefined;
      },
      resume: pgStart,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
