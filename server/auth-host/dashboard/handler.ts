/**
 * The sequence every dashboard page and form handler follows, written once:
 * - a page (GET): the signed-in person, or a redirect to sign-in (`signedInPage`); the access
 *   rule of the API route the page mirrors (`mirror`); then the page is rendered;
 * - a form (POST): the CSRF and session checks and the parsed form (`submitted`); the access rule
 *   of the API route the action performs; then the action, whose request error (4xx) re-renders
 *   the page with the error next to its field and its status (`attempt`), and whose success
 *   redirects with a notice (`done`) or shows what it made.
 */
import type { Exchange } from '../../http/exchange.js';
import type { AuthContext } from '../context.js';
import { attempt, mirror, signedInPage, submitted, type FormState, type Signed, type Submitted } from './page.js';

/** Route parameters of a dashboard path (`:app`, `:id`, …). */
export type Params = Record<string, string>;

/** A dashboard route's handler, as the auth host's router calls it. */
export type DashboardHandler = (ctx: AuthContext, ex: Exchange, params: Params) => Promise<void>;

/**
 * A page handler: signs the person in (or redirects to sign-in and stops), applies the access
 * rule of `route` (`METHOD /path/pattern` of the platform API; none for pages of one's own
 * account), then calls `render`.
 * @throws DENIED (403 page) when the person's session may not use `route`; what `render` throws
 */
export function showPage(route: string | null, render: (ctx: AuthContext, s: Signed, params: Params) => Promise<void> | void): DashboardHandler {
  return async (ctx, ex, params) => {
    const s = await signedInPage(ctx, ex, params);
    if (!s) return;
    if (route !== null) mirror(s, route);
    await render(ctx, s, params);
  };
}

/**
 * A form handler: reads the post after its CSRF and session checks, applies the access rule of
 * `route` (the platform API route the action performs), then calls `act`.
 * @throws DENIED (403 page) for a missing or foreign CSRF token or a route the session may not
 *   use; UNAUTHORIZED (401 page) when the session has ended; what `act` throws
 */
export function submitForm(route: string, act: (ctx: AuthContext, s: Submitted, params: Params) => Promise<void>): DashboardHandler {
  return async (ctx, ex, params) => {
    const s = await submitted(ctx, ex, params);
    mirror(s, route);
    await act(ctx, s, params);
  };
}

/** A form's name (which form on the page is refused), its fields and the values shown again. */
export interface FormInput {
  form: string;
  fields: readonly string[];
  values: Record<string, string>;
}

/**
 * Runs a form's action (`attempt`): on a request error (4xx) calls `rerender` with its status and
 * the form state (the error next to its field) and answers undefined; on success answers the
 * action's value (the caller redirects or shows it). Other errors propagate (the error page).
 */
export async function actOrRerender<T>(input: FormInput, run: () => Promise<T>, rerender: (status: number, state: FormState) => Promise<void> | void): Promise<{ value: T } | undefined> {
  const r = await attempt(input.form, input.fields, input.values, run);
  if (r.ok) return { value: r.value };
  await rerender(r.status, r.state);
  return undefined;
}
