/**
 * Releases through the formation (docs/rules.md Endpoints 7, What the service does 6; docs/platform-conventions.md 3.3-3.4). A release is
 * immutable and numbered per app; creating one is ONE metadata transaction that writes release
 * N+1 with an image per process type, sets the formation entries of the released types (image
 * and command), applies the scale changes sent with it (a formation PATCH that releases and
 * scales), switches the app to the container stack, and records that every process type
 * restarts. Process types not named keep their formation entries (old names persist until scaled
 * to 0 or deleted).
 */
import { fail } from '../errors.js';
import { key, type MetadataReader, type MetadataStore, type MetadataTransaction } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { newId } from '../identity/tokens.js';
import { imageStoredInTransaction, resolveImage } from '../registry/release-images.js';
import { CONTAINER_STACK } from './apps.js';
import { processCommand, releaseWarnings, usesContainerRegistry, workingDirectory } from './runtime-rules.js';
import type { AppRecord, FormationRecord, ReleaseImage, ReleaseRecord } from './records.js';
import { apps, configVars, formations, releases } from './keyspaces.js';
import { publishEvent } from '../events.js';
import { recordFormationChanges, recordRelease } from './events.js';
import { checkIdentifier } from '../identifiers.js';
import { checkScaleUpdates, formationOf, scaleInTransaction, type ScaleUpdate } from './formation.js';

export { type ScaleUpdate } from './formation.js';

/** Process type names (docs/platform-conventions.md 3.3 `^[-\w]{1,128}$`, lowercase as repository names). */
const PROCESS_TYPE = /^[a-z0-9][a-z0-9_-]{0,127}$/;
/** The process type that marks a release phase (docs/rules.md Endpoints 8). */
export const RELEASE_PHASE_TYPE = 'release';
/** Size of new formation entries. */
export const DEFAULT_SIZE = 'standard-1X';

/** One `updates[]` item of a container release. */
export interface ImageUpdate {
  type: string;
  /** `algorithm:hex` image id (the config digest docker reports as the image id), or the digest of a manifest pushed to the app. */
  dockerImage: string;
}

/** A release update that named a manifest digest, and the image id (config digest) released for it. */
export interface ResolvedDigest {
  type: string;
  manifestDigest: string;
  imageId: string;
}

/** What a release returns: the release, the app's formation after it, and the updated app. */
export interface ReleaseOutcome {
  release: ReleaseRecord;
  formation: FormationRecord[];
  app: AppRecord;
}

/** Storage key of release `version` of `appId` (versions sort numerically). */
export function releaseKey(appId: string, version: number): string {
  return key(appId, String(version).padStart(10, '0'));
}

/** The app record inside a transaction. @throws NOT_FOUND when the app is gone. */
async function currentApp(tx: MetadataReader, appId: string): Promise<AppRecord> {
  const current = await tx.get(apps, appId);
  if (!current) throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
  return current;
}

export class Releases {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /**
   * Releases images to process types and applies `scale` (quantity, size of any type, released
   * or not), in one transaction: a failing scale item leaves no release behind.
   * @param userId the account releasing
   * @param registryHost the registry's public `host[:port]`, named in the error for an image not pushed
   * @returns also `resolved`: the updates that named a manifest digest, with the image id released for it
   * @throws INVALID_PARAMS for a newer-generation app, malformed or duplicate updates, unknown or
   *         foreign image ids, non-x86_64 images, an image with nothing to run, or a bad scale
   *         item; NOT_FOUND (formation) when a scale item names a type that does not exist.
   */
  async release(app: AppRecord, userId: string, updates: ImageUpdate[], scale: ScaleUpdate[] = [], registryHost?: string): Promise<ReleaseOutcome & { resolved: ResolvedDigest[] }> {
    requireRegistryGeneration(app);
    if (updates.length === 0) throw fail('INVALID_PARAMS', 'updates must name at least one process type');
    checkScaleUpdates(scale);
    const seen = new Set<string>();
    const images: Record<string, ReleaseImage> = {};
    const resolved: ResolvedDigest[] = [];
    for (const u of updates) {
      if (!PROCESS_TYPE.test(u.type)) throw fail('INVALID_PARAMS', `"${u.type.slice(0, 40)}" is not a valid process type`);
      if (seen.has(u.type)) throw fail('INVALID_PARAMS', `process type ${u.type} is named twice`);
      seen.add(u.type);
      const r = await resolveImage(this.metadata, app.name, u.type, u.dockerImage, registryHost);
      if (r.byManifestDigest) resolved.push({ type: u.type, manifestDigest: u.dockerImage, imageId: r.configDigest });
      const command = processCommand(r.info);
      if (command === null) throw fail('INVALID_PARAMS', `docker_image ${u.dockerImage} has neither ENTRYPOINT nor CMD: nothing to run for ${u.type}`);
      images[u.type] = {
        configDigest: r.configDigest, manifestDigest: r.manifestDigest, repository: r.repository, command,
        workingDir: workingDirectory(r.info), warnings: releaseWarnings(r.info, app, app.features ?? {}),
      };
    }
    return { ...await this.#commit(app, userId, images, `Deployed ${Object.keys(images).join(', ')}`, null, undefined, scale), resolved };
  }

  /**
   * A new release running the images of release `target` (id or version) and, as on the platform,
   * its config vars (when it recorded them; releases of older builds did not).
   * @throws NOT_FOUND for an unknown target; INVALID_PARAMS for a newer-generation app.
   */
  async rollback(app: AppRecord, userId: string, target: string): Promise<ReleaseOutcome> {
    requireRegistryGeneration(app);
    const old = await this.get(app.id, target);
    return this.#commit(app, userId, old.images, `Rollback to v${old.version}`, old.version, old.config);
  }

  /**
   * Changes an app's config vars and writes release N+1 running the same images as release N,
   * in one transaction (on the platform a config-var change is a release). `change` runs inside
   * the transaction on the current config vars, so concurrent changes never lose one another;
   * it may run more than once (the contract retries), so it must be pure.
   * @param change returns the complete config vars after the change and the release's
   *        description, or null when nothing changes (no write, no release); may throw to abort
   * @returns the release, or null when nothing changed
   * @throws NOT_FOUND when the app is gone; whatever `change` throws (nothing is written then).
   */
  async configRelease(app: AppRecord, userId: string, change: (current: Record<string, string>) => { config: Record<string, string>; description: string } | null): Promise<{ release: ReleaseRecord | null; config: Record<string, string> }> {
    const now = this.clock.now();
    const id = newId();
    return this.metadata.transact(async (tx) => {
      const current = await currentApp(tx, app.id);
      const before = await tx.get(configVars, app.id) ?? {};
      const changed = change(before);
      if (changed === null) return { release: null, config: before };
      const config = changed.config;
      const version = (current.releaseVersion ?? 0) + 1;
      const previous = version > 1 ? await tx.get(releases, releaseKey(app.id, version - 1)) : undefined;
      const images = previous?.images ?? {};
      tx.put(configVars, app.id, config);
      const release: ReleaseRecord = {
        id, appId: app.id, version, description: changed.description, userId, createdAt: now, images,
        restarted: (await formationOf(tx, app.id)).map((f) => f.type),
        releasePhase: RELEASE_PHASE_TYPE in images, rollbackOf: null, config,
      };
      tx.put(releases, releaseKey(app.id, version), release);
      tx.put(apps, app.id, { ...current, releaseVersion: version, updatedAt: now });
      recordRelease(tx, id, current, release, userId);
      return { release, config };
    });
  }

  /**
   * @param config config vars to restore (a rollback to a release that recorded them), else the current ones are kept.
   * @param scale scale changes applied after the released types' entries are written.
   */
  async #commit(app: AppRecord, userId: string, images: Record<string, ReleaseImage>, description: string, rollbackOf: number | null, config?: Record<string, string>, scale: ScaleUpdate[] = []): Promise<ReleaseOutcome> {
    const now = this.clock.now();
    const id = newId();
    const entryIds = Object.fromEntries(Object.keys(images).map((type) => [type, newId()]));
    const outcome = await this.metadata.transact(async (tx) => {
      const current = await currentApp(tx, app.id);
      // Inside the transaction, ordered against GC: every image released must still be stored.
      for (const [type, image] of Object.entries(images)) {
        if (!await imageStoredInTransaction(tx, image.repository, image.manifestDigest)) {
          throw fail('INVALID_PARAMS', `the ${type} image ${image.configDigest} is no longer stored (deleted by image retention or a manifest delete); push it again`);
        }
      }
      const version = (current.releaseVersion ?? 0) + 1;
      const previous = version > 1 ? await tx.get(releases, releaseKey(app.id, version - 1)) : undefined;
      const all = { ...(previous?.images ?? {}), ...images };
      const formationBefore = await formationOf(tx, app.id);
      for (const [type, image] of Object.entries(images)) {
        const k = key(app.id, type);
        const entry = await tx.get(formations, k);
        tx.put(formations, k, entry
          ? { ...entry, command: image.command, image: image.configDigest, updatedAt: now }
          : { id: entryIds[type]!, appId: app.id, type, command: image.command, quantity: type === 'web' ? 1 : 0, size: DEFAULT_SIZE, image: image.configDigest, createdAt: now, updatedAt: now });
      }
      await scaleInTransaction(tx, app.id, scale, now);
      const formation = await formationOf(tx, app.id);
      const release: ReleaseRecord = {
        id, appId: app.id, version, description, userId, createdAt: now, images: all, restarted: formation.map((f) => f.type),
        releasePhase: RELEASE_PHASE_TYPE in all, rollbackOf, config: config ?? await tx.get(configVars, app.id) ?? {},
      };
      if (config !== undefined) tx.put(configVars, app.id, config);
      tx.put(releases, releaseKey(app.id, version), release);
      const updated: AppRecord = { ...current, stack: CONTAINER_STACK, buildStack: CONTAINER_STACK, releaseVersion: version, updatedAt: now };
      tx.put(apps, app.id, updated);
      recordRelease(tx, id, current, release, userId);
      recordFormationChanges(tx, id, current, formationBefore, formation, userId, now);
      return { release, formation, app: updated };
    });
    announceRelease(app, outcome.release, userId, rollbackOf, now);
    return outcome;
  }

  /** Every release of an app, oldest first. */
  async list(appId: string): Promise<ReleaseRecord[]> {
    return (await this.metadata.range(releases, { prefix: appId })).map((e) => e.value);
  }

  /**
   * A release by id (UUID) or version number.
   * @throws NOT_FOUND
   */
  async get(appId: string, idOrVersion: string): Promise<ReleaseRecord> {
    const found = /^\d{1,10}$/.test(idOrVersion)
      ? await this.metadata.get(releases, releaseKey(appId, Number(idOrVersion)))
      : (await this.list(appId)).find((r) => r.id === idOrVersion);
    if (!found) throw fail('NOT_FOUND', `Couldn't find that release.`, { resource: 'release' });
    return found;
  }

  /** Formation entries of an app in process-type order. */
  formation(appId: string): Promise<FormationRecord[]> {
    return formationOf(this.metadata, appId);
  }

  /**
   * One formation entry by process type or id.
   * @throws NOT_FOUND
   */
  async formationEntry(appId: string, typeOrId: string): Promise<FormationRecord> {
    const entry = await this.metadata.get(formations, key(appId, checkIdentifier('processType', typeOrId)))
      ?? (await this.formation(appId)).find((f) => f.id === typeOrId);
    if (!entry) throw fail('NOT_FOUND', `Couldn't find that formation.`, { resource: 'formation' });
    return entry;
  }

  /**
   * Scales process types (quantity, size) in one transaction.
   * @param actorId the account scaling (the `api:formation` events' actor)
   * @returns the entries scaled, in the order of `updates`.
   * @throws INVALID_PARAMS for a bad quantity or size, NOT_FOUND for an unknown type (nothing changes then).
   */
  async scale(app: AppRecord, updates: ScaleUpdate[], actorId: string | null = null): Promise<FormationRecord[]> {
    checkScaleUpdates(updates);
    for (const u of updates) checkIdentifier('processType', u.type);
    const now = this.clock.now();
    const base = newId();
    return this.metadata.transact(async (tx) => {
      const before = await formationOf(tx, app.id);
      const scaled = await scaleInTransaction(tx, app.id, updates, now);
      recordFormationChanges(tx, base, app, before, await formationOf(tx, app.id), actorId, now);
      return scaled;
    });
  }

  /**
   * Removes process type `type` from the app, the platform CLI's `container:rm`: a new release
   * without its image (described `Removed <type>`; none when the current release has no image for
   * it) and its formation entry deleted, in one transaction, so a later release does not bring it
   * back.
   * @returns the removed formation entry and the new release (null when none was needed)
   * @throws NOT_FOUND (formation) for a type the app does not have; INVALID_PARAMS for a newer-generation app.
   */
  async removeProcessType(app: AppRecord, userId: string, type: string): Promise<{ entry: FormationRecord; release: ReleaseRecord | null }> {
    requireRegistryGeneration(app);
    const entry = await this.formationEntry(app.id, type);
    const now = this.clock.now();
    const id = newId();
    const release = await this.metadata.transact(async (tx) => {
      const current = await currentApp(tx, app.id);
      const removed = await tx.get(formations, key(app.id, entry.type));
      tx.remove(formations, key(app.id, entry.type));
      recordFormationChanges(tx, id, current, removed ? [removed] : [], [], userId, now);
      const version = (current.releaseVersion ?? 0) + 1;
      const previous = version > 1 ? await tx.get(releases, releaseKey(app.id, version - 1)) : undefined;
      if (!previous || !(entry.type in previous.images)) return null;
      const images = Object.fromEntries(Object.entries(previous.images).filter(([t]) => t !== entry.type));
      const record: ReleaseRecord = {
        id, appId: app.id, version, description: `Removed ${entry.type}`, userId, createdAt: now, images,
        restarted: (await formationOf(tx, app.id)).map((f) => f.type).filter((t) => t !== entry.type),
        releasePhase: RELEASE_PHASE_TYPE in images, rollbackOf: null, config: await tx.get(configVars, app.id) ?? {},
      };
      tx.put(releases, releaseKey(app.id, version), record);
      tx.put(apps, app.id, { ...current, releaseVersion: version, updatedAt: now });
      recordRelease(tx, id, current, record, userId);
      return record;
    });
    if (release) announceRelease(app, release, userId, null, now);
    return { entry, release };
  }

  /**
   * Removes a process type's formation entry (old process names, docs/rules.md What the service does 6).
   * @throws NOT_FOUND for an unknown type.
   */
  async removeFormation(app: AppRecord, type: string, actorId: string | null = null): Promise<FormationRecord> {
    const entry = await this.formationEntry(app.id, type);
    const base = newId();
    const now = this.clock.now();
    await this.metadata.transact(async (tx: MetadataTransaction) => {
      const removed = await tx.get(formations, key(app.id, entry.type));
      tx.remove(formations, key(app.id, entry.type));
      recordFormationChanges(tx, base, app, removed ? [removed] : [], [], actorId, now);
    });
    return entry;
  }
}

/** Publishes the `release.created` event of a committed release. */
function announceRelease(app: AppRecord, release: ReleaseRecord, userId: string, rollbackOf: number | null, at: number): void {
  const types = Object.keys(release.images);
  publishEvent('release', () => ({
    type: 'release.created' as const, appId: app.id, appName: app.name, app: app.name, version: release.version, userId,
    processTypes: types, types, rollbackOf, at,
  }));
}

/**
 * The registry and container releases apply to the older app generation only
 * (usesContainerRegistry in runtime-rules.ts).
 * @throws INVALID_PARAMS for other generations.
 */
export function requireRegistryGeneration(app: AppRecord): void {
  if (!usesContainerRegistry(app)) {
    throw fail('INVALID_PARAMS', `App ${app.name} is a ${app.generation}-generation app; the container registry and container releases are available to cedar-generation apps only.`);
  }
}
