/**
 * Sign-in sessions of the auth host. The browser holds a random 256-bit value in an HttpOnly
 * cookie; only its sha256 is stored, so a copy of the database cannot be replayed as a cookie.
 * Sessions end at sign-out or `WEB_SESSION_TTL_MS` (12 h) after sign-in.
 */
import type { Store } from '../store.js';
import type { Clock } from '../clock.js';
import { hashToken, newId, newSecret } from '../identity/tokens.js';
import type { WebSessionRecord } from './records.js';
import { WEB_SESSION_TTL_MS } from './limits.js';

export class WebSessions {
  constructor(readonly store: Store, readonly clock: Clock) {}

  /** Starts a session for `accountId`. @returns the cookie value (shown once) and the record. */
  async create(accountId: string): Promise<{ value: string; session: WebSessionRecord }> {
    const value = newSecret();
    const now = this.clock.now();
    const session: WebSessionRecord = { id: newId(), accountId, createdAt: now, expiresAt: now + WEB_SESSION_TTL_MS };
    await this.store.env.transaction(() => this.store.webSessions.put(hashToken(value), session));
    return { value, session };
  }

  /** The live session for a cookie value; undefined when unknown, ended or expired. Single LMDB read. */
  resolve(value: string): WebSessionRecord | undefined {
    if (!value) return undefined;
    const s = this.store.webSessions.get(hashToken(value));
    return s && this.clock.now() < s.expiresAt ? s : undefined;
  }

  /** Ends the session (sign-out); unknown values are ignored. */
  async destroy(value: string): Promise<void> {
    if (!value) return;
    await this.store.env.transaction(() => this.store.webSessions.remove(hashToken(value)));
  }

  /** Deletes expired sessions. @returns how many. */
  async prune(): Promise<number> {
    const now = this.clock.now();
    let n = 0;
    await this.store.env.transaction(() => {
      for (const { key, value } of this.store.webSessions.getRange()) {
        if (now >= value.expiresAt) {
          this.store.webSessions.remove(key);
          n++;
        }
      }
    });
    return n;
  }
}
