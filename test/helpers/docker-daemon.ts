/**
 * A real Docker daemon for tests: Debian's docker.io (dockerd 20.10 and its containerd 1.6), run
 * as root on a private unix socket, data root and exec root inside one temp directory, so it never
 * touches a system daemon (/var/run/docker.sock, /var/lib/docker) and two test files can each run
 * their own. Debian package: docker.io.
 *
 * containerd gets its own config file (root, state, gRPC and ttrpc sockets in the directory; the
 * CRI, debug and metrics endpoints off); dockerd runs with `--storage-driver vfs` (works on any
 * file system, no kernel overlay support needed), `--iptables=false --bridge=none` (no host network
 * changes) and an empty `--config-file` (the host's /etc/docker/daemon.json is ignored). Registries
 * on 127.0.0.0/8 are plain HTTP by Docker's own default; `insecureRegistries` adds others.
 *
 * The returned `env` points a docker client at this daemon: DOCKER_HOST, DOCKER_CONFIG (a private
 * client config dir: `docker login` never writes the user's ~/.docker), and PATH with a `docker`
 * that is the docker.io client (/usr/bin/docker) first, so tools that run `docker` (the platform
 * CLI) use the client that matches the daemon.
 *
 * Ready in about 1–2 s here (each phase is timed in `timings`; SLIPWAY_HARNESS_VERBOSE=1 prints
 * them). stop() stops dockerd, then containerd (SIGTERM, SIGKILL after 10 s), unmounts what they
 * left mounted and removes the directory; a test process killed before stop() leaves daemons that
 * the next start sweeps (see daemons.ts).
 */
import { promises as fsp, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { execFile, execFileSync } from 'node:child_process';
import { waitFor, startDaemon, stopDaemon, tail, makeRunDir, killOnExit, type Daemon } from './daemons.js';

/** A running daemon. */
export interface DockerDaemon {
  /** `unix://<dir>/docker.sock`, the value for DOCKER_HOST or `docker -H`. */
  host: string;
  /** Path of dockerd's API socket. */
  socket: string;
  /** Path of containerd's gRPC socket (for `ctr --address`). */
  containerdSocket: string;
  /** Environment for a docker client (DOCKER_HOST, DOCKER_CONFIG, PATH); merge into process.env. */
  env: Record<string, string>;
  /** The daemon's directory (config, logs, data and exec roots). */
  dir: string;
  /** Milliseconds spent in each start phase, and `total`. */
  timings: Record<string, number>;
  /** Runs `docker args` against this daemon; never rejects (exit code in the result). */
  docker(args: string[], opts?: { cwd?: string; timeoutMs?: number; input?: string }): Promise<DockerResult>;
  /** Stops both daemons and removes the directory; safe to call twice. */
  stop(): Promise<void>;
}

/** Outcome of one docker client run. */
export interface DockerResult {
  /** Exit code (124 when killed by the timeout). */
  code: number;
  stdout: string;
  stderr: string;
}

/** The docker.io client; PATH may hold another (a newer static docker) first. */
export const DOCKER_CLIENT = '/usr/bin/docker';
const BINARIES = ['/usr/sbin/dockerd', '/usr/bin/containerd', DOCKER_CLIENT];
const PREFIX = 'slipway-docker-';

/** True when docker.io is installed and we are root (dockerd refuses to run otherwise). */
export function dockerAvailable(): boolean {
  return BINARIES.every((b) => existsSync(b)) && process.getuid?.() === 0;
}

/**
 * tap `skip` value: false when the daemon can run here; a message when it cannot and CI is unset.
 * @throws Error under CI=true when docker.io is missing or the tests do not run as root.
 */
export function dockerSkip(): string | false {
  if (dockerAvailable()) return false;
  const why = process.getuid?.() !== 0 ? 'the Docker daemon needs root' : 'docker.io not installed';
  if (process.env.CI) throw new Error(`${why}; the container workflow tests must run in CI (apt-get install docker.io, run as root)`);
  return `skipped: ${why} (apt-get install docker.io; run the tests as root)`;
}

/**
 * `cmd args` run with `hostsFile` as its /etc/hosts: in a mount namespace of its own (util-linux
 * `unshare --mount`, private propagation) where the file is bind-mounted over /etc/hosts, so the
 * process and its children resolve the names a user writes into /etc/hosts for a loopback set-up
 * while the machine's file stays untouched. Needs root. Without `hostsFile`, `cmd args` unchanged.
 */
export function withHostsFile(hostsFile: string | undefined, cmd: string, args: string[]): [string, string[]] {
  if (!hostsFile) return [cmd, args];
  return ['unshare', ['--mount', '--', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', hostsFile, cmd, ...args]];
}

/** Every process whose command line names `dir` (the daemons and containerd's shims). */
function pidsUnder(dir: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(dir)) pids.push(Number(name));
    } catch { /* gone */ }
  }
  return pids;
}

/**
 * Lazily unmounts every mount point under `dir`, deepest first: dockerd's bind mount of its data
 * root onto itself, and the netns and shm mounts of containers it ran.
 */
function unmountUnder(dir: string): void {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n')
    .map((l) => l.split(' ')[4]).filter((p): p is string => !!p && (p === dir || p.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const p of points) {
    try { execFileSync('umount', ['-l', p], { stdio: 'ignore' }); } catch { /* already gone */ }
  }
}

async function removeRunDir(dir: string): Promise<void> {
  unmountUnder(dir);
  await fsp.rm(dir, { recursive: true, force: true });
}

function containerdConfig(dir: string): string {
  return `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${dir}/containerd.sock"
[ttrpc]
  address = "${dir}/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
`;
}

/** GET /_ping on the daemon's socket: true on `200 OK`. */
function ping(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath: socket, path: '/_ping', timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => { req.destroy(); resolve(false); });
    req.end();
  });
}

/**
 * Starts containerd and dockerd and waits until the Docker API answers /_ping.
 * @param opts.insecureRegistries extra `host:port` registries to reach over plain HTTP.
 * @param opts.hostsFile a hosts(5) file dockerd sees as /etc/hosts (see withHostsFile): the
 *        registry host names it resolves, without touching the machine's /etc/hosts.
 * @throws Error with the daemons' log tails when either exits or the API is not up within 60 s.
 */
export async function startDocker(opts: { insecureRegistries?: string[]; hostsFile?: string } = {}): Promise<DockerDaemon> {
  const t0 = Date.now();
  const timings: Record<string, number> = {};
  // Sweeping: a dead owner's containerd, dockerd and shims all name the directory in their argv;
  // dockerd bind-mounts its data root onto itself, a mount that outlives a SIGKILLed daemon.
  const dir = await makeRunDir(PREFIX, pidsUnder, unmountUnder);
  const socket = join(dir, 'docker.sock');
  const containerdSocket = join(dir, 'containerd.sock');
  const daemons: Daemon[] = [];
  const unregister = killOnExit(() => pidsUnder(dir));
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const d of [...daemons].reverse()) await stopDaemon(d, 10_000);
    for (const pid of pidsUnder(dir)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
    unregister();
    await removeRunDir(dir);
  };
  const exited = () => daemons.filter((d) => d.exited !== undefined)
    .map((d) => `${d.name} exited (${d.exited}):\n${tail(d.log)}`).join('\n') || undefined;
  try {
    await fsp.writeFile(join(dir, 'containerd.toml'), containerdConfig(dir));
    await fsp.writeFile(join(dir, 'daemon.json'), '{}\n');
    await fsp.mkdir(join(dir, 'client'));
    await fsp.mkdir(join(dir, 'bin'));
    await fsp.symlink(DOCKER_CLIENT, join(dir, 'bin', 'docker'));
    daemons.push(startDaemon('containerd', '/usr/bin/containerd', ['--config', join(dir, 'containerd.toml')], join(dir, 'containerd.log')));
    await waitFor('containerd socket', () => existsSync(containerdSocket), { timeoutMs: 60_000, abort: exited });
    timings.containerd = Date.now() - t0;
    const t1 = Date.now();
    const [cmd, args] = withHostsFile(opts.hostsFile, '/usr/sbin/dockerd', [
      '--config-file', join(dir, 'daemon.json'),
      '--containerd', containerdSocket,
      '--data-root', join(dir, 'data'),
      '--exec-root', join(dir, 'exec'),
      '--pidfile', join(dir, 'dockerd.pid'),
      '-H', `unix://${socket}`,
      '--storage-driver', 'vfs',
      '--iptables=false', '--ip6tables=false', '--bridge=none', '--ip-masq=false',
      ...(opts.insecureRegistries ?? []).flatMap((r) => ['--insecure-registry', r]),
    ]);
    daemons.push(startDaemon('dockerd', cmd, args, join(dir, 'dockerd.log')));
    await waitFor('dockerd /_ping', () => ping(socket), { timeoutMs: 60_000, intervalMs: 100, abort: exited });
    timings.dockerd = Date.now() - t1;
    timings.total = Date.now() - t0;
    if (process.env.SLIPWAY_HARNESS_VERBOSE) console.error(`# docker ready in ${timings.total} ms ${JSON.stringify(timings)}`);
    const env = {
      DOCKER_HOST: `unix://${socket}`,
      DOCKER_CONFIG: join(dir, 'client'),
      PATH: `${join(dir, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    };
    const docker = (args: string[], o: { cwd?: string; timeoutMs?: number; input?: string } = {}) =>
      new Promise<DockerResult>((resolve) => {
        const child = execFile(DOCKER_CLIENT, args, {
          cwd: o.cwd, timeout: o.timeoutMs ?? 120_000, maxBuffer: 64 << 20, env: { ...process.env, ...env },
        }, (err, stdout, stderr) => {
          const e = err as (Error & { code?: number | string; killed?: boolean }) | null;
          resolve({ code: !e ? 0 : e.killed ? 124 : typeof e.code === 'number' ? e.code : 1, stdout, stderr });
        });
        if (o.input !== undefined) child.stdin?.end(o.input);
      });
    return { host: env.DOCKER_HOST, socket, containerdSocket, env, dir, timings, docker, stop };
  } catch (e) {
    const logs = daemons.map((d) => `${d.name} log:\n${tail(d.log)}`).join('\n');
    await stop();
    throw new Error(`${(e as Error).message}\n${logs}`);
  }
}
