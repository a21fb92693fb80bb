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
  /** Human-readable warnings a release shows (layer count, whiteouts, ignored instructions…). */
  warnings: string[];
}

/** A stored manifest, shared by every repository that holds it. */
export interface ManifestRecord {
  mediaType: string;
  /** The exact bytes the client pushed (their sha256 is the manifest digest). */
  bytes: Uint8Array;
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
