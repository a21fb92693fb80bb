/**
 * Limits of the layer scan at manifest PUT (docs/faults.md "Image inspection"). A layer is
 * scanned for whiteout files only (docs/rules.md What the service does 8), which is advice for a
 * release, not a condition of storing the image: the distribution spec stores any layer blob a
 * client pushed. So a layer that hits a limit does not fail the push; the scan stops there, the
 * layer is recorded as not inspected (LayerScan `unscanned`, cached on its blob record: later
 * pushes naming it do not scan it again) and its image carries a warning saying so.
 */
import type { Digest } from '../digest.js';

/** Hard limits of one layer's scan. Configured by SLIPWAY_INSPECT_LAYER_* (server/config.ts). */
export interface InspectLimits {
  /** Most bytes read after decompression (the tar stream), per layer. */
  maxInflatedBytes: number;
  /** Most tar entries (headers) read, per layer. */
  maxEntries: number;
  /** Longest one layer's scan may run, seconds (wall time in the worker thread). */
  maxSeconds: number;
}

/** Defaults: far above real layers (the largest common ones inflate to a few GiB with a few hundred thousand files). */
export const DEFAULT_INSPECT_LIMITS: InspectLimits = {
  maxInflatedBytes: 8 * 1024 ** 3,
  maxEntries: 500_000,
  maxSeconds: 20,
};

/** Why a scan stopped at a limit, in words for a warning ("it inflates past 8 GiB"). */
export function limitReason(which: 'bytes' | 'entries' | 'time', limits: InspectLimits): string {
  switch (which) {
    case 'bytes': return `it inflates past ${formatBytes(limits.maxInflatedBytes)}`;
    case 'entries': return `it holds more than ${limits.maxEntries} entries`;
    case 'time': return `scanning it took longer than ${limits.maxSeconds} s`;
  }
}

/** The warning an image carries for a layer that was not fully inspected. */
export function unscannedWarning(digest: Digest, reason: string): string {
  return `layer ${digest} was not fully inspected (${reason}); whiteout files in it are not detected`;
}

function formatBytes(n: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) {
    if (n >= size && n % size === 0) return `${n / size} ${unit}`;
  }
  return `${n} bytes`;
}
