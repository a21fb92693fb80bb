/**
 * How the server's JavaScript runtime is sized (docs/performance.md "What the process's memory is
 * made of"): the V8 young generation of each isolate, the main thread's and every worker
 * thread's, and how far each isolate's old generation may grow past its live objects before
 * the next full collection.
 *
 * Since Node.js 22 (V8 12), a young generation's semi-spaces grow with the heap limit: measured
 * here on Node 24.21 with a plain allocation loop, the main thread's new space reached 64–128 MiB
 * and a worker thread's 64 MiB, against 32 MiB on Node 20. Those pages stay committed once the
 * space has grown, so five isolates (main, inspection threads, hash thread) kept up to ~300 MiB
 * of young generation that held a few MiB of live objects. A young generation of 16 MiB
 * semi-spaces (Node 20's size) scavenges more often, but a scavenge costs in proportion to what
 * survives, not to the space's size.
 *
 * The old generation: after each full collection V8 lets an isolate allocate up to its live size
 * times a growing factor before the next one. With a heap limit of 2 GiB or more (the default on
 * a machine with 8 GiB or more) the factor goes up to 4, so under steady load an isolate with
 * 30 MB live commits up to ~120 MB of old generation, most of it dead objects (measured
 * 2026-11-27: the main thread's old space 85 MB committed for 24 MB in use after 10,000 pushes).
 * `--heap-growing-percent=30` fixes the factor at 1.3 (what V8 itself uses under memory
 * pressure) for every isolate, with no hard limit: V8 still starts the next collection no sooner
 * than 8 MB (its minimum step) plus the young generation's size past the live size.
 *
 * The main thread's sizes can only be set by flags given to `node` before it starts:
 * `SERVER_NODE_FLAGS`, passed by every launcher of the server (bin/shebang of server/cli.ts, the
 * container's entry point, `npm start`, the benchmarks and test servers; test/ops/runtime-flags
 * checks they agree). V8 flags hold for every isolate of the process, the growing factor
 * included. Worker threads' young generations are sized by `WORKER_RESOURCE_LIMITS`,
 * `HASH_THREAD_RESOURCE_LIMITS` and `SENDER_THREAD_RESOURCE_LIMITS` (node:worker_threads
 * `resourceLimits`).
 */

/**
 * Flags for `node` when it runs `slipway serve`: semi-spaces of at most 16 MiB (MiB, V8's unit),
 * and an old-generation growing factor of 1.3 (V8's `--heap-growing-percent`, percent).
 */
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=16', '--heap-growing-percent=30'];

/** The interpreter line of the `slipway` command (server/cli.ts and its build): SERVER_NODE_FLAGS through `env -S`. */
export const SERVER_SHEBANG = `#!/usr/bin/env -S node ${SERVER_NODE_FLAGS.join(' ')}`;

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
