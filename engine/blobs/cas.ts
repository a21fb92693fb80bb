/**
 * The server's filesystem blob store: the filesystem backend of the blob contract
 * (fs-backend.ts, whose header documents the layout and commit order) plus the steps the upload
 * path still takes on files directly (`adopt` of a verified session file, `pathOf`), which are
 * being moved onto the contract's writer.
 *
 * Durability order (docs/storage.md (Blob commit order)): bytes fsynced in `uploads/`, digest verified, file
 * renamed into `blobs/`, directory fsynced, and only then the LMDB record is committed by the
 * caller. A crash before the record leaves an invisible (but correct) file, never a record
 * pointing at missing or partial bytes.
 */
import { promises as fsp, constants as fsc } from 'node:fs';
import { join } from 'node:path';
import { hexOf, type Digest } from '../digest.js';
import type { BlobBackend } from './contract.js';
import { FsBlobBackend } from './fs-backend.js';

/** Where blob bytes live: the blob contract, plus the upload path's file-level steps (being retired). */
export interface BlobStore extends BlobBackend {
  /** Absolute path of a committed blob's file. */
  pathOf(digest: Digest): string;
  /**
   * Moves a fully written, fsynced and verified file into place under its digest.
   * Returns false when the blob already existed (the temporary file is then removed: dedupe).
   */
  adopt(tmpPath: string, digest: Digest): Promise<boolean>;
  /** Size in bytes of a committed blob file, or undefined when absent. */
  sizeOf(digest: Digest): Promise<number | undefined>;
  /** Deletes a blob file (the record must already be gone). */
  remove(digest: Digest): Promise<void>;
}

/** Filesystem blob store rooted at `<data>/blobs`. */
export class FileBlobStore extends FsBlobBackend implements BlobStore {
  readonly root: string;
  constructor(dataDir: string) {
    super(dataDir);
    this.root = join(dataDir, 'blobs', 'sha256');
  }

  pathOf(digest: Digest): string {
    const hex = hexOf(digest);
    return join(this.root, hex.slice(0, 2), hex);
  }

  async adopt(tmpPath: string, digest: Digest): Promise<boolean> {
    const target = this.pathOf(digest);
    const dir = join(target, '..');
    if (await this.sizeOf(digest) !== undefined) {
      await fsp.rm(tmpPath, { force: true });
      return false;
    }
    await fsp.mkdir(dir, { recursive: true });
    await fsp.rename(tmpPath, target);
    await fsyncDir(dir);
    return true;
  }

  async sizeOf(digest: Digest): Promise<number | undefined> {
    try {
      return (await fsp.stat(this.pathOf(digest))).size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
  }

  async remove(digest: Digest): Promise<void> {
    await this.delete(digest);
  }
}

/** fdatasyncs a file's bytes by path (the upload commit order's "bytes fsynced" step). */
export async function datasyncFile(path: string): Promise<void> {
  const h = await fsp.open(path, 'r+');
  try {
    await h.datasync();
  } finally {
    await h.close();
  }
}

/** fsyncs a directory so a rename inside it survives a crash. */
export async function fsyncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, fsc.O_RDONLY);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}
