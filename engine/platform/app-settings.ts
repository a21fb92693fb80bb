/**
 * App settings beyond creation: config vars (reference "config-vars"; what the *-protected
 * scopes protect, docs/rules.md Authentication 6), labs features (docs/rules.md What the service does 6:
 * runtime-new-layer-extract, shared runtime only), and owner updates (docs/rules.md What the service does 5: switching the
 * stack back to a curated stack is the owner's action).
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { fail } from '../errors.js';
import { CONTAINER_STACK } from './apps.js';
import { NEW_LAYER_EXTRACT } from './runtime-rules.js';
import type { AppRecord, ReleaseRecord } from './records.js';
import type { Releases } from './releases.js';
import { apps, configVars } from './keyspaces.js';
import { recordApp } from './events.js';
import { newId } from '../identity/tokens.js';

/** A labs feature an app can switch on. */
export interface Feature {
  name: string;
  description: string;
  /** Only on the shared runtime (not in isolated spaces). */
  sharedRuntimeOnly: boolean;
}

export const FEATURES: readonly Feature[] = [
  {
    name: NEW_LAYER_EXTRACT,
    description: 'Extract container image layers with a method that honours whiteout files (files deleted in a later layer). Shared runtime only.',
    sharedRuntimeOnly: true,
  },
];

/** Curated stacks an app can switch back to from the container stack. */
export const CURATED_STACKS: readonly string[] = ['heroku-22', 'heroku-24'];

const CONFIG_VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Largest total size of an app's config vars (bytes). */
export const MAX_CONFIG_BYTES = 32 * 1024;

export class AppSettings {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock, readonly releases: Releases) {}

  /** The app's config vars (name → value); empty when none are set. */
  async configVars(app: AppRecord): Promise<Record<string, string>> {
    return await this.metadata.get(configVars, app.id) ?? {};
  }

  /**
   * Sets (string) or unsets (null) config vars and, as on the platform, makes release N+1 with
   * the same images, described "Set FOO, BAR config vars" / "Remove FOO config vars" (both:
   * "Set FOO and remove BAR config vars") — one transaction (Releases.configRelease), applied to
   * the config vars current in that transaction. A change that changes nothing makes no release.
   * @param userId the account making the change
   * @throws INVALID_PARAMS for a bad name, a non-string value, or more than 32 KiB in all; nothing changes then.
   */
  async updateConfigVars(app: AppRecord, userId: string, changes: Record<string, unknown>): Promise<{ config: Record<string, string>; release: ReleaseRecord | null }> {
    for (const [name, value] of Object.entries(changes)) {
      if (!CONFIG_VAR_NAME.test(name)) throw fail('INVALID_PARAMS', `"${name.slice(0, 40)}" is not a valid config var name (letters, digits and underscores, not starting with a digit)`);
      if (value !== null && typeof value !== 'string') throw fail('INVALID_PARAMS', `config var ${name} must be a string, or null to unset it`);
    }
    return this.releases.configRelease(app, userId, (before) => {
      const next = { ...before };
      const set: string[] = [];
      const removed: string[] = [];
      for (const [name, value] of Object.entries(changes) as Array<[string, string | null]>) {
        if (value === null) {
          if (name in next) removed.push(name);
          delete next[name];
        } else {
          if (before[name] !== value) set.push(name);
          next[name] = value;
        }
      }
      if (set.length === 0 && removed.length === 0) return null;
      if (Buffer.byteLength(JSON.stringify(next)) > MAX_CONFIG_BYTES) throw fail('INVALID_PARAMS', `config vars may hold at most ${MAX_CONFIG_BYTES} bytes in all`);
      const parts = [set.length > 0 ? `Set ${set.join(', ')}` : '', removed.length > 0 ? `${set.length > 0 ? 'remove' : 'Remove'} ${removed.join(', ')}` : ''];
      return { config: next, description: `${parts.filter((p) => p !== '').join(' and ')} config vars` };
    });
  }

  /**
   * A labs feature of the app.
   * @throws NOT_FOUND for an unknown feature.
   */
  feature(app: AppRecord, name: string): { feature: Feature; enabled: boolean } {
    const feature = FEATURES.find((f) => f.name === name);
    if (!feature) throw fail('NOT_FOUND', `Couldn't find that feature.`, { resource: 'app-feature' });
    return { feature, enabled: app.features?.[name] === true };
  }

  /**
   * Switches a labs feature.
   * @throws NOT_FOUND for an unknown feature; INVALID_PARAMS for a shared-runtime-only feature
   *         on an app in an isolated space.
   */
  async setFeature(app: AppRecord, name: string, enabled: boolean, actorId: string | null = null): Promise<AppRecord> {
    const { feature } = this.feature(app, name);
    if (enabled && feature.sharedRuntimeOnly && app.space !== null) {
      throw fail('INVALID_PARAMS', `${name} is available on the shared runtime only; app ${app.name} runs in the isolated space ${app.space}, where there is no workaround`);
    }
    return this.#update(app, (a) => ({ ...a, features: { ...(a.features ?? {}), [name]: enabled } }), actorId);
  }

  /**
   * Owner updates: `buildStack` (switch back to a curated stack) and `maintenance` (an `api:app` update event by `actorId`).
   * @throws DENIED when the caller is not the owner; INVALID_PARAMS for an unknown stack.
   */
  async update(app: AppRecord, callerIsOwner: boolean, patch: { buildStack?: string; maintenance?: boolean }, actorId: string | null = null): Promise<AppRecord> {
    if (patch.buildStack !== undefined) {
      if (!callerIsOwner) throw fail('DENIED', `Only the owner of ${app.name} can change its stack.`);
      if (patch.buildStack !== CONTAINER_STACK && !CURATED_STACKS.includes(patch.buildStack)) {
        throw fail('INVALID_PARAMS', `build_stack must be one of ${[...CURATED_STACKS, CONTAINER_STACK].join(', ')}`);
      }
    }
    return this.#update(app, (a) => ({
      ...a,
      ...(patch.buildStack !== undefined ? { buildStack: patch.buildStack, stack: patch.buildStack } : {}),
      ...(patch.maintenance !== undefined ? { maintenance: patch.maintenance } : {}),
    }), actorId);
  }

  async #update(app: AppRecord, change: (a: AppRecord) => AppRecord, actorId: string | null): Promise<AppRecord> {
    const now = this.clock.now();
    const base = newId();
    return this.metadata.transact(async (tx) => {
      const current = await tx.get(apps, app.id);
      if (!current) throw fail('NOT_FOUND', `Couldn't find that app.`, { resource: 'app' });
      const updated = { ...change(current), updatedAt: now };
      tx.put(apps, app.id, updated);
      recordApp(tx, base, 'update', updated, current, actorId, now);
      return updated;
    });
  }
}
