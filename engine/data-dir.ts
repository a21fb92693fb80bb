/**
 * Permissions of the data directory. It holds password hashes, sealed second-factor secrets,
 * token hashes, the server key and every pushed layer, so only the service's own user may read
 * it: directories 0700, files 0600. New files get those modes from the process umask (0077, set
 * here, before anything is created); directories and files made by an older build or another
 * tool are corrected at every start. Blob and upload files inside `blobs/` and `uploads/` are not
 * visited one by one (there can be millions): their directories become 0700, which closes them
 * to other users whatever the files' own modes.
 */
import { chmodSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Owner-only modes of the data directory's entries. */
export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;

/** Sub-directories whose files are visited and made 0600 (a handful of files each). */
const SMALL_DIRS = ['lmdb', 'keys'];
/** Sub-directories made 0700 (their files are covered by the directory's mode). */
const LARGE_DIRS = ['blobs', 'uploads'];

/**
 * Creates `dir` (0700) if needed, sets the process umask to 0077 and corrects the modes of
 * existing entries as described above.
 * @throws Error from the file system (for example EPERM when the directory belongs to another user).
 */
export function secureDataDir(dir: string): void {
  process.umask(0o077);
  mkdirSync(dir, { recursive: true, mode: DATA_DIR_MODE });
  restrict(dir, DATA_DIR_MODE);
  for (const name of [...SMALL_DIRS, ...LARGE_DIRS]) {
    const sub = join(dir, name);
    if (!restrict(sub, DATA_DIR_MODE) || !SMALL_DIRS.includes(name)) continue;
    for (const entry of readdirSync(sub, { withFileTypes: true })) {
      if (entry.isFile()) restrict(join(sub, entry.name), DATA_FILE_MODE);
    }
  }
}

/** chmod `path` to `mode` when it differs; false when `path` does not exist. */
function restrict(path: string, mode: number): boolean {
  let current: number;
  try {
    current = statSync(path).mode & 0o777;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  if (current !== mode) chmodSync(path, mode);
  return true;
}
