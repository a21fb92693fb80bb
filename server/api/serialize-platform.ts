/** Release and formation representations (docs/platform-conventions.md 3.3-3.4, plus our container fields). */
import { isoTime } from '../../engine/clock.js';
import type { AppRecord, FormationRecord, ReleaseRecord } from '../../engine/platform/records.js';
import type { Account } from '../../engine/identity/records.js';
import { stableId } from './serialize.js';

export function formationJson(f: FormationRecord, app: AppRecord) {
  return {
    id: f.id, type: f.type, command: f.command, quantity: f.quantity, size: f.size,
    dyno_size: { id: stableId('size:' + f.size), name: f.size },
    app: { id: app.id, name: app.name },
    docker_image: f.image,
    created_at: isoTime(f.createdAt), updated_at: isoTime(f.updatedAt),
  };
}

export function releaseJson(r: ReleaseRecord, app: AppRecord, user: Account | undefined) {
  const types = Object.keys(r.images);
  return {
    id: r.id, version: r.version, status: 'succeeded', current: r.version === (app.releaseVersion ?? 0),
    description: r.description,
    app: { id: app.id, name: app.name },
    user: { id: r.userId, email: user?.email ?? null },
    slug: null,
    artifacts: types.map((t) => ({ type: 'oci-image', id: r.images[t]!.configDigest })),
    addon_plan_names: [], output_stream_url: null, eligible_for_rollback: true,
    // Container releases (ours): the image, command and warnings per process type.
    processes: Object.fromEntries(types.map((t) => {
      const i = r.images[t]!;
      return [t, { docker_image: i.configDigest, repository: i.repository, manifest: i.manifestDigest, command: i.command, working_dir: i.workingDir, warnings: i.warnings }];
    })),
    release_phase: r.releasePhase,
    restarted: r.restarted,
    rollback_of: r.rollbackOf,
    created_at: isoTime(r.createdAt), updated_at: isoTime(r.createdAt),
  };
}
