/**
 * What the overview and the apps list show of an app: its owner in words (the owning account's
 * e-mail, or the team's name for a team app), what runs (process types with quantity and dyno
 * size) and its current release.
 */
import type { AuthContext } from '../context.js';
import type { AppRecord } from '../../../engine/platform/records.js';
import { when } from './page.js';

/** An app's owner as a person reads it. */
export interface Owner {
  /** 'team' for a team app, else 'account'. */
  kind: 'team' | 'account';
  /** The team's name, or the owning account's e-mail. */
  name: string;
}

/** The owner of `app`: its team's name, else the owning account's e-mail (its id if the account is gone). */
export async function ownerOf(ctx: AuthContext, app: AppRecord): Promise<Owner> {
  if (app.teamId) return { kind: 'team', name: (await ctx.teams.find(app.teamId))?.name ?? app.teamId };
  return { kind: 'account', name: (await ctx.accounts.get(app.ownerId))?.email ?? app.ownerId };
}

/** One app's row or card. */
export interface AppSummary {
  name: string;
  owner: Owner;
  stack: string;
  /** Process types with what runs: `web: 2 × standard-1X`. */
  processes: Array<{ type: string; quantity: number; size: string }>;
  /** Current release version, 0 when none. */
  release: number;
  /** When and what the current release was ('' when none). */
  released: string;
  releaseDescription: string;
  updated: string;
}

/** The summary of `app` (a formation read and a release read). */
export async function summarize(ctx: AuthContext, app: AppRecord): Promise<AppSummary> {
  const [owner, formation, releases] = await Promise.all([ownerOf(ctx, app), ctx.releases.formation(app.id), ctx.releases.list(app.id)]);
  const version = app.releaseVersion ?? 0;
  const current = releases.find((r) => r.version === version);
  return {
    name: app.name, owner, stack: app.stack,
    processes: formation.map((f) => ({ type: f.type, quantity: f.quantity, size: f.size })),
    release: version, released: when(current?.createdAt), releaseDescription: current?.description ?? '', updated: when(app.updatedAt),
  };
}
