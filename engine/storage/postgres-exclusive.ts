/**
 * `exclusive` of the metadata contract on PostgreSQL: a session-level advisory lock
 * (`pg_try_advisory_lock(classid, objid)`) taken on a connection of its own — not a pooled one,
 * so a long job holds no pool slot and the pool can never starve the lock's release — held while
 * the job runs and released by closing that connection when it settles. PostgreSQL releases a
 * session's advisory locks when the session ends, so a node that dies (or whose connection
 * breaks) frees the lock for the others without any timeout of ours.
 *
 * A broken lock connection is noticed by the driver's error/end events and by a heartbeat
 * (`SELECT 1` every `heartbeatMs`): the job's AbortSignal then aborts.
 */
import pg from 'pg';
import { checkLockName, StoreUnavailableError, type ExclusiveOptions, type ExclusiveOutcome } from './metadata.js';
import { translate } from './postgres-errors.js';

/** classid of Slipway's advisory locks: "slip" in ASCII (fits a positive int4). */
const LOCK_CLASS = 0x736c6970;

/** objid of lock `name`: 32-bit FNV-1a of its UTF-8 bytes, as a signed int4. */
export function lockObjectId(name: string): number {
  let h = 0x811c9dc5;
  for (const b of Buffer.from(name)) h = Math.imul(h ^ b, 0x01000193);
  return h | 0;
}

/** Connection settings of a lock connection (the pool's, minus pooling). */
export interface LockConnection {
  connectionString: string;
  connectTimeoutMs: number;
  statementTimeoutMs: number;
  /** How often the held lock's connection is checked (ms). */
  heartbeatMs: number;
  /** How often a waiting `exclusive` asks again (ms). */
  pollMs: number;
}

/** Runs `fn` under the advisory lock `name` (see the top of this file and MetadataStore.exclusive). */
export async function runExclusive<T>(c: LockConnection, name: string, fn: (signal: AbortSignal) => Promise<T>, opts: ExclusiveOptions = {}): Promise<ExclusiveOutcome<T>> {
  checkLockName(name);
  const lost = new AbortController();
  const loseLock = (why: string) => {
    if (!lost.signal.aborted) lost.abort(new StoreUnavailableError(`the connection holding lock ${name} ended: ${why}`));
  };
  const client = new pg.Client({
    connectionString: c.connectionString,
    connectionTimeoutMillis: c.connectTimeoutMs,
    statement_timeout: c.statementTimeoutMs,
    query_timeout: c.statementTimeoutMs + 1000,
    application_name: `slipway-lock-${name}`,
    keepAlive: true,
  });
  client.on('error', (e) => loseLock(e.message));
  client.on('end', () => loseLock('closed'));
  let heartbeat: NodeJS.Timeout | undefined;
  try {
    try {
      await client.connect();
      for (;;) {
        const res = await client.query('SELECT pg_try_advisory_lock($1, $2) AS locked', [LOCK_CLASS, lockObjectId(name)]);
        if (res.rows[0].locked === true) break;
        if (!opts.wait) return { ran: false };
        await new Promise((r) => setTimeout(r, c.pollMs * (0.5 + Math.random())));
      }
    } catch (e) {
      throw translate(e);
    }
    heartbeat = setInterval(() => {
      client.query('SELECT 1').catch((e: Error) => loseLock(e.message));
    }, c.heartbeatMs);
    heartbeat.unref();
    return { ran: true, value: await fn(lost.signal) };
  } finally {
    clearInterval(heartbeat);
    // Ending the session releases its advisory locks.
    await client.end().catch(() => {});
  }
}
