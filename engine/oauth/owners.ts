/**
 * Who may own a web-flow authorization (docs/rules.md Endpoints 1 "team-owned result", Authentication
 * 8-9): the signed-in user, or one of the teams they administer. Teams arrive with the team
 * issue; until then `NO_TEAMS` is wired in and the consent page offers only the personal
 * account. The team issue supplies a `TeamDirectory` reading its own records; nothing else in
 * the web flow changes (the chosen team id travels on the code to the authorization's teamId).
 */

/** A team the user may choose on the consent page. */
export interface TeamChoice {
  id: string;
  name: string;
}

export interface TeamDirectory {
  /** Teams whose admin `accountId` is: the only teams they may pick (docs/rules.md Authentication 9). */
  adminTeamsOf(accountId: string): Promise<TeamChoice[]>;
}

/** The directory before teams exist: nobody administers a team. */
export const NO_TEAMS: TeamDirectory = { adminTeamsOf: async () => [] };

/** The value of the consent form's owner field for the personal account. */
export const PERSONAL_OWNER = 'personal';

/**
 * Resolves the owner field of the consent form.
 * @returns null for the personal account, the team id for a team, undefined when the value is
 *          not one the user may choose.
 */
export async function resolveOwner(teams: TeamDirectory, accountId: string, value: string): Promise<string | null | undefined> {
  if (value === '' || value === PERSONAL_OWNER) return null;
  return (await teams.adminTeamsOf(accountId)).find((t) => t.id === value)?.id;
}
