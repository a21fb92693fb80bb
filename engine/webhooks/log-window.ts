/**
 * Windows over the webhook logs in creation order (docs/webhooks.md "For users"): an app's
 * deliveries (`webhook-deliveries-by-group`) and events (`webhook-events-by-app`) are indexed by
 * `<app>␟<time>␟<id>`, so a page of the API's `seq` order ("<time>.<id>", what the platform's CLI
 * asks for: `Range: seq ..; order=desc,max=1000`) is one range read of the index, newest first
 * or oldest first, however long the log is.
 */
import { key, keyParts, type Keyspace, type MetadataReader } from '../storage/metadata.js';

/** A window in `seq` order: bounds (inclusive unless marked), direction and size. */
export interface LogWindow {
  /** First `seq` in the window's direction (the low bound ascending, the high one descending), or null. */
  from: string | null;
  fromExclusive: boolean;
  /** Last `seq` in the window's direction, or null. */
  to: string | null;
  toExclusive: boolean;
  order: 'asc' | 'desc';
  /** Records wanted (1–1000). */
  limit: number;
}

/** What a window read found: records in order, and whether the log goes on past them (`resumeAfter`, a `seq`). */
export interface WindowRead<V> {
  items: Array<{ seq: string; value: V }>;
  /** When more records may follow: the `seq` to continue after (exclusive); else null. */
  resumeAfter: string | null;
}

/** Index entries read per round trip. */
const CHUNK = 500;

/**
 * Index entries a filtered read looks at before it stops and answers with what it found and where
 * to resume: bounds the work of one request whatever the filter.
 */
export const MAX_SCANNED = 20_000;

/** The index key that sorts as `seq` does, under `prefix` (the time and id parts split at the first "."). */
function indexKey(prefix: string, seq: string): string {
  const dot = seq.indexOf('.');
  return dot < 0 ? key(prefix, seq) : key(prefix, seq.slice(0, dot), seq.slice(dot + 1));
}

/** The smallest string after every key that starts with `k` followed by nothing or a lower character than U+0001. */
const justAfter = (k: string) => k + '\x01';

/**
 * Reads the window `w` of the log of `prefix`: index `index` (keys `<prefix>␟<time>␟<id>`, values
 * record ids) and records `records`, keeping those `keep` accepts.
 * @returns at most `w.limit` records, and where to resume when more may follow (a filtered read
 *   stops after MAX_SCANNED index entries).
 */
export async function readWindow<V>(reader: MetadataReader, index: Keyspace<string>, records: Keyspace<V>, prefix: string, w: LogWindow, keep: (v: V) => boolean = () => true): Promise<WindowRead<V>> {
  const asc = w.order === 'asc';
  const lowSeq = asc ? w.from : w.to, lowExclusive = asc ? w.fromExclusive : w.toExclusive;
  const highSeq = asc ? w.to : w.from, highExclusive = asc ? w.toExclusive : w.fromExclusive;
  let start = lowSeq === null ? undefined : lowExclusive ? justAfter(indexKey(prefix, lowSeq)) : indexKey(prefix, lowSeq);
  let end = highSeq === null ? undefined : highExclusive ? indexKey(prefix, highSeq) : justAfter(indexKey(prefix, highSeq));
  const items: Array<{ seq: string; value: V }> = [];
  let scanned = 0;
  for (;;) {
    const entries = await reader.range(index, { prefix, start, end, reverse: !asc, limit: CHUNK });
    const values = await reader.getMany(entries.map((e) => [records, e.value] as const));
    for (let i = 0; i < entries.length; i++) {
      const parts = keyParts(entries[i]!.key);
      const seq = `${parts[1]}.${parts[2]}`;
      const v = values[i];
      scanned++;
      if (v === undefined || !keep(v)) {
        if (scanned >= MAX_SCANNED) return { items, resumeAfter: seq };
        continue;
      }
      if (items.length === w.limit) return { items, resumeAfter: items[items.length - 1]!.seq };
      items.push({ seq, value: v });
      if (scanned >= MAX_SCANNED) return { items, resumeAfter: seq };
    }
    if (entries.length < CHUNK) return { items, resumeAfter: null };
    const last = entries[entries.length - 1]!.key;
    if (asc) start = justAfter(last);
    else end = last;
  }
}
