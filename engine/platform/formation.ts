/**
 * Formation entries (docs/platform-conventions.md 3.3): reads and scale changes that releases
 * and dynos share. Scaling changes quantity and size only; releases set image and command.
 */
import { fail } from '../errors.js';
import { key, type MetadataReader, type MetadataTransaction } from '../storage/metadata.js';
import type { FormationRecord } from './records.js';
import { formations } from './keyspaces.js';

/** One `updates[]` item of a formation batch update (scale). */
export interface ScaleUpdate {
  type: string;
  quantity?: number;
  size?: string;
}

/**
 * The dyno sizes people choose from (the platform's Common Runtime names, DEFAULT_SIZE first
 * among the standard ones). The API accepts any well-formed size name (checkScaleUpdates) and keeps it;
 * the dashboard offers these, plus an entry's current size when it is not one of them.
 */
export const DYNO_SIZES = ['eco', 'basic', 'standard-1X', 'standard-2X', 'performance-M', 'performance-L', 'performance-L-RAM', 'performance-XL', 'performance-2XL'] as const;

/** Largest quantity of one process type. */
export const MAX_QUANTITY = 1000;

/** Formation entries of an app in process-type order (one range read). */
export async function formationOf(reader: MetadataReader, appId: string): Promise<FormationRecord[]> {
  return (await reader.range(formations, { prefix: appId })).map((e) => e.value);
}

/**
 * Checks scale items before any store access.
 * @throws INVALID_PARAMS for a quantity outside 0..1000 or a malformed size.
 */
export function checkScaleUpdates(updates: ScaleUpdate[]): void {
  for (const u of updates) {
    if (u.quantity !== undefined && (!Number.isSafeInteger(u.quantity) || u.quantity < 0 || u.quantity > MAX_QUANTITY)) {
      throw fail('INVALID_PARAMS', `quantity for ${u.type} must be an integer from 0 to ${MAX_QUANTITY}`);
    }
    if (u.size !== undefined && !/^[A-Za-z0-9-]{1,40}$/.test(u.size)) throw fail('INVALID_PARAMS', `size for ${u.type} is not a dyno size`);
  }
}

/**
 * Applies checked scale items inside the caller's transaction.
 * @param now the change time (ms), read before the transaction
 * @returns the entries after the change, in the order of `updates`.
 * @throws NOT_FOUND (resource `formation`) for a type without an entry; the caller's transaction then writes nothing.
 */
export async function scaleInTransaction(tx: MetadataTransaction, appId: string, updates: ScaleUpdate[], now: number): Promise<FormationRecord[]> {
  const out: FormationRecord[] = [];
  for (const u of updates) {
    const k = key(appId, u.type);
    const entry = await tx.get(formations, k);
    if (!entry) throw fail('NOT_FOUND', `Couldn't find that formation.`, { resource: 'formation' });
    const next = { ...entry, quantity: u.quantity ?? entry.quantity, size: u.size ?? entry.size, updatedAt: now };
    tx.put(formations, k, next);
    out.push(next);
  }
  return out;
}
