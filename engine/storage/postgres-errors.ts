/**
 * How PostgreSQL driver errors map onto the metadata contract's (engine/storage/metadata.ts):
 * what means "the database is unavailable" (StoreUnavailableError, 503 at the hosts) and what
 * means "run the transaction again".
 */
import { StoreUnavailableError } from './metadata.js';

/** SQLSTATEs that mean "run the transaction again": serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);
/**
 * SQLSTATE classes that mean the database is unavailable rather than the request wrong:
 * 08 connection exception, 53 insufficient resources, 57 operator intervention (shutdown,
 * statement timeout 57014).
 */
const UNAVAILABLE = /^(08|53|57)/;
/** Driver and socket messages of a connection that failed, ended or timed out. */
const UNAVAILABLE_MESSAGE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|timeout|Connection terminated|not queryable|connection error/i;

/** True when the transaction should be run again (SQLSTATE 40001, 40P01). */
export function isRetryable(e: unknown): boolean {
  return RETRYABLE.has((e as { code?: string }).code ?? '');
}

/** Maps driver errors to the contract's: unavailability becomes StoreUnavailableError; others pass. */
export function translate(e: unknown): unknown {
  if (e instanceof StoreUnavailableError) return e;
  const code = (e as { code?: string }).code ?? '';
  const message = (e as Error).message ?? String(e);
  if (UNAVAILABLE.test(code) || UNAVAILABLE_MESSAGE.test(`${code} ${message}`)) {
    return new StoreUnavailableError(`metadata database unavailable: ${message}`, e);
  }
  return e;
}
