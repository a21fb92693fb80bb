/**
 * The request and actor records of registry notifications (distribution `RequestRecord` and
 * `ActorRecord`: engine/notifications/envelope.ts), taken from a registry request.
 */
import type { Exchange } from '../http/exchange.js';
import type { RegistryContext } from '../registry/context.js';
import type { Caller } from '../registry/access.js';
import type { Digest } from '../../engine/digest.js';
import { isDigest } from '../../engine/digest.js';
import type { EventAction, EventOrigin, RequestRecord } from '../../engine/notifications/envelope.js';

/** The client's address: the source behind trusted proxies (server/http/client-address.ts), else the socket peer. */
function addrOf(ctx: RegistryContext, ex: Exchange): string {
  return ctx.sources ? ctx.sources.of(ex.remoteAddress, ex.header('x-forwarded-for')) : ex.remoteAddress;
}

function requestOf(ctx: RegistryContext, ex: Exchange): RequestRecord {
  return { id: ex.id, addr: addrOf(ctx, ex), host: ex.header('host'), method: ex.method, useragent: ex.header('user-agent') };
}

/**
 * Who and what caused a change, for the notification of `action`; undefined when no endpoint
 * wants that action (then nothing is read: the account's e-mail costs a read).
 */
export async function originOf(ctx: RegistryContext, ex: Exchange, caller: Caller | null, action: EventAction): Promise<EventOrigin | undefined> {
  if (!ctx.registry.notifications?.wants(action)) return undefined;
  const request = requestOf(ctx, ex);
  const accountId = caller?.principal.accountId;
  const email = accountId ? (await ctx.accounts.get(accountId))?.email : undefined;
  return { request, actor: email === undefined ? {} : { name: email }, ...(accountId ? { accountId } : {}) };
}

/**
 * Notes a manifest GET answered with its content (a HEAD or a 304 transfers nothing and is not a
 * pull) for the `pull` notification: buffered, no I/O here (engine/notifications/pull-buffer.ts).
 * Call before the response is sent (uWebSockets gives the peer address only until then).
 */
export function notePull(ctx: RegistryContext, ex: Exchange, caller: Caller | null, repository: string, reference: string, digest: Digest, mediaType: string, size: number): void {
  const n = ctx.notifications;
  if (!n || ex.method !== 'GET' || !n.wants('pull')) return;
  const r = requestOf(ctx, ex);
  n.pulled({
    repository, digest, mediaType, size, ...(isDigest(reference) ? {} : { tag: reference }), at: ctx.clock.now(),
    requestId: r.id, addr: r.addr ?? '', host: r.host ?? '', method: r.method, useragent: r.useragent, accountId: caller?.principal.accountId ?? '',
  });
}
