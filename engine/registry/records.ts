/** Records of the registry (the keyspaces that hold them: engine/registry/keyspaces.ts). */
import type { Digest } from '../digest.js';

/** A content descriptor (OCI image spec "Descriptors"). */
export interface Descriptor {
  mediaType: string;
  digest: Digest;
  /** Bytes. */
  size: number;
}

/**
 * What the worker learned from an image's config and layers at manifest PUT, kept with the
 * manifest so the release (docs/rules.md What the service does 6) reads it without touching blobs again.
 */
export interface ImageInfo {
  architecture: string;
  os: string;
  /** Config `Entrypoint` (null when unset). */
  entrypoint: string[] | null;
  /** Config `Cmd` (null when unset). */
  cmd: string[] | null;
  /** Config `WorkingDir`; '' when unset (runtime default is `/`). */
  workingDir: string;
  env: string[];
  user: string;
  /** Build-file instructions the runtime ignores, present in this image (docs/rules.md What the service does 6). */
  ignoredInstructions: string[];
  layerCount: number;
  /** Whiteout entries found across all layers. */
  whiteouts: number;
  /**
   * Layers whose scan stopped at a limit (engine/registry/inspect-limits.ts), each with why in
   * words; absent when every layer was scanned whole (and on records of earlier builds).
   */
  unscannedLayers?: Array<{ digest: Digest; reason: string }>;
  /** Human-readable warnings a release shows (layer count, whiteouts, ignored instructions…). */
  warnings: string[];
}

/** A stored manifest, shared by every repository that holds it. */
export interface ManifestRecord {
  mediaType: string;
  /**
   * The exact bytes the client pushed (their sha256 is the manifest digest), as text: their
   * UTF-8 decoding (a PUT requires valid UTF-8, so encoding it again gives the same bytes), or
   * their base64 when `encoding` is 'base64' (only manifests stored by builds before schema 8
   * whose bytes are not valid UTF-8: engine/registry/migrations.ts). Read with `manifestBytes`.
   */
  text: string;
  /** How `text` holds the bytes: absent for UTF-8. */
  encoding?: 'base64';
  configDigest: Digest;
  layers: Descriptor[];
  /** Distinct blob digests this manifest references (config + layers). */
  blobs: Digest[];
  /** Number of repositories holding this manifest. */
  links: number;
  createdAt: number;
  image: ImageInfo;
}

export interface RepositoryRecord {
  name: string;
  appId: string;
  createdAt: number;
}

export interface TagRecord {
  digest: Digest;
  updatedAt: number;
}

/** The exact bytes of a stored manifest (see `ManifestRecord.text`). */
export function manifestBytes(record: Pick<ManifestRecord, 'text' | 'encoding'>): Buffer {
  return Buffer.from(record.text, record.encoding === 'base64' ? 'base64' : 'utf8');
}

/** The size in bytes of a stored manifest, without copying it. */
export function manifestSize(record: Pick<ManifestRecord, 'text' | 'encoding'>): number {
  return Buffer.byteLength(record.text, record.encoding === 'base64' ? 'base64' : 'utf8');
}

/** The GC grace period one node announced (gc-grace.ts). */
export interface GraceRecord {
  /** The node's own grace period (SLIPWAY_GC_GRACE), ms. */
  graceMs: number;
  /** When the node last announced it, ms since epoch. */
  seenAt: number;
  /**
   * The grace the node applies (its touch interval derives from it), ms: the cluster setting
   * when there is one, else `graceMs`. Absent in records of builds without the setting.
   */
  appliedMs?: number;
  /** `setAt` of the cluster setting the node applies; absent when it applies its own grace. */
  settingAt?: number;
}

/** The cluster's GC grace setting (gc-grace.ts), written by `slipway gc grace set`. */
export interface GraceSetting {
  /** The grace period, ms. */
  graceMs: number;
  /** When it was set, ms since epoch. */
  setAt: number;
  /** The grace GC used when it was set, ms: GC keeps the longer of the two until `fullFrom`. */
  previousMs: number;
  /** From this time (ms since epoch) GC uses `graceMs` alone; equal to `setAt` when the grace grew. */
  fullFrom: number;
}
