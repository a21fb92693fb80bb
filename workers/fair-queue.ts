/**
 * Fair dispatch of tenants' tasks onto a fixed number of slots (the worker pool's threads):
 * each tenant (an account) has its own FIFO queue; when a slot frees, it goes to the tenant
 * served least recently among those with queued work and fewer than `share` tasks running (a
 * tenant that was idle counts as never served). Among tenants that always have work this is
 * round-robin; a tenant arriving with nothing queued goes first. So one tenant never holds more
 * than `share` slots, and a tenant's next task waits for at most one task start per tenant served
 * less recently (docs/faults.md "Image inspection" states the bound this gives with the per-layer
 * time limit). Work-conserving within the shares: a slot is never left idle while a tenant under
 * its share has queued work.
 */

interface Job {
  start(): void;
}

interface Tenant {
  queue: Job[];
  running: number;
  /** Dispatch sequence number of its last start; -1 when never served since it was last idle. */
  servedAt: number;
}

export class FairQueue {
  readonly #tenants = new Map<string, Tenant>();
  /** Tenants with queued work, in the order they got it (ties of `servedAt` go to the earlier). */
  readonly #ring: string[] = [];
  /** Starts so far (orders tenants by when they were last served). */
  #dispatched = 0;
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
      if (!t) this.#tenants.set(tenant, (t = { queue: [], running: 0, servedAt: -1 }));
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

  /** Starts queued tasks while slots are free: the least recently served tenant under its share first. */
  #dispatch(): void {
    while (this.#running < this.slots) {
      let pick = -1;
      for (let i = 0; i < this.#ring.length; i++) {
        const t = this.#tenants.get(this.#ring[i]!)!;
        if (t.running < this.share && (pick < 0 || t.servedAt < this.#tenants.get(this.#ring[pick]!)!.servedAt)) pick = i;
      }
      if (pick < 0) return;
      const name = this.#ring.splice(pick, 1)[0]!;
      const t = this.#tenants.get(name)!;
      const job = t.queue.shift()!;
      this.#waiting--;
      t.servedAt = this.#dispatched++;
      if (t.queue.length > 0) this.#ring.push(name);
      job.start();
    }
  }
}
