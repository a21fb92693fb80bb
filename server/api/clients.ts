/**
 * OAuth clients (docs/rules.md Resources 1; docs/platform-conventions.md 2.4): POST/GET /oauth/clients,
 * GET/PATCH/DELETE /oauth/clients/{id}, POST /oauth/clients/{id}/actions/rotate-credentials.
 * Info is public (the consent page's data, no secret); the rest is the owner's, global scope.
 * Only the operator account may set `trusted` (first-party clients skip consent).
 */
import type { ApiCall, ApiContext } from './context.js';
import { principalOf } from './authenticate.js';
import { readJson, reply } from './respond.js';
import { paginate, parseRange } from './range.js';
import { clientJson } from './serialize-oauth.js';
import { fail } from '../../engine/errors.js';
import type { ClientFields } from '../../engine/oauth/clients.js';
import type { ClientRecord } from '../../engine/oauth/records.js';

const RANGES = ['id'] as const;

function notFound(): never {
  throw fail('NOT_FOUND', "Couldn't find that OAuth client.", { resource: 'client' });
}

/** Client `id` when `accountId` owns it. @throws NOT_FOUND otherwise. */
export async function ownedClient(ctx: ApiContext, accountId: string, id: string): Promise<ClientRecord> {
  const c = await ctx.oauth.clients.get(id);
  if (!c || c.ownerId !== accountId) notFound();
  return c;
}

function owned(ctx: ApiContext, call: ApiCall): Promise<ClientRecord> {
  return ownedClient(ctx, principalOf(call).accountId, call.params.id!);
}

/**
 * The writable fields of a body (`name`, `redirect_uri`, `trusted`) sent by `accountId`.
 * @throws DENIED when a non-operator sets trusted.
 */
export async function clientFields(ctx: ApiContext, accountId: string, body: Record<string, unknown>): Promise<ClientFields> {
  if (body.trusted !== undefined && body.trusted !== false && !(await ctx.accounts.get(accountId))?.operator) {
    throw fail('DENIED', 'Only the operator account can mark a client trusted (first-party).');
  }
  return { name: body.name, redirectUri: body.redirect_uri, trusted: body.trusted };
}

function fields(ctx: ApiContext, call: ApiCall, body: Record<string, unknown>): Promise<ClientFields> {
  return clientFields(ctx, principalOf(call).accountId, body);
}

/** POST /oauth/clients {name, redirect_uri, trusted?} → 201 with the secret. */
export async function createClient(ctx: ApiContext, call: ApiCall): Promise<void> {
  const body = await readJson(call.ex);
  const { client, secret } = await ctx.oauth.clients.create(principalOf(call).accountId, await fields(ctx, call, body));
  reply(ctx, call, 201, clientJson(client, secret), { lastModified: client.updatedAt });
}

/** GET /oauth/clients: the caller's clients, Range by id. */
export async function listClients(ctx: ApiContext, call: ApiCall): Promise<void> {
  const spec = parseRange(call.ex.header('range'), RANGES);
  const page = paginate(await ctx.oauth.clients.ownedBy(principalOf(call).accountId), spec, RANGES, (c) => c.id);
  const lastModified = page.items.reduce((m, c) => Math.max(m, c.updatedAt), 0) || undefined;
  reply(ctx, call, page.status, page.items.map((c) => clientJson(c)), { headers: page.headers, lastModified });
}

/** GET /oauth/clients/{id}: public, never the secret. */
export async function getClient(ctx: ApiContext, call: ApiCall): Promise<void> {
  const c = (await ctx.oauth.clients.get(call.params.id!)) ?? notFound();
  reply(ctx, call, 200, clientJson(c), { lastModified: c.updatedAt });
}

/** PATCH /oauth/clients/{id} {name?, redirect_uri?, trusted?} */
export async function updateClient(ctx: ApiContext, call: ApiCall): Promise<void> {
  const c = await owned(ctx, call);
  const next = await ctx.oauth.clients.update(c, await fields(ctx, call, await readJson(call.ex)));
  reply(ctx, call, 200, clientJson(next), { lastModified: next.updatedAt });
}

/** DELETE /oauth/clients/{id}: also revokes every authorization issued to it. */
export async function deleteClient(ctx: ApiContext, call: ApiCall): Promise<void> {
  const c = await owned(ctx, call);
  await ctx.oauth.clients.remove(c);
  reply(ctx, call, 200, clientJson(c), { lastModified: ctx.clock.now() });
}

/** POST /oauth/clients/{id}/actions/rotate-credentials → 200 with the new secret; the old one fails at once. */
export async function rotateClientSecret(ctx: ApiContext, call: ApiCall): Promise<void> {
  const { client, secret } = await ctx.oauth.clients.rotate(await owned(ctx, call));
  reply(ctx, call, 200, clientJson(client, secret), { lastModified: client.updatedAt });
}
