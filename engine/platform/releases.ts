/**
 * Releases through the formation (docs/rules.md Endpoints 7, What the service does 6; docs/platform-conventions.md 3.3-3.4). A release is
 * immutable and numbered per app; creating one is ONE LMDB transaction that writes release N+1
 * with an image per process type, sets the formation entries of the released types (image and
 * command), switches the app to the container stack, and records that every process type
 * restarts. Process types not named keep their formation entries (old names persist until scaled
 * to 0 or deleted).
 */
import { fail } from '../errors.js';
import { key, KEY_SEPARATOR, prefixRange, type Store } from '../store.js';
import type { Clock } from '../clock.js';
import { isDigest } from '../digest.js';
import { newId } from '../identity/tokens.js';
import { CONTAINER_STACK } from './apps.js';
import { processCommand, releaseWarnings, workingDirectory } from './runtime-rules.js';
import type { AppRecord, FormationRecord, ReleaseImage, ReleaseRecord } from './records.js';
import type { ImageInfo } from '../registry/records.js';
import { publishEvent } from '../events.js';
import { checkIdentifier } from '../identifiers.js';

/** Process type names (docs/platform-conventions.md 3.3 `^[-\w]{1,128}$`, lowercase as repository names). */
const PROCESS_TYPE = /^[a-z0-9][a-z0-9_-]{0,127}$/;
/** The process type that marks a release phase (docs/rules.md Endpoints 8). */
export const RELEASE_PHASE_TYPE = 'release';
/** Size of new formation entries. */
export const DEFAULT_SIZE = 'standard-1X';

/** One `updates[]` item of a container release. */
export interface ImageUpdate {
  type: string;
  /** `algorithm:hex` image id: the config digest docker reports as the image id. */
  dockerImage: string;
}

/** One `updates[]` item of a formation batch update (scale). */
export interface ScaleUpdate {
  type: string;
  quantity?: number;
  size?: string;
}

/** Storage key of release `version` of `appId` (versions sort numerically). */
export function releaseKey(appId: string, version: number): string {
  return key(appId, String(version).padStart(10, '0'));
}

interface ResolvedImage {
  configDigest: string;
  manifestDigest: string;
  repository: string;
  info: ImageInfo;
}

export class Releases {
  constructor(readonly store: Store, readonly clock: Clock) {}

  /**
   * Finds the image `imageId` among those pushed to `app`'s repositories, preferring
   * `<app>/<type>`, then the newest push (docs/rules.md Endpoints 8.2: an image pushed without a process type in its
   * tag is releasable only by its id).
   * @throws INVALID_PARAMS when the id is malformed, unknown to the app, or not x86_64.
   */
  resolveImage(app: AppRecord, type: string, imageId: string): ResolvedImage {
    if (!isDigest(imageId)) throw fail('INVALID_PARAMS', `docker_image must be an image id of the form sha256:<64 hex characters>, got "${imageId.slice(0, 80)}"`);
    let best: { repository: string; manifestDigest: string; at: number } | undefined;
    for (const { key: k, value: at } of this.store.images.getRange(prefixRange(imageId))) {
      const [, repository, manifestDigest] = k.split(KEY_SEPARATOR) as [string, string, string];
      if (!repository.startsWith(app.name + '/')) continue;
      const preferred = repository === `${app.name}/${type}`;
      const bestPreferred = best?.repository === `${app.name}/${type}`;
      if (!best || (preferred && !bestPreferred) || (preferred === bestPreferred && at > best.at)) best = { repository, manifestDigest, at };
    }
    const manifest = best && this.store.manifests.get(best.manifestDigest);
    if (!best || !manifest) {
      throw fail('INVALID_PARAMS', `docker_image ${imageId} is not an image pushed to app ${app.name}; push it to <registry>/${app.name}/${type} first`);
    }
    if (manifest.image.architecture !== 'amd64' && manifest.image.architecture !== 'x86_64') {
      throw fail('INVALID_PARAMS', `docker_image ${imageId}: unsupported architecture "${manifest.image.architecture}"; only x86_64 images are supported`);
    }
    return { configDigest: imageId, manifestDigest: best.manifestDigest, repository: best.repository, info: manifest.image };
  }

  /**
   * Releases images to process types in one transaction.
   * @param userId the account releasing
   * @throws INVALID_PARAMS for a newer-generation app, malformed or duplicate updates, unknown or
   *         foreign image ids, non-x86_64 images, or an image with nothing to run.
   */
  async release(app: AppRecord, userId: string, updates: ImageUpdate[]): Promise<{ release: ReleaseRecord; formation: FormationRecord[] }> {
    requireRegistryGeneration(app);
    if (updates.length === 0) throw fail('INVALID_PARAMS', 'updates must name at least one process type');
    const seen = new Set<string>();
    const images: Record<string, ReleaseImage> = {};
    for (const u of updates) {
      if (!PROCESS_TYPE.test(u.type)) throw fail('INVALID_PARAMS', `"${u.type.slice(0, 40)}" is not a valid process type`);
      if (seen.has(u.type)) throw fail('INVALID_PARAMS', `process type ${u.type} is named twice`);
      seen.add(u.type);
      const r = this.resolveImage(app, u.type, u.dockerImage);
      const command = processCommand(r.info);
      if (command === null) throw fail('INVALID_PARAMS', `docker_image ${u.dockerImage} has neither ENTRYPOINT nor CMD: nothing to run for ${u.type}`);
      images[u.type] = {
        configDigest: r.configDigest, manifestDigest: r.manifestDigest, repository: r.repository, command,
        workingDir: workingDirectory(r.info), warnings: releaseWarnings(r.info, app, app.features ?? {}),
      };
    }
    return this.#commit(app, userId, images, `Deployed ${Object.keys(images).join(', ')}`, null);
  }

  /**
   * A new release running the images of release `target` (id or version) and, as on the platform,
   * its config vars (when it recorded them; releases of older builds did not).
   * @throws NOT_FOUND for an unknown target; INVALID_PARAMS for a newer-generation app.
   */
  async rollback(app: AppRecord, userId: string, target: string): Promise<{ release: ReleaseRecord; formation: FormationRecord[] }> {
    requireRegistryGeneration(app);
    const old = this.get(app.id, target);
    return this.#commit(app, userId, old.images, `Rollback to v${old.version}`, old.version, old.config);
  }

  /**
   * Changes an app's config vars and writes release N+1 running the same images as release N,
   * in one transaction (on the platform a config-var change is a release). `change` runs inside
   * the transaction on the current config vars, so concurrent changes never lose one another.
   * @param change returns the complete config vars after the change and the release's
   *        description, or null when nothing changes (no write, no release); may throw to abort
   * @returns the release, or null when nothing changed
   * @throws NOT_FOUND when the app is gone; whatever `change` throws (nothing is written then).
   */
  async configRelease(app: AppRecord, userId: string, change: (current: Record<string, string>) => { config: Record<string, string>; description: string } | null): Promise<{ release: ReleaseRecord | null; config: Record<string, string> }> {
    const now = this.clock.now();
    let release: ReleaseRecord | null = null;
    let config: Record<string, string> = {};
    await this.store.env.transaction(() => {
      const current = this.store.apps.get(app.id);
      if (!current) throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
      config = this.store.configVars.get(app.id) ?? {};
      const changed = change(config);
      if (changed === null) return;
      config = changed.config;
      const version = (current.releaseVersion ?? 0) + 1;
      const previous = version > 1 ? this.store.releases.get(releaseKey(app.id, version - 1)) : undefined;
      const images = previous?.images ?? {};
      this.store.configVars.put(app.id, config);
      release = {
        id: newId(), appId: app.id, version, description: changed.description, userId, createdAt: now, images,
        restarted: [...this.store.formations.getRange(prefixRange(app.id))].map((e) => e.value.type),
        releasePhase: RELEASE_PHASE_TYPE in images, rollbackOf: null, config,
      };
      this.store.releases.put(releaseKey(app.id, version), release);
      this.store.apps.put(app.id, { ...current, releaseVersion: version, updatedAt: now });
    });
    return { release, config };
  }

  /** @param config config vars to restore (a rollback to a release that recorded them), else the current ones are kept. */
  async #commit(app: AppRecord, userId: string, images: Record<string, ReleaseImage>, description: string, rollbackOf: number | null, config?: Record<string, string>) {
    const now = this.clock.now();
    let release!: ReleaseRecord;
    await this.store.env.transaction(() => {
      const current = this.store.apps.get(app.id);
      if (!current) throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
      // Inside the transaction, ordered against GC: every image released must still be stored.
      for (const [type, image] of Object.entries(images)) {
        if (this.store.repositoryManifests.get(key(image.repository, image.manifestDigest)) === undefined) {
          throw fail('INVALID_PARAMS', `the ${type} image ${image.configDigest} is no longer stored (deleted by image retention or a manifest delete); push it again`);
        }
      }
      const version = (current.releaseVersion ?? 0) + 1;
      const previous = version > 1 ? this.store.releases.get(releaseKey(app.id, version - 1)) : undefined;
      const all = { ...(previous?.images ?? {}), ...images };
      for (const [type, image] of Object.entries(images)) {
        const k = key(app.id, type);
        const entry = this.store.formations.get(k);
        this.store.formations.put(k, entry
          ? { ...entry, command: image.command, image: image.configDigest, updatedAt: now }
          : { id: newId(), appId: app.id, type, command: image.command, quantity: type === 'web' ? 1 : 0, size: DEFAULT_SIZE, image: image.configDigest, createdAt: now, updatedAt: now });
      }
      const restarted = [...this.store.formations.getRange(prefixRange(app.id))].map((e) => e.value.type);
      release = {
        id: newId(), appId: app.id, version, description, userId, createdAt: now, images: all, restarted,
        releasePhase: RELEASE_PHASE_TYPE in all, rollbackOf, config: config ?? this.store.configVars.get(app.id) ?? {},
      };
      if (config !== undefined) this.store.configVars.put(app.id, config);
      this.store.releases.put(releaseKey(app.id, version), release);
      this.store.apps.put(app.id, { ...current, stack: CONTAINER_STACK, buildStack: CONTAINER_STACK, releaseVersion: version, updatedAt: now });
    });
    const types = Object.keys(release.images);
    const event = {
      type: 'release.created' as const, appId: app.id, appName: app.name, app: app.name, version: release.version, userId,
      processTypes: types, types, rollbackOf, at: now,
    };
    publishEvent('release', () => event);
    return { release, formation: this.formation(app.id) };
  }

  /** Every release of an app, oldest first. */
  list(appId: string): ReleaseRecord[] {
    return [...this.store.releases.getRange(prefixRange(appId))].map((e) => e.value);
  }

  /**
   * A release by id (UUID) or version number.
   * @throws NOT_FOUND
   */
  get(appId: string, idOrVersion: string): ReleaseRecord {
    const found = /^\d{1,10}$/.test(idOrVersion)
      ? this.store.releases.get(releaseKey(appId, Number(idOrVersion)))
      : this.list(appId).find((r) => r.id === idOrVersion);
    if (!found) throw fail('NOT_FOUND', `Couldn't find that release.`, { resource: 'release' });
    return found;
  }

  /** Formation entries of an app in process-type order. */
  formation(appId: string): FormationRecord[] {
    return [...this.store.formations.getRange(prefixRange(appId))].map((e) => e.value);
  }

  /**
   * One formation entry by process type or id.
   * @throws NOT_FOUND
   */
  formationEntry(appId: string, typeOrId: string): FormationRecord {
    const entry = this.store.formations.get(key(appId, checkIdentifier('processType', typeOrId))) ?? this.formation(appId).find((f) => f.id === typeOrId);
    if (!entry) throw fail('NOT_FOUND', `Couldn't find that formation.`, { resource: 'formation' });
    return entry;
  }

  /**
   * Scales process types (quantity, size) in one transaction.
   * @throws INVALID_PARAMS for a bad quantity or size, NOT_FOUND for an unknown type.
   */
  async scale(app: AppRecord, updates: ScaleUpdate[]): Promise<FormationRecord[]> {
    for (const u of updates) {
      if (u.quantity !== undefined && (!Number.isSafeInteger(u.quantity) || u.quantity < 0 || u.quantity > 1000)) {
        throw fail('INVALID_PARAMS', `quantity for ${u.type} must be an integer from 0 to 1000`);
      }
      if (u.size !== undefined && !/^[A-Za-z0-9-]{1,40}$/.test(u.size)) throw fail('INVALID_PARAMS', `size for ${u.type} is not a dyno size`);
      this.formationEntry(app.id, u.type);
    }
    const now = this.clock.now();
    await this.store.env.transaction(() => {
      for (const u of updates) {
        const k = key(app.id, u.type);
        const entry = this.store.formations.get(k);
        if (!entry) throw fail('NOT_FOUND', `Couldn't find that formation.`, { resource: 'formation' });
        this.store.formations.put(k, { ...entry, quantity: u.quantity ?? entry.quantity, size: u.size ?? entry.size, updatedAt: now });
      }
    });
    return updates.map((u) => this.formationEntry(app.id, u.type));
  }

  /** Removes a process type's formation entry (old process names, docs/rules.md What the service does 6). */
  async removeFormation(app: AppRecord, type: string): Promise<FormationRecord> {
    const entry = this.formationEntry(app.id, type);
    await this.store.formations.remove(key(app.id, entry.type));
    return entry;
  }
}

/**
 * The registry and container releases apply to the older app generation only (docs/rules.md What the service does 5,
 * Versioning 4).
 * @throws INVALID_PARAMS for other generations.
 */
export function requireRegistryGeneration(app: AppRecord): void {
  if (app.generation !== 'cedar') {
    throw fail('INVALID_PARAMS', `App ${app.name} is a ${app.generation}-generation app; the container registry and container releases are available to cedar-generation apps only.`);
  }
}
