/**
 * Fair dispatch of tenants' tasks onto a fixed number of slots (the worker pool's threads):
 * each tenant (an account) has its own FIFO queue; when a slot frees, the next tenant in
 * round-robin order that has work and holds fewer than `share` slots gets it. So one tenant
 * never holds more than `share` slots, and a tenant with work waits for at most one task of each
 * tenant ahead of it in the rotation, spread over the slots (docs/faults.md "Image inspection"
 * states the bound this gives with the per-layer time limit). Work-conserving within the shares:
 * a slot is never left idle while a tenant under its share has queued work.
 */

interface Job {
  start(): void;
}

interface Tenant {
  queue: Job[];
  running: number;
}

export class FairQueue {
  readonly #tenants = new Map<string, Tenant>();
  /** Tenants with queued work, in round-robin order (the next to serve first). */
  readonly #ring: string[] = [];
  #running = 0;
  #waiting = 0;

  /**
   * @param slots tasks running at once, all tenants together (≥ 1)
   * @param share tasks one tenant may run at once (1 ≤ share ≤ slots)
   */
  constructor(readonly slots: number, readonly share: number) {
    if (!(slots >= 1 && share >= 1 && share <= slots)) throw new Error(`FairQueue: need 1 <= share (${share}) <= slots (${slots})`);
  }

  /** Tasks queued and not yet started, all tenants together. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Tasks running now. */
  get running(): number {
    return this.#running;
  }

  /**
   * Runs `task` for `tenant` once the fair order gives it a slot; resolves or rejects with it.
   * The slot is held until the task's promise settles.
   */
  run<T>(tenant: string, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let t = this.#tenants.get(tenant);
      if (!t) this.#tenants.set(tenant, (t = { queue: [], running: 0 }));
      const owner = t;
      owner.queue.push({
        start: () => {
          owner.running++;
          this.#running++;
          let p: Promise<T>;
          try {
            p = task();
          } catch (e) {
            p = Promise.reject(e);
          }
          p.then(resolve, reject).finally(() => {
            owner.running--;
            this.#running--;
            if (owner.running === 0 && owner.queue.length === 0) this.#tenants.delete(tenant);
            this.#dispatch();
          });
        },
      });
      this.#waiting++;
      if (owner.queue.length === 1) this.#ring.push(tenant);
      this.#dispatch();
    });
  }

  /** Starts queued tasks while slots are free, round-robin over tenants under their share. */
  #dispatch(): void {
    while (this.#running < this.slots) {
      const i = this.#ring.findIndex((name) => this.#tenants.get(name)!.running < this.share);
      if (i < 0) return;
      const name = this.#ring.splice(i, 1)[0]!;
      const t = this.#tenants.get(name)!;
      const job = t.queue.shift()!;
      this.#waiting--;
      if (t.queue.length > 0) this.#ring.push(name);
      job.start();
    }
  }
}
