/**
 * What a delete in the registry view does, in words, from the rules the code applies (so the
 * confirmation page says what will really happen):
 * - DELETE by tag removes only the tag; by digest the image (the repository's manifest) and every
 *   tag naming it, at once (engine/registry/registry.ts `deleteManifest`);
 * - a blob (layer or config) is freed only when no image references it any more, by GC's next run
 *   once the grace period has passed since the blob was uploaded or last requested by a client
 *   (engine/registry/gc.ts phase 2; the grace in force: engine/registry/gc-grace.ts);
 * - image retention (docs/rules.md Limits 7) keeps images of the app's newest releases from GC,
 *   ignores tags, and does not stop a delete: a release whose image was deleted keeps its record,
 *   but a rollback to it fails until the same image is pushed again (engine/platform/releases.ts).
 */
import type { AuthContext } from '../context.js';
import type { ImageView } from '../../../engine/registry/browse.js';
import { blobShare } from '../../../engine/registry/browse.js';
import { graceInForce } from '../../../engine/registry/gc-grace.js';
import { bytes, duration } from '../../ops/units.js';
import { when } from './page.js';

/** A release naming the image (newest first), as the pages list them. */
export interface NamingRelease {
  version: number;
  current: boolean;
  types: string[];
}

/** The paragraphs of a delete's confirmation page. */
export interface DeleteExplanation {
  /** What changes at once. */
  now: string[];
  /** Releases and retention. */
  releasesText: string[];
  /** When the bytes go. */
  later: string[];
}

/** When GC runs, in words. */
function gcRuns(intervalSeconds: number): string {
  return intervalSeconds > 0 ? `GC runs every ${duration(intervalSeconds * 1000)}` : 'scheduled GC is off on this server, so they go when an operator runs `slipway gc`';
}

/** What retention (GC's image phase) would do to this image, ignoring any delete. */
function retention(ctx: AuthContext, image: ImageView, releases: NamingRelease[], newestVersion: number): string {
  const o = ctx.gc.options;
  const recent = releases.some((r) => r.version > newestVersion - o.keepReleases);
  if (recent) return `Left alone, image retention keeps it: it is in one of the app's ${o.keepReleases} newest releases.`;
  const after = releases.length > 0 ? o.releasedMs : o.unreleasedMs;
  const why = releases.length > 0 ? `it is only in releases older than the app's ${o.keepReleases} newest` : 'no release runs it';
  return `Left alone, image retention deletes it ${duration(after)} after its push (from ${when(image.pushedAt + after)}), because ${why}; tags do not keep it.`;
}

/**
 * The explanation of deleting `tag` (or, when null, the whole image) from `image`'s repository.
 * Reads the image's blob records and the GC grace in force.
 */
export async function deleteExplanation(ctx: AuthContext, image: ImageView, tag: string | null, releases: NamingRelease[]): Promise<DeleteExplanation> {
  const app = image.repository.slice(0, image.repository.indexOf('/'));
  const newest = (await ctx.apps.find(app))?.releaseVersion ?? 0;
  const name = image.repository;
  if (tag !== null) {
    const others = image.tags.map((t) => t.tag).filter((t) => t !== tag);
    return {
      now: [
        `Only the tag goes: pulls of ${name}:${tag} fail from now on. The image stays and can still be pulled by digest (${name}@${image.digest})${others.length ? ` or by its other tags (${others.join(', ')})` : ''}.`,
        'Pushing again to the same tag brings it back.',
      ],
      releasesText: [retention(ctx, image, releases, newest)],
      later: ['No bytes are freed by deleting a tag.'],
    };
  }
  const share = await blobShare(ctx.store.metadata, image);
  const grace = (await graceInForce(ctx.store.metadata, ctx.gc.options.graceMs, ctx.clock.now())).graceMs;
  const tagsNamed = image.tags.map((t) => `${name}:${t.tag}`);
  const releaseWords = releases.map((r) => `v${r.version}${r.current ? ' (current)' : ''}`);
  return {
    now: [
      `The image goes from ${name} at once, with ${tagsNamed.length ? `its tags (${tagsNamed.join(', ')})` : 'no tags (it has none)'}: pulls by those tags and by its digest fail from now on.`,
    ],
    releasesText: releases.length === 0
      ? ['No release runs this image.']
      : [`Releases ${releaseWords.join(', ')} run this image. A delete is not stopped by releases (retention only keeps released images from GC): their records stay, but rolling back to them fails until the same image is pushed again to ${name}.`],
    later: [
      share.unshared === 0
        ? `Its ${share.blobs} blobs (${bytes(share.bytes)}) are all used by other images too, so no bytes are freed.`
        : `${share.unshared} of its ${share.blobs} blobs (${bytes(share.unsharedBytes)} of ${bytes(share.bytes)}) are used by no other image: GC deletes them at its first run once ${duration(grace)} (the grace period) has passed since they were uploaded or last requested; ${gcRuns(ctx.gc.intervalSeconds)}. Until then, pushing the same image again reuses them. The other blobs stay: other images use them.`,
    ],
  };
}
