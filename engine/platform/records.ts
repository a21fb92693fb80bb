/** Platform records (stored in the keyspaces of keyspaces.ts). */

/** App generations (docs/platform-conventions.md 3.2): only the older one, cedar, may use the registry (docs/rules.md What the service does 5). */
export type Generation = 'cedar' | 'fir';

export interface AppRecord {
  id: string;
  name: string;
  /** Owning account for personal apps. */
  ownerId: string;
  /** Owning team for team apps (docs/rules.md What the service does 3), else null. */
  teamId: string | null;
  generation: Generation;
  /** Current stack name, e.g. `heroku-24` or `container`. */
  stack: string;
  buildStack: string;
  /** Isolated space name, null = shared runtime. */
  space: string | null;
  /** Version of the newest release (0 = none yet). */
  releaseVersion?: number;
  /** Labs features switched on or off (name → enabled); absent = default off. */
  features?: Record<string, boolean>;
  /** Maintenance mode (docs/platform-conventions.md 3.2). */
  maintenance?: boolean;
  createdAt: number;
  updatedAt: number;
}

/** The image a release runs for one process type. */
export interface ReleaseImage {
  /** The image id given in the formation update: the config blob digest (`sha256:<hex>`). */
  configDigest: string;
  /** Manifest that carried it and the repository it was pushed to. */
  manifestDigest: string;
  repository: string;
  /**
   * Tags of `repository` that named the manifest when the image was released (`repository:tag`
   * it came from), in lexical order; empty when it was untagged (pushed by digest or its tag
   * moved on). Absent in releases of builds before this field was recorded.
   */
  tags?: string[];
  /** Command the process runs (docs/rules.md What the service does 6 ENTRYPOINT/CMD rules). */
  command: string;
  /** Working directory at runtime (`/` unless WORKDIR set it). */
  workingDir: string;
  /** Image warnings at release time (ImageInfo.warnings plus runtime-specific notes). */
  warnings: string[];
}

/** An immutable, numbered release of an app (docs/platform-conventions.md 3.4). Key: `appId␟version` (zero-padded). */
export interface ReleaseRecord {
  id: string;
  appId: string;
  version: number;
  description: string;
  /** Account that created it. */
  userId: string;
  createdAt: number;
  /** Process type → image, for every type the release runs (not only the updated ones). */
  images: Record<string, ReleaseImage>;
  /** Process types restarted by this release (all of them: docs/rules.md Endpoints 7). */
  restarted: string[];
  /** True when a `release` process type is part of it (release phase, docs/rules.md Endpoints 8). */
  releasePhase: boolean;
  /** Release this one rolled back to, if a rollback. */
  rollbackOf: number | null;
  /** The app's config vars when the release was made (absent in releases of older builds). */
  config?: Record<string, string>;
}

/** One formation entry (docs/platform-conventions.md 3.3). Key: `appId␟type`. */
export interface FormationRecord {
  id: string;
  appId: string;
  type: string;
  command: string;
  quantity: number;
  size: string;
  /** Image id currently released to this type, or null. */
  image: string | null;
  createdAt: number;
  updatedAt: number;
}
