/**
 * Coalesces concurrent reads of one shape into one statement, so that many concurrent pulls of
 * distinct images cost fewer round trips, and less CPU on the node and the database, per read
 * (bench/pg-misses.ts measures it). A read submitted while fewer than `maxInFlight` statements
 * of its batcher are running is sent at once, alone (no added wait when the node is quiet); a
 * read submitted while `maxInFlight` are running waits, and when one of them answers, every
 * waiting read (up to `maxBatch`) goes in the next statement. So under load each round trip
 * carries the reads that arrived during the previous one, as the read barrier does
 * (postgres-invalidation.ts `sync`), and a quiet node sends each read the moment it comes.
 *
 * Reads are sent in the order they arrived. Bound: a read with `p` reads waiting before it is
 * sent once at most ceil((p + 1) / maxBatch) statements of its batcher have ended: one, unless
 * more than `maxBatch` (default 256) reads wait. So a read ends within two statement timeouts
 * (the store's `statementTimeoutMs` plus the driver's grace, postgres-metadata.ts). A failed
 * statement fails every read it carried, with its error; the reads waiting go in the next one.
 */

/** Settings of a `StatementBatcher`. */
export interface StatementBatchOptions {
  /** Statements of this batcher running at once (default 1). */
  maxInFlight?: number;
  /** Most reads one statement carries (default 256). */
  maxBatch?: number;
}

interface Waiting<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (e: unknown) => void;
}

/**
 * One kind of read, coalesced (see the top of this file). `run` gets the items of one statement
 * and must return one answer per item, in their order; whatever it throws fails those items.
 */
export class StatementBatcher<I, O> {
  readonly #run: (items: I[]) => Promise<O[]>;
  readonly #maxInFlight: number;
  readonly #maxBatch: number;
  #inFlight = 0;
  #waiting: Array<Waiting<I, O>> = [];
  #reads = 0;
  #statements = 0;

  constructor(run: (items: I[]) => Promise<O[]>, opts: StatementBatchOptions = {}) {
    this.#run = run;
    this.#maxInFlight = Math.max(1, opts.maxInFlight ?? 1);
    this.#maxBatch = Math.max(1, opts.maxBatch ?? 256);
  }

  /** Statements running now (tests and diagnostics). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Since the start: reads submitted, and statements sent to carry them (metrics). */
  get stats(): { reads: number; statements: number } {
    return { reads: this.#reads, statements: this.#statements };
  }

  /** Reads waiting for a statement slot (tests and diagnostics). */
  get waiting(): number {
    return this.#waiting.length;
  }

  /** The answer to `item`, from the statement that carries it. @throws what that statement threw. */
  submit(item: I): Promise<O> {
    this.#reads++;
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#pump();
    });
  }

  /** Sends waiting reads while a statement slot is free. */
  #pump(): void {
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#maxBatch);
      this.#inFlight++;
      this.#statements++;
      void this.#send(batch);
    }
  }

  async #send(batch: Array<Waiting<I, O>>): Promise<void> {
    try {
      const outs = await this.#run(batch.map((w) => w.item));
      if (outs.length !== batch.length) throw new Error(`statement answered ${outs.length} of ${batch.length} reads`);
      for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outs[i]!);
    } catch (e) {
      for (const w of batch) w.reject(e);
    } finally {
      this.#inFlight--;
      this.#pump();
    }
  }
}
