/**
 * CNCF distribution's notification format (distribution `notifications/event.go` and its
 * docs/about/notifications.md "Events" and "Envelope"), so receivers written for distribution's
 * notifications read Slipway's unchanged: a POST whose body is an envelope `{"events": [...]}`
 * with the media type `application/vnd.docker.distribution.events.v1+json` (the media type of
 * distribution 2.x; distribution 3 sends the same envelope as `.v2+json`, which consumers match
 * on the JSON, not the label). Field names and casing are distribution's (`useragent`,
 * `instanceID`, `fromRepository`), and so is which fields a target carries per action:
 * - manifest push and pull: mediaType, size, digest, length (= size, kept for older consumers),
 *   repository, url, and tag when the reference was a tag;
 * - blob mount: mediaType, size, digest, length, repository, fromRepository, url;
 * - delete: repository and the digest (manifest deleted by digest) or the tag (tag deleted).
 * Distribution omits empty fields (`omitempty`), except request `id`, `method` and `useragent`.
 */
import type { Digest } from '../digest.js';

/** The media type of a notification request's body (distribution 2.x `EventsMediaType`). */
export const EVENTS_MEDIA_TYPE = 'application/vnd.docker.distribution.events.v1+json';

/** The media type distribution gives a blob's descriptor when nothing more is known (blob events). */
export const BLOB_MEDIA_TYPE = 'application/octet-stream';

/** What an event reports (distribution `EventAction*`). */
export type EventAction = 'push' | 'pull' | 'delete' | 'mount';

/** Every action, for settings and docs. */
export const EVENT_ACTIONS: readonly EventAction[] = ['push', 'pull', 'delete', 'mount'];

/** What the event is about (distribution `Event.Target`: a descriptor plus where it lives). */
export interface EventTarget {
  mediaType?: string;
  /** Bytes. */
  size?: number;
  digest?: Digest;
  /** Bytes, the same as `size` (distribution keeps it for consumers older than 2.1). */
  length?: number;
  repository: string;
  /** The repository a mounted blob came from (mount only). */
  fromRepository?: string;
  /** Where the content can be fetched: the registry's public URL of the manifest or blob by digest. */
  url?: string;
  tag?: string;
}

/** The HTTP request that caused the event (distribution `RequestRecord`). */
export interface RequestRecord {
  /** The request id Slipway logs and returns as `Request-Id`. */
  id: string;
  /** The client's address (the source behind trusted proxies: docs/faults.md "CLI logins"). */
  addr?: string;
  /** The `Host` the client addressed. */
  host?: string;
  method: string;
  useragent: string;
}

/** Who acted (distribution `ActorRecord`): `name` is the account's e-mail; absent for anonymous pulls. */
export interface ActorRecord {
  name?: string;
}

/** The node that generated the event (distribution `SourceRecord`). */
export interface SourceRecord {
  /** `<node name>:<registry port>` (distribution: host name and port). */
  addr?: string;
  /** A random id of this process, new at every start. */
  instanceID?: string;
}

/** One event (distribution `Event`). */
export interface DistributionEvent {
  /** A UUID, unique per event: receivers de-duplicate redeliveries by it. */
  id: string;
  /** When the change happened, RFC 3339 (UTC, milliseconds). */
  timestamp: string;
  action: EventAction;
  target: EventTarget;
  request: RequestRecord;
  actor: ActorRecord;
  source: SourceRecord;
}

/** A notification request's body (distribution `Envelope`). */
export interface Envelope {
  events: DistributionEvent[];
}

/** Who and what caused an event: built by the server from the request and its caller. */
export interface EventOrigin {
  request: RequestRecord;
  actor: ActorRecord;
  /** The acting account's id: not sent (distribution has no field for it), kept as the webhook event's `actorId`. */
  accountId?: string;
}

/** The fields of a change that a target is made of; the registry's public URL builds `url`. */
export interface EventSubject {
  action: EventAction;
  repository: string;
  /** Absent for a tag deletion. */
  digest?: Digest;
  /** Manifests: the stored media type; blobs: BLOB_MEDIA_TYPE. Absent for deletions. */
  mediaType?: string;
  /** Bytes; absent for deletions. */
  size?: number;
  tag?: string;
  /** Mounts: the repository the blob came from. */
  fromRepository?: string;
  /** What the url points at: a manifest or a blob (absent for deletions, which carry no url). */
  kind?: 'manifest' | 'blob';
}

/**
 * Builds one event in distribution's shape from a change, who caused it and this node.
 * @param registryUrl the registry's public base URL, no trailing slash (`https://registry.example.com`)
 * @param at ms since the epoch
 */
export function eventOf(subject: EventSubject, origin: EventOrigin, source: SourceRecord, registryUrl: string, id: string, at: number): DistributionEvent {
  const target: EventTarget = subject.kind === undefined
    ? { repository: subject.repository, ...(subject.digest ? { digest: subject.digest } : {}) }
    : {
      mediaType: subject.mediaType ?? BLOB_MEDIA_TYPE,
      size: subject.size ?? 0,
      ...(subject.digest ? { digest: subject.digest } : {}),
      length: subject.size ?? 0,
      repository: subject.repository,
      ...(subject.fromRepository ? { fromRepository: subject.fromRepository } : {}),
      url: `${registryUrl}/v2/${subject.repository}/${subject.kind === 'manifest' ? 'manifests' : 'blobs'}/${subject.digest}`,
    };
  if (subject.tag) target.tag = subject.tag;
  return { id, timestamp: new Date(at).toISOString(), action: subject.action, target, request: origin.request, actor: origin.actor, source };

}
