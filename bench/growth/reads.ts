/**
 * The read figures of one growth step (bench/growth/run.ts): manifest GET by tag of random
 * images over 8 raw keep-alive connections (bench/rawhttp.ts), the full tag list of a
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
 * `count` manifest GETs by tag of images drawn at random (seeded) from `images`, `connections`
 * at a time; p50/p99 in ms.
 * @throws Error on any answer other than 200 with a body.
 */
export async function manifestGets(registry: string, authorization: string | undefined, images: GrowthImage[], count: number, connections: number, seed: number): Promise<{ p50: number; p99: number; rps: number }> {
  const rand = prng(seed);
  const headers: Record<string, string> = { accept: MANIFEST_V2 };
  if (authorization) headers.authorization = authorization;
  const base = new URL(registry);
  const lat = new Float64Array(count);
  let n = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: connections }, async () => {
    const conn = new RawConnection(base);
    try {
      while (n < count) {
        const slot = n++;
        const img = images[Math.floor(rand() * images.length)]!;
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

/** Median wall time (ms) of `times` sequential runs of `fn`, after one untimed run. */
export async function median(times: number, fn: () => Promise<void>): Promise<number> {
  await fn();
  const lat = new Float64Array(times);
  for (let i = 0; i < times; i++) {
    const s = performance.now();
    await fn();
    lat[i] = performance.now() - s;
  }
  return round(percentile(lat, times, 50), 2);
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
