/**
 * The S3 writer's share of the upload memory budget, kept apart from s3-writer.ts so that
 * configuration checks can use it without loading the AWS SDK (a filesystem-only node never
 * loads it).
 */
import { BUFFER_BYTES, POOL_BUFFERS } from './writer.js';

/** Budget (bytes) that part buffers leave free for the receive buffers of the appends in progress (one full pool). */
export const PART_HEADROOM = POOL_BUFFERS * BUFFER_BYTES;
