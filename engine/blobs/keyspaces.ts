/**
 * The blobs domain's keyspaces: Blob records and upload sessions. Only modules of engine/blobs/ may import this
 * file (test/engine/import-rules.test.ts); other domains call this domain's service functions.
 * Names are the LMDB database names the data has always had (docs/storage.md).
 */
import { keyspace } from '../storage/metadata.js';
import type { Totals } from '../storage/running-totals.js';
import type { BlobRecord, UploadRecord } from './records.js';

/** blob digest → blob record with reference count. */
export const blobs = keyspace<BlobRecord>('blobs', 'blobs');
/** upload session id → session record. */
export const uploads = keyspace<UploadRecord>('blobs', 'uploads');
/** Running totals of the blob records (count, bytes): `base` and one delta per changing transaction (storage/running-totals.ts). */
export const blobTotalsKeyspace = keyspace<Totals>('blobs', 'blob-totals');
