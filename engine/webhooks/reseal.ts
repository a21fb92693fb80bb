/**
 * App webhooks' sealed values for a server key rotation (docs/cluster.md "Rotating the key";
 * engine/identity/key-check.ts `resealSecrets`): the signing secret and the `Authorization`
 * value of each webhook are sealed under the server key (app-webhooks.ts), so once a rotation
 * has moved the cluster to a new key they are re-sealed under it with the second factors, before
 * the rotation is marked done and the old key may be dropped. Deliveries keep verifying with the
 * secret the receiver was given.
 */
import type { SealedValues } from '../identity/key-check.js';
import type { WebhookRecord } from './records.js';
import { appWebhooks } from './keyspaces.js';

/** The sealed values of app webhooks: `secretSealed` and `authorizationSealed` (null when none). */
export const WEBHOOK_SECRETS: SealedValues<WebhookRecord> = {
  ks: appWebhooks,
  sealed: (w) => [w.secretSealed, w.authorizationSealed],
  resealed: (w, reseal) => ({ ...w, secretSealed: reseal(w.secretSealed), authorizationSealed: w.authorizationSealed === null ? null : reseal(w.authorizationSealed) }),
};
