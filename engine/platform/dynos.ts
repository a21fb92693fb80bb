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
import { key, prefixRange, type Store } from '../store.js';
import type { Clock } from '../clock.js';
import type { AppRecord, FormationRecord } from './records.js';

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
  constructor(readonly store: Store, readonly clock: Clock) {}

  /** The dynos of an app, by process type then number. */
  list(appId: string): Dyno[] {
    const out: Dyno[] = [];
    for (const { value: f } of this.store.formations.getRange(prefixRange(appId))) out.push(...dynosOf(f));
    return out;
  }

  /**
   * One dyno by name (`web.1`).
   * @throws NOT_FOUND (resource `dyno`) for a malformed name, an unknown type or a number past the quantity.
   */
  get(appId: string, name: string): Dyno {
    const m = DYNO_NAME.exec(name);
    const f = m ? this.store.formations.get(key(appId, m[1]!)) : undefined;
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
    await this.store.env.transaction(() => {
      const entries = types === null
        ? [...this.store.formations.getRange(prefixRange(app.id))].map((e) => e.value)
        : types.map((t) => {
          const f = this.store.formations.get(key(app.id, t));
          if (!f) throw fail('NOT_FOUND', `Couldn't find that formation.`, { resource: 'formation' });
          return f;
        });
      for (const f of entries) this.store.formations.put(key(app.id, f.type), { ...f, updatedAt: now });
    });
  }
}

function dynosOf(f: FormationRecord): Dyno[] {
  return Array.from({ length: f.quantity }, (_, i) => ({
    name: `${f.type}.${i + 1}`, type: f.type, command: f.command, size: f.size, createdAt: f.updatedAt, updatedAt: f.updatedAt,
  }));
}
