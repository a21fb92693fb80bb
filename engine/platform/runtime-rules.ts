/**
 * Container runtime rules (docs/rules.md What the service does 6), applied when an image is released:
 * the process command from ENTRYPOINT/CMD, and the warnings a release carries for the app's
 * runtime (shared runtime or an isolated space, labs features). Pure functions.
 */
import type { ImageInfo } from '../registry/records.js';
import { MAX_LAYERS_SHARED_RUNTIME } from '../registry/image-info.js';
import { unscannedWarning } from '../registry/inspect-limits.js';
import type { AppRecord } from './records.js';

/**
 * The generation rule, in one place: only the older app generation (cedar) may use the container
 * registry and container releases (docs/rules.md What the service does 5, Versioning 4). The
 * registry's push check (server/registry/access.ts) and releases (releases.ts) both ask this.
 */
export function usesContainerRegistry(app: Pick<AppRecord, 'generation'>): boolean {
  return app.generation === 'cedar';
}

/** Labs feature that fixes whiteout handling on the shared runtime (docs/rules.md What the service does 6). */
export const NEW_LAYER_EXTRACT = 'runtime-new-layer-extract';

/** POSIX shell single-quoting of one word (only when needed). */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command a process runs (docs/rules.md What the service does 6): ENTRYPOINT runs as given, followed by CMD as its
 * arguments; without ENTRYPOINT, `/bin/sh -c` is used, so CMD always runs through a shell and
 * config vars are available. Returns null when the image names neither (nothing to run).
 */
export function processCommand(image: Pick<ImageInfo, 'entrypoint' | 'cmd'>): string | null {
  const entrypoint = image.entrypoint?.length ? image.entrypoint : null;
  const cmd = image.cmd?.length ? image.cmd : null;
  if (entrypoint) return [...entrypoint, ...(cmd ?? [])].map(shellQuote).join(' ');
  if (cmd) return `/bin/sh -c ${shellQuote(cmd.join(' '))}`;
  return null;
}

/** Working directory at runtime: `/` unless WORKDIR changed it (docs/rules.md What the service does 6). */
export function workingDirectory(image: Pick<ImageInfo, 'workingDir'>): string {
  return image.workingDir || '/';
}

/**
 * Warnings for running `image` on `app`'s runtime (docs/rules.md What the service does 6 and Limits).
 * @param features the app's labs features (name → enabled)
 */
export function releaseWarnings(image: ImageInfo, app: AppRecord, features: Record<string, boolean>): string[] {
  const inSpace = app.space !== null;
  const out: string[] = [];
  for (const i of image.ignoredInstructions) {
    out.push(i === 'STOPSIGNAL'
      ? 'STOPSIGNAL is ignored: processes stop with SIGTERM followed by SIGKILL'
      : `${i} is not supported and is ignored`);
  }
  if (image.user && image.user !== 'root' && image.user !== '0') {
    out.push(`USER ${image.user} is not the user used at runtime; containers do not run as root`);
  }
  if (image.whiteouts > 0) {
    if (inSpace) out.push(`image has ${image.whiteouts} whiteout file(s): files deleted in a later layer are not honoured in isolated spaces, and there is no workaround`);
    else if (!features[NEW_LAYER_EXTRACT]) out.push(`image has ${image.whiteouts} whiteout file(s): files deleted in a later layer are not honoured; enable the ${NEW_LAYER_EXTRACT} labs feature to fix this`);
  }
  // Whiteouts in a layer not fully inspected are unknown; moot where whiteouts are honoured.
  if (inSpace || !features[NEW_LAYER_EXTRACT]) {
    for (const l of image.unscannedLayers ?? []) out.push(unscannedWarning(l.digest, l.reason));
  }
  if (!inSpace && image.layerCount > MAX_LAYERS_SHARED_RUNTIME) {
    out.push(`image has ${image.layerCount} layers; more than ${MAX_LAYERS_SHARED_RUNTIME} layers may fail to start on the shared runtime`);
  }
  if (inSpace) out.push('.profile and .profile.d scripts are not run at boot in isolated spaces');
  return out;
}
