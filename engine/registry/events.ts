/**
 * The registry's `registry:image` events for the transactional outbox (engine/webhooks/outbox.ts;
 * docs/webhooks.md "Entities"): a manifest pushed (`create`, with the tag it was pushed under)
 * or a manifest or tag deleted (`destroy`), recorded in the transaction that made the change.
 */
import type { MetadataTransaction } from '../storage/metadata.js';
import { recordEvent } from '../webhooks/outbox.js';

/** What a `registry:image` event carries besides the repository. */
export interface ImageEventData {
  /** The manifest digest. */
  digest: string;
  /** The tag pushed or deleted, or null (pushed or deleted by digest). */
  tag: string | null;
  /** The image id (config digest) when known. */
  configDigest: string | null;
  mediaType: string | null;
}

/**
 * Records a `registry:image` event of the app owning `repository` (`<app>/<process type>`).
 * @param id chosen before `transact` (the body may run again)
 */
export function recordImageEvent(tx: MetadataTransaction, id: string, action: 'create' | 'destroy', appId: string, repository: string, image: ImageEventData, actorId: string | null, now: number): void {
  recordEvent(tx, {
    id, entity: 'registry:image', action, appId, appName: repository.split('/')[0] ?? null, actorId,
    data: { repository, ...image }, previousData: null, createdAt: now,
  });
}
