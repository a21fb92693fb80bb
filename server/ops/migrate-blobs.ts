/**
 * The blob half of `slipway migrate` (server/ops/migrate.ts): copies the bytes of every blob the
 * source store records into another blob backend through the blob contract
 * (engine/blobs/contract.ts), and checks afterwards that each is there with its size.
 *
 * Each blob is streamed from the source into an upload session of the target and committed under
 * its digest: the target's writer hashes the bytes while they stream in and refuses the commit
 * (DIGEST_INVALID, nothing left behind) unless they hash to the digest, so a copied blob is
 * verified by construction. A blob the target already has with the recorded size is not copied
 * again (content addressing: the same digest is the same bytes; it was verified when it was
 * committed there), which makes a re-run copy nothing and an interrupted run resume. Quarantined
 * blobs (bytes that failed verification, engine/blobs/quarantine.ts) have no bytes worth copying:
 * their records are copied and stay quarantined, as the source serves them (unknown).
 */
import { randomBytes } from 'node:crypto';
import type { BlobBackend } from '../../engine/blobs/contract.js';
import { scanBlobRecords } from '../../engine/blobs/refs.js';
import type { MetadataReader } from '../../engine/storage/metadata.js';
import type { Digest } from '../../engine/digest.js';

/** What the blob copy did. Sizes in bytes. */
export interface BlobCopyReport {
  /** Blob records of the source. */
  records: number;
  /** Blobs copied (streamed, hashed and committed) by this run. */
  copied: number;
  bytesCopied: number;
  /** Blobs the target already had with the recorded size. */
  present: number;
  /** Quarantined blobs, whose bytes are not copied. */
  quarantined: number;
}

/** Blobs copied at once (each one stream in, one upload out). */
const PARALLEL = 4;

/**
 * Copies every recorded, unquarantined blob of `records` from `source` to `target`.
 * @param progress called after each blob copied
 * @throws Error naming the digest when a blob is missing from the source, has another size than
 *         its record, already exists in the target with another size, or fails its digest.
 */
export async function copyBlobs(records: MetadataReader, source: BlobBackend, target: BlobBackend, progress?: (digest: Digest, size: number) => void): Promise<BlobCopyReport> {
  const report: BlobCopyReport = { records: 0, copied: 0, bytesCopied: 0, present: 0, quarantined: 0 };
  const running = new Set<Promise<void>>();
  let failure: unknown;
  for await (const { key, value } of scanBlobRecords(records)) {
    if (failure) break;
    report.records++;
    if (value.quarantined !== undefined) { report.quarantined++; continue; }
    const digest = key as Digest;
    const job = copyOne(source, target, digest, value.size).then((copied) => {
      if (!copied) { report.present++; return; }
      report.copied++;
      report.bytesCopied += value.size;
      progress?.(digest, value.size);
    }, (e) => { failure ??= e; }).finally(() => running.delete(job));
    running.add(job);
    if (running.size >= PARALLEL) await Promise.race(running);
  }
  await Promise.all(running);
  if (failure) throw failure;
  return report;
}

/** Copies one blob unless the target has it. @returns false when it was already there. */
async function copyOne(source: BlobBackend, target: BlobBackend, digest: Digest, size: number): Promise<boolean> {
  const there = await target.stat(digest);
  if (there) {
    if (there.size !== size) throw new Error(`blob ${digest} is already in the target blob store with ${there.size} bytes, not the ${size} its record says; remove it there and run migrate again`);
    return false;
  }
  const here = await source.stat(digest);
  if (!here) throw new Error(`blob ${digest} is recorded but its bytes are missing from the data directory; run \`slipway fsck\` first`);
  if (here.size !== size) throw new Error(`blob ${digest} has ${here.size} bytes in the data directory, its record says ${size}; run \`slipway fsck --full\` first`);
  const writer = await target.create(`migrate-${randomBytes(12).toString('hex')}`);
  try {
    for await (const chunk of await source.read(digest)) await writer.append(chunk as Buffer);
    const done = await writer.commit(digest);
    if (done.size !== size) throw new Error(`blob ${digest}: ${done.size} bytes committed, ${size} recorded`);
  } catch (e) {
    await writer.abort().catch(() => undefined);
    throw e;
  }
  return true;
}

/** The blobs that fail the after-copy check, with why (at most `limit`). */
export interface BlobCheckReport {
  checked: number;
  problems: string[];
}

/**
 * Checks that `target` holds every recorded, unquarantined blob of `records` with its recorded
 * size (one `stat` each).
 */
export async function checkCopiedBlobs(records: MetadataReader, target: BlobBackend, limit = 20): Promise<BlobCheckReport> {
  const report: BlobCheckReport = { checked: 0, problems: [] };
  for await (const { key, value } of scanBlobRecords(records)) {
    if (value.quarantined !== undefined) continue;
    report.checked++;
    const st = await target.stat(key as Digest);
    const problem = !st ? 'missing from the target blob store' : st.size !== value.size ? `${st.size} bytes in the target, ${value.size} recorded` : null;
    if (problem && report.problems.length < limit) report.problems.push(`blob ${key}: ${problem}`);
  }
  return report;
}
