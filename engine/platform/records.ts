/** Platform records (see engine/store.ts). */

/** App generations (reference 3.2): only the older one, cedar, may use the registry (spec 5). */
export type Generation = 'cedar' | 'fir';

export interface AppRecord {
  id: string;
  name: string;
  /** Owning account for personal apps. */
  ownerId: string;
  /** Owning team for team apps (issue 4), else null. */
  teamId: string | null;
  generation: Generation;
  /** Current stack name, e.g. `heroku-24` or `container`. */
  stack: string;
  buildStack: string;
  /** Isolated space name, null = shared runtime. */
  space: string | null;
  createdAt: number;
  updatedAt: number;
}
