/**
 * The last step of the growth benchmark (bench/growth/run.ts): delete a share of the images by
 * manifest digest, and after the server's garbage collection check what is left: every remaining
 * image still answers (manifest GET by tag, HEAD of each blob) and every deleted one is gone.
 */
import { MANIFEST_V2 } from '../image.js';
import type { RegistryClient } from '../client.js';
import type { GrowthImage } from './images.js';

/** Whether image `i` is in the deleted share (every `100 / percent`-th image). */
function deleted(i: number, percent: number): boolean {
  return i % Math.round(100 / percent) === 0;
}

/** Runs `fn` over `items`, `concurrency` at a time (index order of starts). */
export async function each<T>(items: T[], concurrency: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]!, i);
    }
  }));
}

/**
 * DELETEs the manifest of every `100 / percent`-th image by digest (202 expected).
 * @throws Error on another answer.
 */
export async function deleteShare(client: RegistryClient, images: GrowthImage[], percent: number, concurrency: number): Promise<{ deleted: number; wallMs: number }> {
  const t0 = performance.now();
  const doomed = images.filter((_, i) => deleted(i, percent));
  await each(doomed, concurrency, async (img) => { await client.expect([202], 'DELETE', `/v2/${img.repo}/manifests/${img.manifestDigest}`); });
  return { deleted: doomed.length, wallMs: performance.now() - t0 };
}

/**
 * Checks every image: a remaining one answers its manifest GET by tag (200, the same digest) and
 * a HEAD of each blob (200); a deleted one answers 404 to its manifest GET by digest.
 * @throws Error naming the first image that does not.
 * @returns the number of images checked.
 */
export async function verifyAfterGc(client: RegistryClient, images: GrowthImage[], percent: number, concurrency: number): Promise<number> {
  await each(images, concurrency, async (img, i) => {
    if (deleted(i, percent)) {
      await client.expect([404], 'GET', `/v2/${img.repo}/manifests/${img.manifestDigest}`, { headers: { accept: MANIFEST_V2 } });
      return;
    }
    const r = await client.expect([200], 'GET', `/v2/${img.repo}/manifests/${img.tag}`, { headers: { accept: MANIFEST_V2 } });
    if (r.headers['docker-content-digest'] !== img.manifestDigest) throw new Error(`${img.repo}:${img.tag} answered digest ${r.headers['docker-content-digest']}, not ${img.manifestDigest}`);
    for (const b of img.blobs) {
      const h = await client.expect([200], 'HEAD', `/v2/${img.repo}/blobs/${b.digest}`);
      if (Number(h.headers['content-length']) !== b.size) throw new Error(`HEAD ${img.repo}@${b.digest}: length ${h.headers['content-length']}, not ${b.size}`);
    }
  });
  return images.length;
}
