/**
 * Requests in flight across every public host, for graceful drain: after SIGTERM the listeners
 * stop accepting, and the process waits until no request has been running for a quiet period
 * (a client's push is several requests in a row on its open connections: blob upload, commit,
 * then the manifest) or until the drain deadline.
 */

/** How often `settle` looks at the count (ms). */
const POLL_MS = 50;

export class RequestTracker {
  #inFlight = 0;
  #lastEnd = 0;
  /** True once a drain started: readiness answers 503. */
  draining = false;
  /**
   * True once the drain deadline passed and connections are being cut: an upload body that
   * breaks off now keeps its session at the last acknowledged offset instead of dropping it.
   */
  cutting = false;

  /** Requests being handled now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  begin(): void {
    this.#inFlight++;
  }

  end(): void {
    this.#inFlight--;
    this.#lastEnd = performance.now();
  }

  /**
   * Resolves true once nothing has been in flight for `quietMs` ms, or at `deadlineMs` (a
   * `performance.now()` time) when nothing is in flight then; false when requests are still
   * running at the deadline.
   */
  settle(quietMs: number, deadlineMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        const now = performance.now();
        if (this.#inFlight === 0 && now - this.#lastEnd >= quietMs) return resolve(true);
        if (now >= deadlineMs) return resolve(this.#inFlight === 0);
        setTimeout(check, Math.min(POLL_MS, Math.max(1, deadlineMs - now)));
      };
      check();
    });
  }
}
