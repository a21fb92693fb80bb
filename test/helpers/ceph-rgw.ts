/**
 * A real S3 store for tests: a single-node Ceph cluster (one monitor, one OSD on the in-memory
 * `memstore` object store, radosgw with the beast frontend) in its own temp directory, with an
 * S3 user whose keys are returned. Debian packages: ceph-mon ceph-osd radosgw ceph-common.
 *
 * Ready in about 2–4 s on a 2-core machine (each phase is timed in `timings`; set
 * SLIPWAY_HARNESS_VERBOSE=1 to print them). No cephx and no manager: `auth * required = none`.
 * The fast start depends on `paxos propose interval`/`paxos min wait` (each pool creation would
 * take ~2 s otherwise) and radosgw needs `ms mon client mode = crc` when auth is off.
 *
 * Ports: one cluster per test file, side by side. The monitor (msgr2 only) and radosgw listen on
 * ports the kernel reported free; the OSD scans its bind range (Ceph's `ms bind port min/max`,
 * 6800–7568) for free ports by itself, so two clusters never need coordination. Memory is RAM
 * (memstore): size `memstoreBytes` above what a test writes — a full OSD makes every S3 request
 * hang without an error.
 *
 * stop() terminates radosgw, the OSD and the monitor (SIGTERM, SIGKILL after 5 s) and removes
 * the directory; a test process killed before stop() leaves daemons that the next start sweeps.
 */
import { randomUUID, randomBytes } from 'node:crypto';
import { promises as fsp, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { execFileSync } from 'node:child_process';
import {
  freePort, waitFor, run, startDaemon, stopDaemon, tail, makeRunDir, readPidFile, killOnExit, type Daemon,
} from './daemons.js';

/** Connection details of a running RGW. */
export interface CephRgw {
  /** `http://127.0.0.1:<port>` */
  endpoint: string;
  region: 'us-east-1';
  accessKeyId: string;
  secretAccessKey: string;
  /** The cluster's directory (config, logs, pid files). */
  dir: string;
  /** Milliseconds spent in each start phase, and `total`. */
  timings: Record<string, number>;
  /**
   * Kills radosgw (SIGKILL: the store vanishes mid-request; connections are refused until
   * `startGateway`). The monitor, the OSD and the data stay. Idempotent.
   */
  stopGateway(): Promise<void>;
  /** Starts radosgw again on the same port and waits until it answers HTTP (60 s at most). */
  startGateway(): Promise<void>;
  /** Stops every daemon and removes the directory; safe to call twice. */
  stop(): Promise<void>;
}

const BINARIES = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'monmaptool', 'ceph'];
const PREFIX = 'slipway-ceph-';

/** True when every Ceph program the harness needs is installed. */
export function cephAvailable(): boolean {
  try {
    for (const b of BINARIES) execFileSync('sh', ['-c', `command -v ${b}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * tap `skip` value: false when Ceph is installed; a message when it is not and CI is unset.
 * @throws Error under CI=true when Ceph is missing (the S3 suites must run in CI).
 */
export function cephSkip(): string | false {
  if (cephAvailable()) return false;
  if (process.env.CI) throw new Error('Ceph (ceph-mon ceph-osd radosgw ceph-common) is required in CI but not installed');
  return 'skipped: Ceph not installed (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common)';
}

function conf(dir: string, fsid: string, monPort: number, rgwPort: number, memstoreBytes: number): string {
  return `[global]
fsid = ${fsid}
mon host = [v2:127.0.0.1:${monPort}]
mon initial members = a
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
keyring = ${dir}/keyring
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
pid file = ${dir}/run/$name.pid
log file = ${dir}/log/$name.log
mon data = ${dir}/mon/$name
osd data = ${dir}/osd/$name
osd objectstore = memstore
memstore device bytes = ${memstoreBytes}
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
paxos propose interval = 0.1
paxos min wait = 0.01
rgw gc obj min wait = 0

[client.rgw.a]
# tcp_nodelay: without it beast writes a response's head and body as two small segments, and
# Nagle holds the body until the client's delayed ACK (40 ms): every GetObject of a small
# object took ~48 ms against ~5 ms for a HeadObject (docs/operator-guide.md "Storage backends").
rgw frontends = beast endpoint=127.0.0.1:${rgwPort} tcp_nodelay=1
rgw data = ${dir}/rgw
`;
}

function pidsIn(dir: string): number[] {
  try {
    return readdirSync(join(dir, 'run')).filter((f) => f.endsWith('.pid'))
      .map((f) => readPidFile(join(dir, 'run', f))).filter((p): p is number => p !== undefined);
  } catch {
    return [];
  }
}

function httpUp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', timeout: 1000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => { req.destroy(); resolve(false); });
    req.end();
  });
}

/**
 * Starts a cluster and creates an S3 user with fresh keys.
 * @param opts.memstoreBytes RAM the OSD may hold (default 2 GiB; allocated on use).
 * @throws Error with the failing daemon's log tail when a phase does not complete in 60 s.
 */
export async function startCephRgw(opts: { memstoreBytes?: number } = {}): Promise<CephRgw> {
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  let mark = t0;
  const phase = (name: string) => { const now = Date.now(); timings[name] = now - mark; mark = now; };

  const dir = await makeRunDir(PREFIX, pidsIn);
  const daemons: Daemon[] = [];
  const unregister = killOnExit(() => daemons.map((d) => d.child.pid!).filter(Boolean));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const d of daemons.reverse()) await stopDaemon(d);
    unregister();
    await fsp.rm(dir, { recursive: true, force: true });
  };

  try {
    for (const sub of ['run', 'log', 'mon/mon.a', 'rgw']) await fsp.mkdir(join(dir, sub), { recursive: true });
    const fsid = randomUUID();
    const monPort = await freePort();
    let rgwPort = await freePort();
    const cfg = join(dir, 'ceph.conf');
    const writeConf = () => fsp.writeFile(cfg, conf(dir, fsid, monPort, rgwPort, opts.memstoreBytes ?? 2 * 1024 ** 3));
    await writeConf();
    const ceph = (args: string[]) => run('ceph', ['-c', cfg, '--connect-timeout', '10', ...args]);
    const died = () => daemons.find((d) => d.exited !== undefined);
    const abort = () => {
      const d = died();
      return d ? `${d.name} ${d.exited}\n${tail(d.log)}\n${tail(join(dir, 'log', `${d.name}.log`))}` : undefined;
    };

    const monmap = join(dir, 'monmap');
    await run('monmaptool', ['--create', '--fsid', fsid, '--addv', 'a', `[v2:127.0.0.1:${monPort}]`, monmap]);
    await run('ceph-mon', ['-c', cfg, '-i', 'a', '--mkfs', '--monmap', monmap]);
    daemons.push(startDaemon('mon.a', 'ceph-mon', ['-c', cfg, '-i', 'a', '-f'], join(dir, 'log', 'mon.a.out')));
    const osdUuid = randomUUID();
    const osdId = (await waitFor('the monitor to accept `osd new`', () => ceph(['osd', 'new', osdUuid]), { abort })).trim();
    phase('mon');

    await fsp.mkdir(join(dir, 'osd', `osd.${osdId}`), { recursive: true });
    await run('ceph-osd', ['-c', cfg, '-i', osdId, '--mkfs', '--osd-uuid', osdUuid]);
    daemons.push(startDaemon(`osd.${osdId}`, 'ceph-osd', ['-c', cfg, '-i', osdId, '-f'], join(dir, 'log', `osd.${osdId}.out`)));
    await waitFor('the OSD to be up', async () => JSON.parse(await ceph(['osd', 'stat', '-f', 'json'])).num_up_osds === 1, { abort });
    phase('osd');

    const gateway = async () => {
      daemons.push(startDaemon('client.rgw.a', 'radosgw', ['-c', cfg, '-n', 'client.rgw.a', '-f'], join(dir, 'log', 'rgw.out')));
      await waitFor('radosgw to answer HTTP', () => httpUp(rgwPort), { abort });
    };
    // The gateway binds its port seconds after freePort() found it free: should another process
    // have taken it meanwhile, the first start moves to another port (nobody knows this one yet).
    for (let attempt = 1; ; attempt++) {
      try {
        await gateway();
        break;
      } catch (e) {
        if (attempt >= 3 || !/failed to bind address/.test((e as Error).message)) throw e;
        daemons.splice(daemons.findIndex((x) => x.name === 'client.rgw.a'), 1);
        rgwPort = await freePort();
        await writeConf();
      }
    }
    phase('rgw');
    const stopGateway = async () => {
      const d = daemons.find((x) => x.name === 'client.rgw.a');
      if (!d) return;
      daemons.splice(daemons.indexOf(d), 1);
      if (d.exited === undefined && d.child.exitCode === null) {
        const gone = new Promise<void>((r) => d.child.once('exit', () => r()));
        d.child.kill('SIGKILL');
        await gone;
      }
    };
    const startGateway = async () => {
      if (stopped) throw new Error('the cluster is stopped');
      if (!daemons.some((x) => x.name === 'client.rgw.a')) await gateway();
    };

    const accessKeyId = 'SLIPWAY' + randomBytes(6).toString('hex').toUpperCase();
    const secretAccessKey = randomBytes(24).toString('base64url');
    await run('radosgw-admin', ['-c', cfg, 'user', 'create', '--uid', 'test', '--display-name', 'test',
      '--access-key', accessKeyId, '--secret-key', secretAccessKey]);
    phase('user');
    timings.total = Date.now() - t0;
    if (process.env.SLIPWAY_HARNESS_VERBOSE) console.error(`# ceph-rgw ready in ${timings.total} ms ${JSON.stringify(timings)}`);
    return { endpoint: `http://127.0.0.1:${rgwPort}`, region: 'us-east-1', accessKeyId, secretAccessKey, dir, timings, stopGateway, startGateway, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
