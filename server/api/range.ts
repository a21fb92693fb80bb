/**
 * List pagination with `Range` (docs/platform-conventions.md 1.5):
 *
 *   Range: <property> [<start>]..[<end>][; max=<n>][, order=asc|desc]
 *
 * `start` and `end` are bounds in the listing order, inclusive unless `start` is prefixed with
 * `]` or `end` suffixed with `[`. Default: `id ..; max=200`, ascending; `max` is 1 to 1000.
 * A list that does not fit answers 206 with `Next-Range` (the value to send next, starting
 * after the last item); a complete one answers 200 without it. Every list carries
 * `Accept-Ranges` and, when not empty, `Content-Range`. A malformed Range, an unknown property,
 * option or order, or a max outside 1-1000 is refused with 416
 * `requested_range_not_satisfiable`.
 */
import { fail } from '../../engine/errors.js';

export const DEFAULT_PAGE = 200;
export const MAX_PAGE = 1000;

export interface RangeSpec {
  property: string;
  start: string | null;
  startExclusive: boolean;
  end: string | null;
  endExclusive: boolean;
  max: number;
  order: 'asc' | 'desc';
}

const RANGE = /^\s*([a-z_]+)\s+(\S*?)\.\.(\S*?)\s*(?:[;,](.*))?$/i;

function refuse(why: string, allowed: readonly string[]): never {
  throw fail('RANGE_NOT_SATISFIABLE', `Invalid Range header: ${why}. Use e.g. "Range: ${allowed[0]} ..; max=${DEFAULT_PAGE}" (properties: ${allowed.join(', ')}; max 1-${MAX_PAGE}; order=asc|desc).`);
}

/**
 * Parses a Range header.
 * @param header the value ('' = the default range)
 * @param allowed sortable properties of this list, the first being the default
 * @throws RANGE_NOT_SATISFIABLE (416) for anything malformed.
 */
export function parseRange(header: string, allowed: readonly string[]): RangeSpec {
  const spec: RangeSpec = { property: allowed[0]!, start: null, startExclusive: false, end: null, endExclusive: false, max: DEFAULT_PAGE, order: 'asc' };
  if (header.trim() === '') return spec;
  if (header.length > 1000) refuse('too long', allowed);
  const m = RANGE.exec(header);
  if (!m) refuse(`"${header.slice(0, 100)}" is not "<property> <start>..<end>; max=<n>"`, allowed);
  const [, property, start, end, options] = m;
  if (!allowed.includes(property!)) refuse(`cannot sort by "${property!.slice(0, 40)}"`, allowed);
  spec.property = property!;
  if (start) {
    spec.startExclusive = start.startsWith(']');
    spec.start = spec.startExclusive ? start.slice(1) : start;
  }
  if (end) {
    spec.endExclusive = end.endsWith('[');
    spec.end = spec.endExclusive ? end.slice(0, -1) : end;
  }
  for (const raw of (options ?? '').split(/[;,]/)) {
    const opt = raw.trim();
    if (opt === '') continue;
    const kv = /^(max|order)\s*=\s*(\S+)$/i.exec(opt);
    if (!kv) refuse(`unknown option "${opt.slice(0, 40)}"`, allowed);
    if (kv[1]!.toLowerCase() === 'max') {
      const n = /^\d{1,5}$/.test(kv[2]!) ? Number(kv[2]) : NaN;
      if (!(n >= 1 && n <= MAX_PAGE)) refuse(`max must be a whole number from 1 to ${MAX_PAGE}`, allowed);
      spec.max = n;
    } else {
      const o = kv[2]!.toLowerCase();
      if (o !== 'asc' && o !== 'desc') refuse('order must be asc or desc', allowed);
      spec.order = o;
    }
  }
  return spec;
}

/** One page of a list with the status and headers to send. */
export interface Page<T> {
  status: 200 | 206;
  items: T[];
  headers: Record<string, string>;
}

/**
 * Sorts, bounds and cuts `items` per `spec`.
 * @param keyOf the value of a sortable property of an item, as a string
 */
export function paginate<T>(items: readonly T[], spec: RangeSpec, allowed: readonly string[], keyOf: (item: T, property: string) => string): Page<T> {
  const sign = spec.order === 'asc' ? 1 : -1;
  const keyed = items.map((item) => ({ item, k: keyOf(item, spec.property) }));
  keyed.sort((a, b) => (a.k < b.k ? -sign : a.k > b.k ? sign : 0));
  const after = (k: string, bound: string) => (spec.order === 'asc' ? k > bound : k < bound);
  const inRange = keyed.filter(({ k }) => {
    if (spec.start !== null && !(after(k, spec.start) || (!spec.startExclusive && k === spec.start))) return false;
    if (spec.end !== null && !(after(spec.end, k) || (!spec.endExclusive && k === spec.end))) return false;
    return true;
  });
  const page = inRange.slice(0, spec.max);
  const more = inRange.length > spec.max;
  return { status: more ? 206 : 200, items: page.map((p) => p.item), headers: rangeHeaders(spec, allowed, page.map((p) => p.k), more ? page[page.length - 1]!.k : null) };
}

/**
 * The headers of a page (`Accept-Ranges`, `Content-Range`, `Next-Range`) whose items have the
 * sort keys `keys`, in order; `resumeAfter`: the key the next page starts after, or null when the
 * list is complete (the status is then 200, else 206).
 */
export function rangeHeaders(spec: RangeSpec, allowed: readonly string[], keys: readonly string[], resumeAfter: string | null): Record<string, string> {
  const suffix = `; max=${spec.max}${spec.order === 'desc' ? ', order=desc' : ''}`;
  const headers: Record<string, string> = { 'accept-ranges': allowed.join(', ') };
  if (keys.length > 0) headers['content-range'] = `${spec.property} ${keys[0]}..${keys[keys.length - 1]}${suffix}`;
  if (resumeAfter !== null) {
    const end = spec.end === null ? '' : spec.end + (spec.endExclusive ? '[' : '');
    headers['next-range'] = `${spec.property} ]${resumeAfter}..${end}${suffix}`;
  }
  return headers;
}
