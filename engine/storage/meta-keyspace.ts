/**
 * The store's own keyspace `meta`: the schema version (`schema`) and one-off flags set by
 * migrations (for example the blobs domain's legacy-verification marker). Owned by the storage
 * layer; a domain keeps its own flags under a key named after itself.
 */
import { keyspace } from './metadata.js';

/** `schema` → schema version (number); other keys: migration flags. */
export const meta = keyspace<unknown>('meta', 'meta');
