/**
 * Sign-in sessions of the auth host. The browser holds a random 256-bit value in an HttpOnly
 * cookie; only its sha256 is stored (keyspace `web-sessions`, docs/storage.md), so a copy of the
 * database cannot be replayed as a cookie. Sessions end at sign-out or `WEB_SESSION_TTL_MS`
 * (12 h) after sign-in.
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { hashToken, newId, newSecret } from '../identity/tokens.js';
import type { WebSessionRecord } from './records.js';
import { webSessions } from './keyspaces.js';
import { WEB_SESSION_TTL_MS } from './limits.js';
import { pruneKeyspace } from './prune.js';

/** Auth-host sign-in sessions over the metadata store. */
export class WebSessions {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /**
   * Starts a session for `accountId`, limited to `scope` when given (a read-only sign-in).
   * @returns the cookie value (shown once) and the record.
   */
  async create(accountId: string, scope?: string[]): Promise<{ value: string; session: WebSessionRecord }> {
    const value = newSecret();
    const now = this.clock.now();
    const session: WebSessionRecord = { id: newId(), accountId, createdAt: now, expiresAt: now + WEB_SESSION_TTL_MS, ...(scope ? { scope } : {}) };
    await this.metadata.transact((tx) => tx.put(webSessions, hashToken(value), session));
    return { value, session };
  }

  /** The live session for a cookie value; undefined when unknown, ended or expired. One read, no transaction. */
  async resolve(value: string): Promise<WebSessionRecord | undefined> {
    if (!value) return undefined;
    const s = await this.metadata.get(webSessions, hashToken(value));
    return s && this.clock.now() < s.expiresAt ? s : undefined;
  }

  /** Ends the session (sign-out); unknown values are ignored. */
  async destroy(value: string): Promise<void> {
    if (!value) return;
    await this.metadata.transact((tx) => tx.remove(webSessions, hashToken(value)));
  }

  /** Deletes expired sessions. @returns how many. */
  async prune(): Promise<number> {
    const now = this.clock.now();
    return pruneKeyspace(this.metadata, webSessions, (s) => now >= s.expiresAt);
  }
}
