/**
 * Body lanes: how many upload bodies the server reads at full speed at once (upload.lanes).
 *
 * Why: when more bulk bodies arrive together than the machine can take at full speed, reading
 * all of them a little at a time makes every one finish last. Sixteen pushes of 16 MiB at once
 * (bench `push_concurrent`) all ended their bodies within milliseconds of each other, then all
 * waited for their commits (fdatasync, rename, directory fsync, record), so the client sent the
 * next sixteen together and the disk and CPUs idled between the waves; each body also grew its
 * own four receive buffers (engine/blobs/writer-buffers.ts), 128 MiB of fresh memory for
 * sixteen, and a fresh page costs 15–40 µs of CPU in this VM. With a few lanes the bodies in them
 * run at full speed and finish early, their commits overlap the next bodies' bytes, and only the
 * lanes' bodies hold full-size buffers. Measured there (bench/README.md "Body lanes"), lanes off
 * and on in the same minutes: the first burst after a start 444–446 → 478–513 MB/s, later
 * bursts 747–775 → 833–868 MB/s; in full `npm run bench` runs the first burst went from
 * 1.53–2.19 × the reference to 2.07–2.28 ×.
 *
 * Rules (a body is one request's bytes into an upload session, `UploadWriter`):
 * - a body needs a lane only once it has brought `bulkBytes` (small bodies, and the first bytes
 *   of every body, never wait);
 * - at most `lanes` bodies hold a lane; a body that finds none free waits, first come first
 *   served, its socket paused (the transport's backpressure, which also restarts the minimum
 *   receive rate's window: server/registry/receive-rate.ts);
 * - **no body waits longer than `maxWaitMs`**: it then reads without a lane for the rest of its
 *   bytes, so a body stuck in a lane, or a client that trickles, delays no other by more than
 *   that, whichever tenant it belongs to;
 * - a lane's body yields its lane while others wait: after `quantumBytes` it goes to the back of
 *   the queue; after holding it `maxHoldMs` (slower than quantumBytes per maxHoldMs: the client,
 *   not the server, sets its pace) it reads on without a lane;
 * - a body's lane is given back when its body ends (`leave`), whatever the outcome: the upload
 *   writer leaves once the body's last buffers are back (writer.ts `end`).
 *
 * With `lanes` 0 every body reads at once (no lanes).
 */

/** Where a body stands. */
export type LaneState = 'small' | 'waiting' | 'holding' | 'free';

/** One body's place (made by `BodyLanes.ticket`). */
export interface LaneTicket {
  state: LaneState;
  /** Bytes of this body received so far (updated by `mayRead`). */
  received: number;
  /** `received` when the lane was granted. */
  grantedAtBytes: number;
  /** When the lane was granted, or the wait began (ms, the lanes' clock). */
  since: number;
  /** Called (in a microtask) when the body may read again after waiting. */
  readonly wake: () => void;
}

/** Tunables; defaults measured as described in the file header. */
export interface BodyLaneOptions {
  /**
   * Bytes a body brings before it needs a lane (default 64 KiB: one read of a small blob never
   * waits; at 1 MiB each waiting body held its growing buffers, and 16 concurrent pushes cost
   * 1.8–2.0 CPU-s/GiB against 1.5 at 64 KiB).
   */
  bulkBytes?: number;
  /** Bytes after which a lane's body yields its lane to a waiting one (default 32 MiB). */
  quantumBytes?: number;
  /**
   * Longest wait for a lane (ms, default 500); then the body reads without one. At 250, 10–11 of
   * the 64 bodies of a first burst after a start gave up waiting and each grew its own buffers
   * (100 MiB of fresh buffers in all; 495–510 MB/s); at 500 none or one (541–593 MB/s); 1,000
   * did no better (571–600).
   */
  maxWaitMs?: number;
  /** Longest hold of a lane while others wait (ms, default 1,000); then the body reads without one. */
  maxHoldMs?: number;
  /** Clock (ms); tests pass their own. */
  now?: () => number;
}

/** Lanes on by default: measured best at 2–4 on 2 vCPUs; 4 leaves room for slower clients. */
export const DEFAULT_LANES = 4;

/** The lanes of one server (see the file header). */
export class BodyLanes {
  readonly bulkBytes: number;
  readonly quantumBytes: number;
  readonly maxWaitMs: number;
  readonly maxHoldMs: number;
  readonly #now: () => number;
  readonly #holders = new Set<LaneTicket>();
  /** Waiting tickets, oldest first. */
  #queue: LaneTicket[] = [];
  #timer: NodeJS.Timeout | null = null;
  /** Bodies that waited `maxWaitMs` and then read without a lane, since the start (a sign of too few lanes or a stuck one). */
  waitsExpired = 0;
  /** Bodies that held a lane `maxHoldMs` while others waited and then read on without it, since the start. */
  holdsExpired = 0;

  /**
   * @param lanes bodies read at full speed at once; 0 = no lanes
   * @throws RangeError when `lanes` is not a non-negative integer
   */
  constructor(readonly lanes: number, options: BodyLaneOptions = {}) {
    if (!Number.isInteger(lanes) || lanes < 0) throw new RangeError(`lanes must be a non-negative integer, got ${lanes}`);
    this.bulkBytes = options.bulkBytes ?? 64 * 1024;
    this.quantumBytes = options.quantumBytes ?? 32 * 1024 * 1024;
    this.maxWaitMs = options.maxWaitMs ?? 500;
    this.maxHoldMs = options.maxHoldMs ?? 1000;
    this.#now = options.now ?? (() => performance.now());
  }

  /** Bodies holding a lane now. */
  get holding(): number {
    return this.#holders.size;
  }

  /** Bodies waiting for a lane now. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** A new body's ticket; `wake` is called when it may read again after waiting. */
  ticket(wake: () => void): LaneTicket {
    return { state: this.lanes === 0 ? 'free' : 'small', received: 0, grantedAtBytes: 0, since: 0, wake };
  }

  /**
   * Whether the body may read more now, having received `received` bytes: false while it waits
   * (its transport pauses; `wake` is called when that ends).
   */
  mayRead(t: LaneTicket, received: number): boolean {
    t.received = received;
    switch (t.state) {
      case 'free':
        return true;
      case 'waiting':
        return false;
      case 'small':
        if (received < this.bulkBytes) return true;
        if (this.#holders.size < this.lanes && this.#queue.length === 0) {
          this.#grant(t);
          return true;
        }
        this.#enqueue(t);
        return false;
      case 'holding':
        if (this.#queue.length > 0 && received - t.grantedAtBytes >= this.quantumBytes) {
          this.#holders.delete(t);
          this.#enqueue(t);
          this.#fill();
          return (t.state as LaneState) === 'holding';
        }
        return true;
    }
  }

  /** The body's bytes ended (or it failed): its lane or its place in the queue is given up. */
  leave(t: LaneTicket): void {
    const was = t.state;
    t.state = 'free';
    if (was === 'holding') {
      this.#holders.delete(t);
      this.#fill();
    } else if (was === 'waiting') {
      this.#queue = this.#queue.filter((q) => q !== t);
      this.#schedule();
    }
  }

  #grant(t: LaneTicket): void {
    t.state = 'holding';
    t.grantedAtBytes = t.received;
    t.since = this.#now();
    this.#holders.add(t);
  }

  #enqueue(t: LaneTicket): void {
    t.state = 'waiting';
    t.since = this.#now();
    this.#queue.push(t);
    this.#schedule();
  }

  /** Lets the oldest waiting bodies into free lanes. */
  #fill(): void {
    while (this.#holders.size < this.lanes && this.#queue.length > 0) {
      const t = this.#queue.shift()!;
      this.#grant(t);
      queueMicrotask(t.wake);
    }
    this.#schedule();
  }

  /**
   * Holds past `maxHoldMs` (while bodies wait) end in `free`, and their lanes go to the oldest
   * waiting bodies first; only the bodies still waiting past `maxWaitMs` then end in `free`. (A
   * late timer can find both due; a body that can have a lane is given one, not sent on without.)
   */
  #expire(): void {
    this.#timer = null;
    const now = this.#now();
    if (this.#queue.length > 0) {
      for (const h of [...this.#holders]) {
        if (now - h.since >= this.maxHoldMs) {
          this.#holders.delete(h);
          h.state = 'free';
          this.holdsExpired++;
        }
      }
      this.#fill();
    }
    while (this.#queue.length > 0 && now - this.#queue[0]!.since >= this.maxWaitMs) {
      const t = this.#queue.shift()!;
      t.state = 'free';
      this.waitsExpired++;
      queueMicrotask(t.wake);
    }
    this.#fill();
  }

  /** One timer while bodies wait, at the next wait or hold that can expire. */
  #schedule(): void {
    if (this.#queue.length === 0) {
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = null;
      return;
    }
    if (this.#timer) return;
    let due = this.#queue[0]!.since + this.maxWaitMs;
    for (const h of this.#holders) due = Math.min(due, h.since + this.maxHoldMs);
    // Not unref'd: it runs only while bodies wait, and each wait ends by it at the latest.
    this.#timer = setTimeout(() => this.#expire(), Math.max(1, due - this.#now()));
  }
}
