/** What every workload receives. */
import type { RegistryClient } from '../client.js';
import type { BenchOptions } from '../options.js';
import type { PayloadFactory, Blob } from '../payload.js';
import type { Report } from '../report.js';
import type { Target } from '../servers/target.js';
import type { SmallImage } from '../image.js';

/** Shared state of one server's run. */
export interface WorkloadContext {
  target: Target;
  client: RegistryClient;
  opts: BenchOptions;
  payloads: PayloadFactory;
  report: Report;
  /** Big blobs, digests precomputed (same content for every server). */
  big: { single: Blob; chunked: Blob };
  /** Concurrent-push blobs, digests precomputed. */
  many: Blob[];
  /** A second set like `many` (other bytes), pushed by `push_concurrent_again` on the same server. */
  manyAgain: Blob[];
  /** Blobs pushed and then pulled all at once (pull_concurrent), digests precomputed. */
  pullBlobs: Blob[];
  /** The small image, pushed by the first workload that needs it. */
  image: SmallImage;
  /** CPU µs the first touch of a page of new memory costs here (limits.ts `measureFirstTouch`), when measured. */
  firstTouchMicros?: number;
}

/** Repository names (`bench/<process-type>`). */
export const REPO = { big: 'bench/web', many: 'bench/worker', image: 'bench/api', pulls: 'bench/release' } as const;

/** Progress line on stderr. */
export function progress(target: string, msg: string): void {
  process.stderr.write(`[bench ${target}] ${msg}\n`);
}
