/**
 * Buffers a session's finished upload writer leaves for the same session's next writer (the next
 * PATCH of a chunked upload), kept outside the upload memory budget for a short time and under a
 * global limit (writer.ts explains why: faulting in fresh pages for every PATCH cost more CPU than
 * the rest of the request). A buffer that does not fit, or arrives after its stash expired or was
 * taken, goes to the process's pool of shared buffers (aligned-buffer.ts `recycleShared`); never
 * to the garbage collector, as shared memory left to it stays mapped.
 *
 * Counting: the limit covers the buffers in open stashes and those a next writer adopted
 * (`take`) but has not used yet; a writer reports each adopted buffer it puts to use (`used`).
 */
import type { BlobWriter } from './contract.js';
import { recycleShared } from './aligned-buffer.js';

/** Free buffers a session's finished writer leaves to the session's next writer. */
export interface Stash {
  readonly bufs: Buffer[];
  /** Set once the stash expired or was taken: buffers offered later go to the shared pool. */
  closed: boolean;
  timer: NodeJS.Timeout | null;
}

/** The stashes of all sessions of the process (one instance per writer module). */
export interface BufferStashes {
  /**
   * Closes the session's stash, if any, and returns its buffers; they stay counted against the
   * limit until `used` or until passed back to `open`.
   */
  take(blob: BlobWriter): Buffer[];
  /** An adopted buffer of `bytes` bytes was put to use (it now counts in the budget instead). */
  used(bytes: number): void;
  /**
   * Opens a new stash for the session (expiring the one it had), moves the still unused
   * `adopted` buffers into it, and expires it after the stash time.
   */
  open(blob: BlobWriter, adopted: Buffer[]): Stash;
  /** Keeps `buf` in `stash` when it is open and the limit allows, else recycles it. Never a buffer a socket may still fill. */
  offer(stash: Stash | null, buf: Buffer): void;
}

/**
 * Creates the stashes of a process.
 * @param limitBytes most bytes kept outside the budget, all sessions together
 * @param ms how long a stash waits for the session's next writer (milliseconds)
 */
export function bufferStashes(limitBytes: number, ms: number): BufferStashes {
  const stashes = new WeakMap<BlobWriter, Stash>();
  let kept = 0;
  const close = (blob: BlobWriter, stash: Stash): Buffer[] => {
    stash.closed = true;
    if (stash.timer) clearTimeout(stash.timer);
    if (stashes.get(blob) === stash) stashes.delete(blob);
    return stash.bufs.splice(0);
  };
  const expire = (blob: BlobWriter, stash: Stash): void => {
    for (const b of close(blob, stash)) {
      kept -= b.length;
      recycleShared(b);
    }
  };
  const offer = (stash: Stash | null, buf: Buffer): void => {
    if (!stash || stash.closed || kept + buf.length > limitBytes) {
      recycleShared(buf);
      return;
    }
    stash.bufs.push(buf);
    kept += buf.length;
  };
  return {
    take(blob) {
      const stash = stashes.get(blob);
      return stash ? close(blob, stash) : [];
    },
    used(bytes) {
      kept -= bytes;
    },
    open(blob, adopted) {
      const old = stashes.get(blob);
      if (old) expire(blob, old);
      const stash: Stash = { bufs: [], closed: false, timer: null };
      for (const b of adopted.splice(0)) {
        kept -= b.length;
        offer(stash, b);
      }
      stashes.set(blob, stash);
      stash.timer = setTimeout(() => expire(blob, stash), ms);
      stash.timer.unref();
      return stash;
    },
    offer,
  };
}
