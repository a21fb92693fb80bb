/**
 * Turns what a worker read from an image (config fields, layer scans) into the ImageInfo kept
 * with a manifest, applying the container runtime rules (docs/rules.md What the service does 6 and Limits).
 * Pure functions: also imported by workers.
 */
import { fail } from '../errors.js';
import type { ImageInfo } from './records.js';
import type { LayerScan } from '../blobs/records.js';
import { storableString } from '../storage/metadata.js';
import type { Digest } from '../digest.js';
import { unscannedWarning } from './inspect-limits.js';

/**
 * Fields a worker extracts from an image config blob (Docker image spec v1.2): the config part
 * of ImageInfo (`ignoredInstructions`: config keys present among Volumes, ExposedPorts,
 * StopSignal, Shell, Healthcheck).
 */
export type ConfigSummary = Omit<ImageInfo, 'layerCount' | 'whiteouts' | 'warnings' | 'unscannedLayers'>;

/** More layers than this may fail to start on the shared runtime (docs/rules.md Limits). */
export const MAX_LAYERS_SHARED_RUNTIME = 40;

/** Architectures the runtime runs (docs/rules.md Errors 2: x86_64 only). */
const SUPPORTED_ARCHITECTURES = new Set(['amd64', 'x86_64']);

/**
 * The architecture rule, in one place: true when the runtime runs images of `architecture`
 * (x86_64, which image configs name `amd64` or `x86_64`; docs/rules.md Errors 2). Checked at
 * manifest PUT (checkPlatform) and again when an image is released (release-images.ts).
 */
export function isSupportedArchitecture(architecture: string): boolean {
  return SUPPORTED_ARCHITECTURES.has(architecture);
}

/**
 * Refuses images the runtime cannot run.
 * @throws UNSUPPORTED_ARCHITECTURE naming the image's architecture or OS.
 */
export function checkPlatform(c: ConfigSummary): void {
  if (!isSupportedArchitecture(c.architecture)) {
    throw fail('UNSUPPORTED_ARCHITECTURE',
      `unsupported architecture "${c.architecture || 'unknown'}": only x86_64 (amd64) images are supported; build with --platform linux/amd64`,
      { architecture: c.architecture });
  }
  if (c.os !== 'linux') {
    throw fail('UNSUPPORTED_ARCHITECTURE', `unsupported operating system "${c.os || 'unknown'}": only linux/amd64 images are supported`, { os: c.os });
  }
}

/**
 * Refuses a config whose strings no record may hold (U+0000 or an unpaired surrogate, which a
 * config's JSON can spell as escapes; engine/storage/metadata.ts `storableString`): the
 * ImageInfo kept with the manifest copies them.
 * @throws MANIFEST_INVALID naming the field.
 */
export function checkConfigStrings(c: ConfigSummary): void {
  for (const [field, value] of Object.entries(c)) {
    const strings = typeof value === 'string' ? [value] : Array.isArray(value) ? value : [];
    if (strings.some((s) => !storableString(s))) {
      throw fail('MANIFEST_INVALID', `the image config's ${field} holds U+0000 or an unpaired surrogate, which cannot be stored`, { field });
    }
  }
}

/**
 * Builds the ImageInfo with its warnings. `scans` holds one entry per layer, in order, and
 * `layers` their digests (for the warning of a layer whose scan stopped at a limit:
 * engine/registry/inspect-limits.ts; one warning per distinct layer).
 */
export function imageInfo(c: ConfigSummary, scans: LayerScan[], layers: readonly Digest[] = []): ImageInfo {
  const warnings: string[] = [];
  const unscanned = new Map<Digest, string>();
  scans.forEach((s, i) => { if (s.unscanned !== undefined && layers[i] !== undefined) unscanned.set(layers[i]!, s.unscanned); });
  for (const [digest, reason] of unscanned) warnings.push(unscannedWarning(digest, reason));
  const whiteouts = scans.reduce((n, s) => n + s.whiteouts, 0);
  if (scans.length > MAX_LAYERS_SHARED_RUNTIME) {
    warnings.push(`image has ${scans.length} layers; more than ${MAX_LAYERS_SHARED_RUNTIME} layers may fail to start on the shared runtime`);
  }
  if (whiteouts > 0) {
    const examples = scans.flatMap((s) => s.examples).slice(0, 3).join(', ');
    warnings.push(`image has ${whiteouts} whiteout file(s) (${examples}); files deleted in a later layer are not honoured unless the runtime-new-layer-extract labs feature is on (shared runtime only)`);
  }
  for (const i of c.ignoredInstructions) {
    warnings.push(`${i} is not supported at runtime and is ignored`);
  }
  if (c.user && c.user !== 'root' && c.user !== '0') {
    warnings.push(`USER ${c.user} is not the user used at runtime`);
  }
  return { ...c, layerCount: scans.length, whiteouts, warnings, ...(unscanned.size > 0 ? { unscannedLayers: [...unscanned].map(([digest, reason]) => ({ digest, reason })) } : {}) };
}
