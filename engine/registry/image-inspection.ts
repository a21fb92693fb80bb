/**
 * Image inspection at manifest PUT (docs/rules.md What the service does 8): the worker pool reads
 * the image config and scans each layer tar not scanned before for whiteout files; the scans are
 * cached on the blob records (blobs/refs.ts), so a layer is read once however many images use it.
 */
import type { Digest } from '../digest.js';
import type { MetadataStore } from '../storage/metadata.js';
import type { LayerScan } from '../blobs/records.js';
import { blobRecordRefs, putLayerScansInTransaction } from '../blobs/refs.js';
import { checkConfigStrings, checkPlatform, imageInfo, type ConfigSummary } from './image-info.js';
import type { ImageInfo } from './records.js';

/**
 * Work sent to the worker pool at manifest PUT: digests only; the worker reads the bytes
 * through its own instance of the blob backend (workers/inspect-image.ts).
 */
export interface InspectRequest {
  config: Digest;
  /** Layers not inspected before (their scan is cached on the blob record afterwards). */
  layers: Digest[];
  /** The account the inspection runs for: its tasks share that account's part of the pool (workers/fair-queue.ts); '' or absent: one shared anonymous tenant. */
  account?: string;
}
/** What the worker pool answers for an InspectRequest. */
export interface InspectResult {
  config: ConfigSummary;
  /** digest → scan, for each requested layer. */
  scans: Record<string, LayerScan>;
}
/** Runs an InspectRequest off the event loop (workers/pool.ts). */
export type ImageInspector = (req: InspectRequest) => Promise<InspectResult>;

/**
 * The image facts of a manifest PUT: the config summary (checked: platform and strings) and one
 * whiteout scan per layer. Scans cached on blob records are reused; the others are run by
 * `inspect` (the worker pool, off the event loop) and cached in one transaction.
 * @param layers layer digests in manifest order (repeats allowed)
 * @param account the account the inspection runs for (its share of the pool)
 * @throws what checkPlatform/checkConfigStrings and `inspect` throw (BLOB_UNKNOWN for a missing blob)
 */
export async function inspectImage(metadata: MetadataStore, inspect: ImageInspector, configDigest: Digest, layers: Digest[], account: string): Promise<ImageInfo> {
  const known = new Map<Digest, LayerScan>();
  const unique = [...new Set(layers)];
  (await metadata.getMany(blobRecordRefs(unique))).forEach((rec, i) => { if (rec?.scan) known.set(unique[i]!, rec.scan); });
  const pending = unique.filter((d) => !known.has(d));
  const result = await inspect({ config: configDigest, layers: pending, account });
  checkPlatform(result.config);
  checkConfigStrings(result.config);
  const fresh = new Map<Digest, LayerScan>();
  for (const d of pending) if (result.scans[d]) fresh.set(d, result.scans[d]!);
  if (fresh.size > 0) await metadata.transact((tx) => putLayerScansInTransaction(tx, fresh));
  const scans = layers.map((d) => fresh.get(d) ?? known.get(d) ?? { whiteouts: 0, examples: [], readable: false });
  return imageInfo(result.config, scans, layers);
}
