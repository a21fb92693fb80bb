/**
 * What the platform tells the registry's garbage collector about releases (docs/rules.md
 * Limits 7, image retention): which images the releases of each app hold, and a token of each
 * app's newest release so that GC can re-check, inside its own transaction, that no release was
 * created since it looked. server/main.ts passes `releaseRetention` to the GarbageCollector; the
 * registry never reads platform records itself.
 */
import { key, type MetadataReader } from '../storage/metadata.js';
import { scanKeyspace } from '../storage/scan.js';
import { releases } from './keyspaces.js';
import type { ImageRetention, RetainedImages } from '../registry/gc.js';

/**
 * Scans every release once, app by app in version order: images (`repository␟manifest digest`)
 * of an app's `keepReleases` newest releases are `recent`, those only in its older releases
 * `released`; `newest` maps each app id with a release to the key of its newest one.
 */
export async function retainedImages(reader: MetadataReader, keepReleases: number): Promise<RetainedImages> {
  const recent = new Set<string>();
  const released = new Set<string>();
  const newest = new Map<string, string>();
  let app: string | undefined;
  let ofApp: string[][] = [];
  const flush = () => {
    ofApp.forEach((pairs, i) => pairs.forEach((p) => (i >= ofApp.length - keepReleases ? recent : released).add(p)));
    ofApp = [];
  };
  for await (const { key: k, value: r } of scanKeyspace(reader, releases)) {
    if (r.appId !== app) { flush(); app = r.appId; }
    newest.set(r.appId, k);
    ofApp.push(Object.values(r.images).map((im) => key(im.repository, im.manifestDigest)));
  }
  flush();
  for (const p of recent) released.delete(p);
  return { recent, released, newest };
}

/**
 * Key of the newest release of an app, or undefined (one reverse range read of one key). GC
 * calls it inside its transaction, so a release committed since the scan conflicts with, or
 * is seen by, the GC batch.
 */
export async function newestRelease(reader: MetadataReader, appId: string): Promise<string | undefined> {
  return (await reader.range(releases, { prefix: appId, reverse: true, limit: 1 }))[0]?.key;
}

/** The retention input of the registry's GC (engine/registry/gc.ts). */
export const releaseRetention: ImageRetention = { retainedImages, newestRelease };
