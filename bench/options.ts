/**
 * Benchmark settings, read once from the environment:
 * BENCH_QUICK=1 shrinks sizes and durations for a smoke run; BENCH_ONLY=slipway|reference
 * runs one side only.
 */

/** Sizes, counts and time bounds of every workload. */
export interface BenchOptions {
  quick: boolean;
  /** Which servers to run. */
  servers: Array<'slipway' | 'reference'>;
  /** Size of the repeated random pattern and of each chunked PATCH (16 MiB). */
  patternBytes: number;
  /** Size of the big blob pushed and pulled (1 GiB; 128 MiB quick). Multiple of patternBytes. */
  bigBytes: number;
  /** Concurrent push: number of distinct blobs, bytes each, uploads in flight. */
  concurrentBlobs: number;
  concurrentBlobBytes: number;
  concurrentInFlight: number;
  /** Concurrent pull: number of distinct blobs (all pulled at once) and bytes each. */
  pullBlobs: number;
  pullBlobBytes: number;
  /** Connections of the load workloads (manifest GET, blob HEAD). */
  loadConnections: number;
  /** Measured duration and warm-up of each load workload (ms). */
  loadMs: number;
  warmupMs: number;
  /** Upper bound on recorded requests of one load workload. */
  loadMaxRequests: number;
  /** Sequential workloads (manifest PUT, warm push): count and time bound (ms). */
  sequentialCount: number;
  sequentialMs: number;
  /** Time bound of one bulk transfer (ms). */
  transferTimeoutMs: number;
}

const MiB = 1024 * 1024;

/** Builds the options from `env` (BENCH_QUICK, BENCH_ONLY). */
export function loadOptions(env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const quick = env.BENCH_QUICK === '1' || env.BENCH_QUICK === 'true';
  const only = env.BENCH_ONLY?.trim();
  if (only && only !== 'slipway' && only !== 'reference') throw new Error(`BENCH_ONLY must be "slipway" or "reference", not "${only}"`);
  return {
    quick,
    servers: only ? [only as 'slipway' | 'reference'] : ['slipway', 'reference'],
    patternBytes: 16 * MiB,
    bigBytes: quick ? 128 * MiB : 1024 * MiB,
    concurrentBlobs: quick ? 16 : 64,
    concurrentBlobBytes: 16 * MiB,
    concurrentInFlight: 16,
    pullBlobs: 16,
    pullBlobBytes: quick ? 16 * MiB : 64 * MiB,
    loadConnections: 64,
    loadMs: quick ? 3_000 : 10_000,
    warmupMs: quick ? 500 : 1_000,
    loadMaxRequests: 5_000_000,
    sequentialCount: quick ? 100 : 500,
    sequentialMs: quick ? 5_000 : 20_000,
    transferTimeoutMs: 180_000,
  };
}
