/**
 * The oauth domain's keyspaces: OAuth clients, authorization codes, auth-host sign-in sessions, sign-in state,
 * browser logins of the platform CLI and claimed one-time dashboard forms. Only modules of engine/oauth/ may import this
 * file (test/engine/import-rules.test.ts); other domains call this domain's service functions.
 * Names are the LMDB database names (docs/storage.md).
 */
import { keyspace } from '../storage/metadata.js';
import type { ClientRecord, AuthorizationCodeRecord, CliLoginRecord, SignInState, WebSessionRecord } from './records.js';

/** OAuth client id → client record (the secret only as a hash). */
export const clients = keyspace<ClientRecord>('oauth', 'clients');
/** `owner account id␟client id` → created at (ms). */
export const clientsByOwner = keyspace<number>('oauth', 'clients-by-owner');
/** sha256 hex of an authorization code → its record (schema 7; before, the `grants` database). */
export const authorizationCodes = keyspace<AuthorizationCodeRecord>('oauth', 'authorization-codes');
/** sha256 hex of a session cookie value → auth-host sign-in session. */
export const webSessions = keyspace<WebSessionRecord>('oauth', 'web-sessions');
/** normalised e-mail → failed sign-in count, lockout and last TOTP step. */
export const signIns = keyspace<SignInState>('oauth', 'sign-ins');
/** login id (random, 256 bits) → browser login of the platform CLI, kept until `CLI_LOGIN_MEMORY_MS` after its expiry. */
export const cliLogins = keyspace<CliLoginRecord>('oauth', 'cli-logins');
/** sha256 hex of a dashboard form's `_once` value → when it was claimed (ms), engine/oauth/once-forms.ts. */
export const onceForms = keyspace<number>('oauth', 'once-forms');
