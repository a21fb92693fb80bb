/**
 * A disk that hangs, for fault-injection tests: a FUSE file system (fuse-overlayfs over a
 * directory of the test's) whose daemon the test stops with SIGSTOP. From then on every
 * operation that reaches the file system (open, write, fsync, rename, stat, statfs) waits in
 * the kernel for an answer that does not come, neither completing nor failing, as on a device
 * or a network file system that stopped answering; SIGCONT lets them all complete. Needs
 * /dev/fuse and fuse-overlayfs (Debian package fuse-overlayfs); without them the tests are
 * skipped with a message, unless CI is set (then that is a failure).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killOnExit, waitFor } from './daemons.js';

/** A mounted FUSE file system whose daemon the test can stop. */
export interface HungDisk {
  /** The mount point: use it (or a directory in it) as the data directory. */
  dir: string;
  /** Stops the daemon (SIGSTOP): every operation on `dir` hangs from now on. */
  freeze(): void;
  /** Lets the daemon run again (SIGCONT): the hung operations complete. */
  thaw(): void;
  /** Thaws, unmounts and removes everything. */
  unmount(): Promise<void>;
}

function missing(): string | undefined {
  if (!existsSync('/dev/fuse')) return '/dev/fuse is not present (the container needs --device /dev/fuse)';
  try {
    execFileSync('fuse-overlayfs', ['--version'], { stdio: 'pipe' });
  } catch {
    return 'fuse-overlayfs is not installed (apt-get install fuse-overlayfs)';
  }
  return undefined;
}

/** tap `skip` value: false when a FUSE file system can be mounted here; a message when not (and CI is unset). */
export async function hungDiskSkip(): Promise<string | false> {
  const why = missing();
  let probe: HungDisk | undefined;
  try {
    if (why) throw new Error(why);
    probe = await mountHungDisk();
    return false;
  } catch (e) {
    if (process.env.CI) throw new Error(`a FUSE file system is required in CI: ${(e as Error).message}`);
    return `skipped: cannot mount a FUSE file system: ${(e as Error).message.split('\n')[0]}`;
  } finally {
    await probe?.unmount();
  }
}

/** Mounts fuse-overlayfs on a new temporary directory. @throws when it cannot be mounted. */
export async function mountHungDisk(): Promise<HungDisk> {
  const root = mkdtempSync(join(tmpdir(), 'slipway-fuse-'));
  const [lower, upper, work, dir] = ['lower', 'upper', 'work', 'mnt'].map((d) => join(root, d)) as [string, string, string, string];
  for (const d of [lower, upper, work, dir]) mkdirSync(d);
  // -f: in the foreground, so this process holds the daemon's pid.
  const daemon: ChildProcess = spawn('fuse-overlayfs', ['-f', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  daemon.stderr!.on('data', (d: Buffer) => { stderr += d.toString(); });
  const mounted = () => readFileSync('/proc/self/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === dir);
  try {
    await waitFor('fuse-overlayfs to mount', () => mounted() || daemon.exitCode !== null, { timeoutMs: 10_000, intervalMs: 20 });
    if (!mounted()) throw new Error(`fuse-overlayfs did not mount: ${stderr.trim()}`);
  } catch (e) {
    daemon.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  const gone = new Promise<void>((resolve) => { if (daemon.exitCode !== null) resolve(); else daemon.once('exit', () => resolve()); });
  // A test process that ends without its teardown (a timeout) leaves no stopped daemon behind.
  const unregister = killOnExit(() => {
    try { execFileSync('fusermount', ['-u', '-z', dir], { stdio: 'pipe' }); } catch { /* not mounted */ }
    return daemon.exitCode === null ? [daemon.pid!] : [];
  });
  let frozen = false;
  return {
    dir,
    freeze: () => { frozen = true; daemon.kill('SIGSTOP'); },
    thaw: () => { if (frozen) daemon.kill('SIGCONT'); frozen = false; },
    unmount: async () => {
      if (frozen) daemon.kill('SIGCONT');
      frozen = false;
      try {
        execFileSync('fusermount', ['-u', '-z', dir], { stdio: 'pipe' });
      } catch {
        daemon.kill('SIGTERM');
      }
      await gone;
      unregister();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/**
 * What each thread of process `pid` is waiting on in the kernel (Linux: its name, `wchan` and,
 * where readable (root), its kernel stack), for the report of a request that did not end in
 * time: a thread waiting in `request_wait_answer` waits on the hung FUSE file system, and the
 * frames below it say why (a write, a page fault, a stat). Never throws.
 */
export function threadWaits(pid: number): string {
  const out: string[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const read = (f: string) => { try { return readFileSync(`/proc/${pid}/task/${tid}/${f}`, 'utf8').trim(); } catch { return ''; } };
      const wchan = read('wchan');
      if (/epoll_wait|futex|^0?$/.test(wchan) && tid !== String(pid)) continue;
      const stack = read('stack').split('\n').map((l) => l.replace(/^\[<[0-9a-f]+>\]\s*/, '').replace(/\+0x.*$/, '')).filter(Boolean).slice(0, 12).join(' < ');
      // /proc/…/syscall: the number, then the arguments (the first is a file descriptor for the
      // file calls): the file it names tells which file the thread waits on.
      const call = read('syscall').split(' ');
      let file = '';
      try { file = call.length > 2 ? readlinkSync(`/proc/${pid}/fd/${Number(call[1])}`) : ''; } catch { /* not a descriptor */ }
      out.push(`${tid === String(pid) ? 'main thread' : `thread ${tid}`} (${read('comm')}) waits in ${wchan || '?'}${call[0] && call[0] !== 'running' ? ` (syscall ${call[0]}${file ? ` on ${file}` : ''})` : ''}${stack ? `: ${stack}` : ''}`);
    }
  } catch (e) {
    return `threads of ${pid} not readable: ${(e as Error).message}`;
  }
  return out.join('\n');
}
