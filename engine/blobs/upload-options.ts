/** Options of the upload service (uploads.ts `Uploads`), set by the server from its settings. */
import type { UploadMemory } from './upload-memory.js';
import type { BodyLanes } from './body-lanes.js';
import type { AppNameRef } from '../registry/rename.js';

/** Options of the upload service. */
export interface UploadOptions {
  /** Sessions untouched for this long are reaped (ms). Distribution's default is 168 h; ours 24 h. */
  staleAfterMs: number;
  /** Open sessions (created, not yet completed or cancelled) one account may have; default 64. */
  maxSessionsPerAccount?: number;
  /** Global budget of upload buffer memory; default unlimited (the server passes SLIPWAY_UPLOAD_MEMORY). */
  memory?: UploadMemory;
  /** How many bodies are read at full speed at once (body-lanes.ts; the server's upload.lanes); default: no lanes. */
  lanes?: BodyLanes;
  /** This node's name (node-name.ts; the server's SLIPWAY_NODE_NAME, as its S3 backend's); default '' (none). */
  node?: string;
  /** Other nodes' sessions idle this long are reaped by `peers.reap` (ms); default 2 × `staleAfterMs`. */
  peerStaleAfterMs?: number;
  /**
   * The record naming the app that holds an app name now (the platform's, engine/platform/app-names.ts),
   * read in a commit's transaction: the blob is linked into the session's repository only while
   * the session's app still holds the name (an app renamed meanwhile: the client pushes again
   * under the new name). Absent (engine tests): always linked.
   */
  appNameRef?: AppNameRef;
}

/** Default of `UploadOptions.maxSessionsPerAccount`. */
export const DEFAULT_SESSIONS_PER_ACCOUNT = 64;
