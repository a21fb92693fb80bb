/**
 * The dashboard's home (GET /): the apps the person may see, grouped by owner (their own, each of
 * their teams, then apps others shared with them), with what runs in each and its current release;
 * the same apps and access rule as GET /apps (visibleApps).
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import { visibleApps } from '../../api/apps.js';
import { allowed, mirror, noticeOf, sendDashboard, signedInPage } from './page.js';
import { summarize, type AppSummary } from './app-summary.js';

/** A group of apps on the home page. */
interface Group { heading: string; href: string; apps: AppSummary[]; empty: string }

export async function showHome(ctx: AuthContext, ex: Exchange, params: Record<string, string>): Promise<void> {
  const s = await signedInPage(ctx, ex, params);
  if (!s) return;
  mirror(s, 'GET /apps');
  const apps = await Promise.all((await visibleApps(ctx, s.principal)).map((a) => summarize(ctx, a).then((sum) => ({ record: a, sum }))));
  const teams = await ctx.teams.teamsOf(s.account.id);
  const groups: Group[] = [{
    heading: 'Your apps', href: '/apps', empty: 'You have no personal apps yet.',
    apps: apps.filter((a) => !a.record.teamId && a.record.ownerId === s.account.id).map((a) => a.sum),
  }];
  for (const { team } of teams) {
    groups.push({ heading: `Team ${team.name}`, href: `/teams/${team.name}`, empty: `Team ${team.name} has no apps yet.`, apps: apps.filter((a) => a.record.teamId === team.id).map((a) => a.sum) });
  }
  const listed = new Set(groups.flatMap((g) => g.apps.map((a) => a.name)));
  const shared = apps.filter((a) => !listed.has(a.record.name)).map((a) => a.sum);
  if (shared.length) groups.push({ heading: 'Shared with you', href: '/apps', empty: '', apps: shared });
  sendDashboard(ctx, s, 200, 'home', 'home', {
    title: 'Overview', notice: noticeOf(ex), email: s.account.email, groups, total: apps.length, canCreate: allowed(s, 'POST /apps'),
  });
}
