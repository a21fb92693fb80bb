/**
 * The read figures of one growth step (bench/growth/run.ts): manifest GET by tag over 8 raw
 * keep-alive connections (bench/rawhttp.ts) of random images, of images read for the first time
 * and of a hot set read again and again, the full tag list of a
 * 1,000-tag repository (following `Link` pages when a server pages it), and `?n=100` pages of
 * the catalog and of that tag list, each timed as the median of repeated requests.
 */
import { MANIFEST_V2 } from '../image.js';
import { buildRequest, RawConnection } from '../rawhttp.js';
import { latencySummary, percentile, round } from '../stats.js';
import type { RegistryClient } from '../client.js';
import type { GrowthImage } from './images.js';
import { prng } from './images.js';

/**
 * Untimed requests before the timed ones. A path the step did not run (its pushes do no GETs and
 * no listings) starts in V8's interpreter, and after minutes of other work its functions were
 * flushed (bytecode unused for 6 major collections is dropped): measured on one 100,000-image
 * store, the full tag list's first eleven runs after a start took 17.7 → 2.4–8.8 ms (median 5.5),
 * and 0.9–1.8 ms once the path had run a while.
 * Timing only the first runs measured the JIT's state, which varies with the work done before,
 * not the cost of the data. The first run's time is reported apart (`first`).
 */
export const WARMUP_RUNS = 10;
/** Untimed manifest GETs before the timed ones (same connections, other random images). */
export const WARMUP_GETS = 1000;

/**
 * `count` manifest GETs by tag of images drawn at random (seeded) from `images`, `connections`
 * at a time, after `warmup` untimed ones; p50/p99 in ms.
 *
 * How often such a GET repeats an earlier read depends on `count` against the number of images
 * (20,000 GETs over 1,000 images read each image ~20 times, over 100,000 images mostly once). A store
 * that keeps a read cache in front of a networked database answers a repeat from memory and a
 * first read with a statement, so this figure mixes the two in a proportion set by the registry's
 * size; `firstReads` and `hotSetGets` measure each alone.
 * @throws Error on any answer other than 200 with a body.
 */
export async function manifestGets(registry: string, authorization: string | undefined, images: GrowthImage[], count: number, connections: number, seed: number, warmup = WARMUP_GETS): Promise<GetFigures> {
  if (warmup > 0) await manifestGets(registry, authorization, images, warmup, connections, seed ^ 0x5bd1e995, 0);
  const rand = prng(seed);
  return timedGets(registry, authorization, count, connections, () => images[Math.floor(rand() * images.length)]!);
}

/**
 * Manifest GETs of `count` distinct images drawn at random (seeded) from `fresh`, images the
 * server has not been asked for since its start (the step's new pushes: the growth pushes do no
 * GETs), `connections` at a time: the first read of an image, which no cache of the server can
 * have seen. p50/p99 in ms.
 * @throws RangeError when `fresh` holds fewer than `count` images; Error on any answer other than 200 with a body.
 */
export async function firstReads(registry: string, authorization: string | undefined, fresh: GrowthImage[], count: number, connections: number, seed: number): Promise<GetFigures> {
  if (fresh.length < count) throw new RangeError(`${count} first reads need as many unread images, only ${fresh.length} are`);
  const picked = drawDistinct(fresh, count, prng(seed));
  return timedGets(registry, authorization, count, connections, (slot) => picked[slot]!);
}

/**
 * `count` untimed manifest GETs of `repo` under tags drawn at random (seeded) from `tags`,
 * `connections` at a time: runs the GET path after a restart (so that what follows times reads,
 * not V8 compiling that path) without reading any image the step measures.
 * @throws Error on any answer other than 200 with a body.
 */
export async function warmGetPath(registry: string, authorization: string | undefined, repo: string, tags: readonly string[], count: number, connections: number, seed: number): Promise<void> {
  const rand = prng(seed);
  await timedGets(registry, authorization, count, connections, () => ({ repo, tag: tags[Math.floor(rand() * tags.length)]! }));
}

/**
 * A hot set of `hotSize` images drawn at random (seeded) from `images`, each read once untimed,
 * then `count` manifest GETs drawn at random from that set, `connections` at a time: repeat
 * reads of recently read images, the same number of them at every size of the registry (how
 * deploys and dynos pull the images of the day). p50/p99 in ms.
 * @throws Error on any answer other than 200 with a body.
 */
export async function hotSetGets(registry: string, authorization: string | undefined, images: GrowthImage[], hotSize: number, count: number, connections: number, seed: number): Promise<GetFigures> {
  const hot = drawDistinct(images, Math.min(hotSize, images.length), prng(seed));
  await timedGets(registry, authorization, hot.length, connections, (slot) => hot[slot]!);
  const rand = prng(seed ^ 0x2545f491);
  return timedGets(registry, authorization, count, connections, () => hot[Math.floor(rand() * hot.length)]!);
}

/** Latency figures of a run of GETs (ms) and its rate (requests per second). */
export interface GetFigures { p50: number; p99: number; rps: number }

/** `count` distinct elements of `from` in random order (a partial Fisher–Yates shuffle of a copy). */
function drawDistinct<T>(from: readonly T[], count: number, rand: () => number): T[] {
  const a = from.slice();
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(rand() * (a.length - i));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, count);
}

/**
 * `count` manifest GETs by tag of `pick(slot)` (slot 0…count-1, each taken once), over
 * `connections` raw keep-alive connections, each opened with an untimed `GET /v2/`; p50/p99 in ms.
 * @throws Error on any answer other than 200 with a body.
 */
async function timedGets(registry: string, authorization: string | undefined, count: number, connections: number, pick: (slot: number) => Pick<GrowthImage, 'repo' | 'tag'>): Promise<GetFigures> {
  const headers: Record<string, string> = { accept: MANIFEST_V2 };
  if (authorization) headers.authorization = authorization;
  const base = new URL(registry);
  const lat = new Float64Array(count);
  let n = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    const conn = new RawConnection(base);
    try {
      // The connection's first request (connect, and the server's set-up of the connection) is not a GET's cost.
      const hello = await conn.send(buildRequest('GET', new URL('/v2/', base), headers), false);
      if (hello.status !== 200) throw new Error(`GET /v2/ answered ${hello.status}`);
      while (n < count) {
        const slot = n++;
        const img = pick(slot);
        const req = buildRequest('GET', new URL(`/v2/${img.repo}/manifests/${img.tag}`, base), headers);
        const s = performance.now();
        const r = await conn.send(req, false);
        lat[slot] = performance.now() - s;
        if (r.status !== 200 || r.bytes === 0) throw new Error(`GET manifest ${img.repo}:${img.tag} answered ${r.status} (${r.bytes} bytes)`);
      }
    } finally {
      conn.close();
    }
  }));
  const secs = (performance.now() - t0) / 1000;
  return { ...latencySummary(lat, n), rps: round(n / secs, 0) };
}

/**
 * Wall times (ms) of sequential runs of `fn`: the first run's (`first`), then the median of
 * `times` runs after `WARMUP_RUNS` more untimed ones.
 */
export async function timedRuns(times: number, fn: () => Promise<void>): Promise<{ first: number; median: number }> {
  const t0 = performance.now();
  await fn();
  const first = round(performance.now() - t0, 2);
  for (let i = 0; i < WARMUP_RUNS; i++) await fn();
  const lat = new Float64Array(times);
  for (let i = 0; i < times; i++) {
    const s = performance.now();
    await fn();
    lat[i] = performance.now() - s;
  }
  return { first, median: round(percentile(lat, times, 50), 2) };
}

/** The `next` target of an RFC 5988 Link header, if any. */
function nextLink(link: string | undefined): string | undefined {
  return link ? /<([^>]+)>;\s*rel="next"/.exec(link)?.[1] : undefined;
}

/**
 * Every tag of `repo`, following `Link` pages (distribution's tag list is not paged without `n`).
 * @throws Error on a non-200 answer.
 */
export async function fullTagList(client: RegistryClient, repo: string): Promise<number> {
  let path: string | undefined = `/v2/${repo}/tags/list`;
  let tags = 0;
  while (path) {
    const r = await client.expect([200], 'GET', path);
    tags += (JSON.parse(r.body.toString('utf8')) as { tags: string[] | null }).tags?.length ?? 0;
    path = nextLink(r.headers.link);
  }
  return tags;
}

/** One page (`path` with `?n=...`): the number of entries under `field`. @throws Error on a non-200 answer. */
export async function page(client: RegistryClient, path: string, field: 'repositories' | 'tags'): Promise<number> {
  const r = await client.expect([200], 'GET', path);
  return ((JSON.parse(r.body.toString('utf8')) as Record<string, string[] | null>)[field] ?? []).length;
}
