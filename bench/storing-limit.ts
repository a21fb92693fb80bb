/**
 * What the least storing server does with the concurrent push on this machine, in the same run
 * as the push workloads: `push_concurrent`'s blobs, with the same client code and the same number
 * in flight, against servers/storing-sink.ts (its own process), which hashes, writes, syncs,
 * renames and answers each blob and does nothing else: no metadata, no auth, no sessions. Three
 * ways of hashing: on one hash thread beside the reads (`thread`, as Slipway does), on the main
 * thread right after each read (`inline`: the bytes still in the CPU's caches, the main thread
 * doing all but the writes), and every other body each way (`mixed`); four bodies read at once
 * (Slipway's default body lanes), which measured faster than all sixteen for every mode. Each round gets the memory it writes handed over as it writes
 * (bench/memory-handover.ts, as the push workloads do). Fastest of three rounds per mode, with
 * the client's and the server's CPU per GiB.
 *
 * Why: the burst's CPU floor (bench/feasibility.ts) sums parts measured apart and assumes every
 * CPU busy on them; this is the same work done by a real server process beside the real client,
 * so the fastest of its modes is what a server storing the bytes as Slipway must (hashed, written
 * through the page cache, synced before the answer) was seen to reach here in the same run.
 */
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { removeDir, stopChild, trackDir } from './cleanup.js';
import { spawnTrivial } from './servers/spawn-trivial.js';
import { RegistryClient } from './client.js';
import type { Blob } from './payload.js';
import { pushRounds, type PushRound } from './push-limit.js';
import { fastestRound } from './stats.js';
import { handOverMemory } from './memory-handover.js';
import { DEFAULT_LANES } from '../engine/blobs/body-lanes.js';

const SERVER = fileURLToPath(new URL('./servers/storing-sink.js', import.meta.url));

/** How the storing sink hashes (servers/storing-sink.ts). */
export type StoringMode = 'inline' | 'thread' | 'mixed';

/** The modes the bench measures, each with Slipway's default number of body lanes. */
export const STORING_MODES: readonly StoringMode[] = ['thread', 'inline', 'mixed'];

/** The concurrent push against the storing sink in one mode: the fastest round, with every round's MB/s. */
export interface StoringLimit extends PushRound {
  bench: 'storing_limit_concurrent';
  mode: StoringMode;
  /** Bodies the sink read at once. */
  lanes: number;
  unit: 'MB/s';
  blobs: number;
  in_flight: number;
  rounds_mb_s: number[];
  note: string;
}

/**
 * Pushes `blobs`, `inFlight` at a time, to a fresh storing sink in `mode` reading `lanes` bodies at
 * once (0: all), `ROUNDS` times (bench/push-limit.ts `pushRounds`).
 * @throws Error when the sink does not start or a blob is not answered 201 (a digest mismatch
 *   or a failed write in the sink)
 */
export async function measureStoringLimit(blobs: Blob[], inFlight: number, timeoutMs: number, mode: StoringMode, lanes = DEFAULT_LANES): Promise<StoringLimit> {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-bench-storing-'));
  trackDir(dir);
  const scratch = mkdtempSync(join(tmpdir(), 'slipway-bench-storing-handover-'));
  trackDir(scratch);
  const bytes = blobs.reduce((n, b) => n + b.size, 0);
  const { child, port } = await spawnTrivial(SERVER, 'storing sink', [dir, mode, String(lanes)]);
  try {
    const sink = new RegistryClient(`http://127.0.0.1:${port}`, undefined, inFlight);
    try {
      // Each round on an empty directory, its memory handed over as the push workloads' is.
      const rounds = await pushRounds(sink, child.pid!, blobs, inFlight, timeoutMs, async () => {
        for (const f of readdirSync(dir)) rmSync(join(dir, f), { force: true });
        const handover = await handOverMemory(join(scratch, 'handover'), bytes);
        return () => handover.end();
      });
      return {
        bench: 'storing_limit_concurrent', mode, lanes, ...fastestRound(rounds), unit: 'MB/s', blobs: blobs.length, in_flight: inFlight,
        note: `the push_concurrent client against servers/storing-sink.ts (hash ${mode === 'inline' ? 'on the main thread after each read' : mode === 'thread' ? 'on one hash thread' : 'inline for every other body, on one hash thread for the rest'}, ${lanes} bodies at once; written, fdatasynced, renamed, directory fsynced; nothing else): the most a server storing the bytes this way reaches here`,
      };
    } finally {
      await sink.close();
    }
  } finally {
    await stopChild(child);
    removeDir(dir);
    removeDir(scratch);
  }
}
