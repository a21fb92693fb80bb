/**
 * Dynos as the platform API lists them (reference "dyno"), derived from the formation: this
 * service records formation and releases but runs no processes, so a process type scaled to
 * `quantity` n shows dynos `<type>.1` … `<type>.n` in state `NOT_RUNNING`, each tied to the
 * app's newest release. Restarting or stopping a dyno (or a process type, or all) touches the
 * formation entries concerned (their `updatedAt`, which a dyno shows as its own), in one
 * transaction; the quantity is unchanged, so the formation "starts" the same dynos again, as
 * on the platform, where a stopped dyno is replaced while its process type stays scaled.
 */
import { fail } from '../errors.js';
import { key, type MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import type { AppRecord, FormationRecord } from './records.js';
import { formations } from './keyspaces.js';
import { formationOf } from './formation.js';

/** The state every listed dyno reports: nothing runs here. */
export const NOT_RUNNING = 'not running';

/** One dyno derived from a formation entry. */
export interface Dyno {
  /** `<type>.<n>`, n from 1 to the entry's quantity. */
  name: string;
  type: string;
  command: string;
  size: string;
  /** ms since epoch: the formation entry's last change (scale, release, restart). */
  createdAt: number;
  updatedAt: number;
}

const DYNO_NAME = /^([a-z0-9][a-z0-9_-]{0,127})\.([1-9]\d{0,3})$/;

export class Dynos {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /** The dynos of an app, by process type then number (one range read). */
  async list(appId: string): Promise<Dyno[]> {
    return (await formationOf(this.metadata, appId)).flatMap(dynosOf);
  }

  /**
   * One dyno by name (`web.1`).
   * @throws NOT_FOUND (resource `dyno`) for a malformed name, an unknown type or a number past the quantity.
   */
  async get(appId: string, name: string): Promise<Dyno> {
    const m = DYNO_NAME.exec(name);
    const f = m ? await this.metadata.get(formations, key(appId, m[1]!)) : undefined;
    if (!m || !f || Number(m[2]) > f.quantity) throw fail('NOT_FOUND', `Couldn't find that dyno.`, { resource: 'dyno' });
    return dynosOf(f)[Number(m[2]) - 1]!;
  }

  /**
   * Restarts (or stops, which the formation turns into a restart) the dynos of `types`, or of
   * every process type when `types` is null, in one transaction.
   * @throws NOT_FOUND (resource `formation`) for an unknown process type; nothing changes then.
   */
  async restart(app: AppRecord, types: string[] | null): Promise<void> {
    const now = this.clock.now();
    await this.metadata.transact(async (tx) => {
      const entries: FormationRecord[] = [];
      if (types === null) entries.push(...await formationOf(tx, app.id));
      else {
        for (const t of types) {
          const f = await tx.get(formations, key(app.id, t));
          if (!f) throw fail('NOT_FOUND', `Couldn't find that formation.`, { resource: 'formation' });
          entries.push(f);
        }
      }
      for (const f of entries) tx.put(formations, key(app.id, f.type), { ...f, updatedAt: now });
    });
  }
}

function dynosOf(f: FormationRecord): Dyno[] {
  return Array.from({ length: f.quantity }, (_, i) => ({
    name: `${f.type}.${i + 1}`, type: f.type, command: f.command, size: f.size, createdAt: f.updatedAt, updatedAt: f.updatedAt,
  }));
}
