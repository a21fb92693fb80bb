/**
 * How the server's JavaScript runtime is sized (docs/performance.md "What the process's memory is
 * made of"): the V8 young generation of each isolate, the main thread's and every worker
 * thread's.
 *
 * Since Node.js 22 (V8 12), a young generation's semi-spaces grow with the heap limit: measured
 * here on Node 24.21 with a plain allocation loop, the main thread's new space reached 64–128 MiB
 * and a worker thread's 64 MiB, against 32 MiB on Node 20. Those pages stay committed once the
 * space has grown, so five isolates (main, inspection threads, hash thread) kept up to ~300 MiB
 * of young generation that held a few MiB of live objects. A young generation of 16 MiB
 * semi-spaces (Node 20's size) scavenges more often, but a scavenge costs in proportion to what
 * survives, not to the space's size.
 *
 * The main thread's size can only be set by a flag given to `node` before it starts:
 * `SERVER_NODE_FLAGS`, passed by every launcher of the server (bin/shebang of server/cli.ts, the
 * container's entry point, `npm start`, the benchmarks and test servers; test/ops/runtime-flags
 * checks they agree). Worker threads are sized by `WORKER_RESOURCE_LIMITS`,
 * `HASH_THREAD_RESOURCE_LIMITS` and `SENDER_THREAD_RESOURCE_LIMITS` (node:worker_threads
 * `resourceLimits`).
 */

/** Flags for `node` when it runs `slipway serve`: semi-spaces of at most 16 MiB (MiB, V8's unit). */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16'];

/**
 * Limits of an image inspection thread (workers/pool.ts): a young generation of at most 16 MiB.
 * The old generation is left to V8's default: a layer scan's live memory follows the layer's
 * entries (up to the inspection limits), and a thread over its old-generation limit would end
 * the scan with an error instead of a slower collection.
 */
export const WORKER_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 16 } as const;

/**
 * Limits of the hash thread (workers/hash-thread.ts): a young generation of at most 4 MiB. It
 * hashes views of shared upload buffers in place and allocates little more than its replies.
 */
export const HASH_THREAD_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 4 } as const;

/**
 * Limits of the webhook sender thread (workers/sender-thread.ts): a young generation of at most
 * 8 MiB. It holds the HTTP exchanges of the attempts in flight (at most 64, each a few KiB).
 */
export const SENDER_THREAD_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 8 } as const;
