/**
 * The identity domain's keyspaces: Accounts, direct and web-flow authorizations, their tokens, when they were last used,
 * the cluster's server-key fingerprint and the shared API rate-limit pools. Only modules of engine/identity/ may import this
 * file (test/engine/import-rules.test.ts); other domains call this domain's service functions.
 * Names are the LMDB database names the data has always had (docs/storage.md).
 */
import { keyspace } from '../storage/metadata.js';
import type { Account, AuthorizationRecord, Bucket, ServerKeyRecord, TokenRecord } from './records.js';

/** account id → account (password only as a hash, second-factor secret sealed). */
export const accounts = keyspace<Account>('identity', 'accounts');
/** normalised e-mail → account id. */
export const accountsByEmail = keyspace<string>('identity', 'accounts-by-email');
/** authorization id → authorization record. */
export const authorizations = keyspace<AuthorizationRecord>('identity', 'authorizations');
/** sha256 hex of a token value → token record. Token values themselves are never stored. */
export const tokens = keyspace<TokenRecord>('identity', 'tokens');
/** `account id␟authorization id` → created at (ms): an account's authorizations. */
export const authorizationsByAccount = keyspace<number>('identity', 'authorizations-by-account');
/** `client id␟authorization id` → created at (ms): web-flow authorizations of a client. */
export const authorizationsByClient = keyspace<number>('identity', 'authorizations-by-client');
/** `team id␟authorization id` → created at (ms): a team's authorizations (revoked ones included). */
export const authorizationsByTeam = keyspace<number>('identity', 'authorizations-by-team');
/** authorization id → when it last authenticated a request (ms; at most once a minute). Absent: never recorded. */
export const authorizationUse = keyspace<number>('identity', 'authorization-use');
/** `current` → the fingerprint of the cluster's server key and its rotation state (engine/identity/key-check.ts). */
export const serverKey = keyspace<ServerKeyRecord>('identity', 'server-key');
/** account id → its API rate-limit bucket on a cluster (engine/identity/shared-rate-limit.ts); the embedded store keeps buckets in memory. */
export const rateLimits = keyspace<Bucket>('identity', 'rate-limits');
