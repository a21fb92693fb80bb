/**
 * `slipway migrate`'s command line side: opens the data directory's store, the target
 * PostgreSQL database and (with `--to-blob-store s3`) the S3 bucket named by the s3.*
 * settings (server/blob-store-settings.ts), runs the copy (server/ops/migrate.ts) and prints
 * what it did. Exit code 0 when the target verified equal to the source, 1 otherwise.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { S3BlobBackend } from '../../engine/blobs/s3-backend.js';
import { FsBlobBackend } from '../../engine/blobs/fs-backend.js';
import { openStore } from '../../engine/store.js';
import { LmdbMetadataStore } from '../../engine/storage/lmdb-metadata.js';
import { PostgresMetadataStore } from '../../engine/storage/postgres-metadata.js';
import { probeBucket, s3ClientSettings, type BlobStoreSettings } from '../blob-store-settings.js';
import { migrate, type MigrateReport } from './migrate.js';

/**
 * Runs `slipway migrate` on `dataDir`.
 * @param database the target's `postgres://` URL (--to-database)
 * @param blobStore 's3' to copy the blobs (--to-blob-store); undefined or 'fs' leaves them in the data directory
 * @param s3Target the target bucket's settings (the s3.* settings), read only with `blobStore` s3
 * @returns the exit code
 * @throws Error for missing or bad arguments and settings, an unreachable target, a data
 *         directory in use, or a blob that cannot be copied
 */
export async function migrateDataDir(dataDir: string, database: string | undefined, blobStore: string | undefined, json: boolean, s3Target: () => BlobStoreSettings): Promise<number> {
  if (!database) throw new Error('migrate needs --to-database postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE');
  if (!/^postgres(ql)?:\/\//.test(database)) throw new Error('--to-database must be a postgres:// or postgresql:// URL');
  if (blobStore !== undefined && blobStore !== 's3' && blobStore !== 'fs') throw new Error(`--to-blob-store "${blobStore}" must be s3 (or fs: the blobs stay in the data directory)`);
  if (!existsSync(join(dataDir, 'lmdb'))) throw new Error(`${dataDir} is not a Slipway data directory (no lmdb/ inside)`);
  const s3 = blobStore === 's3' ? s3Target() : undefined;
  let target: S3BlobBackend | undefined;
  if (s3 && s3.kind === 's3') {
    target = new S3BlobBackend({ client: s3ClientSettings(s3), bucket: s3.bucket, prefix: s3.prefix, partSize: s3.partSizeBytes, uploadConcurrency: s3.uploadConcurrency, putLimit: s3.putLimitBytes });
    await probeBucket(target.client, s3);
  }
  const store = await openStore(dataDir);
  try {
    if (!(store.metadata instanceof LmdbMetadataStore)) throw new Error('the data directory is not an embedded store');
    const pg = await PostgresMetadataStore.open({ connectionString: database, statementTimeoutMs: 60_000 });
    try {
      const say = json ? undefined : (line: string) => console.log(line);
      const report = await migrate({
        source: store.metadata, target: pg, say,
        ...(target ? { blobs: { source: new FsBlobBackend(dataDir), target } } : {}),
      });
      print(report, json, s3 && s3.kind === 's3' ? `s3://${s3.bucket}/${s3.prefix}` : undefined);
      return report.problems.length === 0 ? 0 : 1;
    } finally {
      await pg.close();
    }
  } finally {
    target?.client.destroy();
    await store.close();
  }
}

function print(r: MigrateReport, json: boolean, bucket: string | undefined): void {
  if (json) return console.log(JSON.stringify(r));
  if (r.blobs) {
    console.log(`Blobs: ${r.blobs.copied} copied (${r.blobs.bytesCopied} bytes, each hashed against its digest) to ${bucket}, ${r.blobs.present} already there${r.blobs.quarantined > 0 ? `, ${r.blobs.quarantined} quarantined (bytes not copied, records kept)` : ''}.`);
  } else {
    console.log('Blobs: not copied; they stay in the data directory (--to-blob-store s3 copies them).');
  }
  console.log(`Records: ${r.records.copied} copied, ${r.records.unchanged} already in the database (schema ${r.schema}).`);
  if (r.records.copied === 0 && (r.blobs?.copied ?? 0) === 0) console.log('Nothing new to copy: the target already held everything.');
  for (const [name, n] of Object.entries(r.skipped)) if (n > 0) console.log(`Not copied: ${n} record(s) of ${name} (uploads in progress; clients restart them).`);
  if (r.problems.length === 0) {
    console.log(`Verified: ${r.verified.keyspaces} keyspace(s) with equal counts, ${r.verified.records} record(s) equal${r.blobs ? `, ${r.verified.blobs} blob(s) present with their sizes` : ''}.`);
  } else {
    console.log(`Verification FAILED (${r.problems.length} problem(s)):`);
    for (const p of r.problems) console.log(`  ${p}`);
  }
}
