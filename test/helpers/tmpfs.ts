/**
 * A small tmpfs for fault-injection tests: a data directory whose free space the test controls
 * (filled to 0 bytes or to a few MiB free with a filler file, then grown with `remount`).
 * Mounting needs root (CAP_SYS_ADMIN); without it the tests are skipped with a message, unless
 * CI is set (then that is a failure).
 */
import { execFileSync } from 'node:child_process';
import { closeSync, fstatSync, ftruncateSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MiB = 1024 * 1024;

/** A mounted tmpfs; `fill` and `grow` change its free space, `unmount` removes it. */
export interface Tmpfs {
  dir: string;
  /** Bytes free for an unprivileged writer now. */
  free(): number;
  /**
   * Fills the file system so that about `leaveBytes` stay free (0: full). The filler file
   * `<dir>/filler` grows or shrinks to match; returns the bytes free afterwards.
   */
  fill(leaveBytes: number): number;
  /** Removes the filler file. */
  unfill(): void;
  /** Grows (or shrinks) the file system to `sizeMiB` (`mount -o remount,size=`). */
  resize(sizeMiB: number): void;
  /** Lazily unmounts and removes the mount point. */
  unmount(): void;
}

/** tap `skip` value: false when this process may mount a tmpfs; a message when not (and CI is unset). */
export function tmpfsSkip(): string | false {
  let probe: Tmpfs | undefined;
  try {
    probe = mountTmpfs(1);
    return false;
  } catch (e) {
    if (process.env.CI) throw new Error(`mounting a tmpfs is required in CI (run the tests as root): ${(e as Error).message}`);
    return `skipped: cannot mount a tmpfs (needs root): ${(e as Error).message.split('\n')[0]}`;
  } finally {
    probe?.unmount();
  }
}

/** Mounts a tmpfs of `sizeMiB` on a new temporary directory. @throws when mount is refused. */
export function mountTmpfs(sizeMiB: number): Tmpfs {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const filler = join(dir, 'filler');
  const free = () => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  };
  return {
    dir,
    free,
    fill(leaveBytes) {
      const fd = openSync(filler, 'a');
      try {
        const have = free();
        if (have < leaveBytes) {
          // Shrink the filler by what is missing (never below 0 bytes).
          ftruncateSync(fd, Math.max(0, fstatSync(fd).size - (leaveBytes - have)));
        } else {
          const chunk = Buffer.alloc(Math.min(MiB, Math.max(4096, have - leaveBytes)));
          while (free() > leaveBytes) {
            const want = Math.min(chunk.length, free() - leaveBytes);
            try {
              writeSync(fd, chunk, 0, Math.max(1, want));
            } catch (e) {
              if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw e;
            }
          }
        }
      } finally {
        closeSync(fd);
      }
      return free();
    },
    unfill() {
      rmSync(filler, { force: true });
    },
    resize(sizeMiB) {
      execFileSync('mount', ['-o', `remount,size=${sizeMiB}m`, dir], { stdio: 'pipe' });
    },
    unmount() {
      try {
        execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      } catch { /* already gone */ }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
