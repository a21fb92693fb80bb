/**
 * One-time forms of the auth host's dashboard: a form that shows a secret (a new token, a
 * regenerated key, a client secret) carries a random `_once` value; the first post with it acts,
 * a repeat (the browser re-posting on reload) is refused, so a reload shows no secret and creates
 * nothing. Claimed values live in the metadata store (keyspace `once-forms`, as sha256), so a
 * reload that a load balancer sends to another node is refused the same way; each is forgotten
 * `ONCE_FORM_TTL_MS` after its claim (a form older than that, re-posted, acts again).
 */
import type { MetadataStore } from '../storage/metadata.js';
import type { Clock } from '../clock.js';
import { hashToken, newSecret } from '../identity/tokens.js';
import { onceForms } from './keyspaces.js';
import { pruneKeyspace } from './prune.js';

/** How long a claimed value is remembered, ms (12 hours, the sign-in session's lifetime). */
export const ONCE_FORM_TTL_MS = 12 * 3600_000;

/** What a `_once` value looks like (`newSecret` output, or the older shorter ones). */
const ONCE_VALUE = /^[A-Za-z0-9_-]{20,64}$/;

/** Claimed one-time form values over the metadata store. */
export class OnceForms {
  constructor(readonly metadata: MetadataStore, readonly clock: Clock) {}

  /** A new value for a form. */
  issue(): string {
    return newSecret();
  }

  /**
   * Claims `value` in one transaction.
   * @returns true the first time (cluster-wide, within the TTL), false after, and for a missing or malformed value.
   */
  async claim(value: string | null): Promise<boolean> {
    if (!value || !ONCE_VALUE.test(value)) return false;
    const now = this.clock.now();
    const k = hashToken(value);
    return this.metadata.transact(async (tx) => {
      const at = await tx.get(onceForms, k);
      if (at !== undefined && now - at < ONCE_FORM_TTL_MS) return false;
      tx.put(onceForms, k, now);
      return true;
    });
  }

  /** Forgets values claimed more than `ONCE_FORM_TTL_MS` ago. @returns how many. */
  async prune(): Promise<number> {
    const now = this.clock.now();
    return pruneKeyspace(this.metadata, onceForms, (at) => now - at >= ONCE_FORM_TTL_MS);
  }
}
