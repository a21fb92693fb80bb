/**
 * Repository names and references. A repository is `<app>/<process-type>` (docs/rules.md
 * Resources 5, the image's registry name); each component must also satisfy the distribution
 * spec's name grammar.
 */
import { fail } from '../errors.js';
import { parseDigest, type Digest } from '../digest.js';
import { checkIdentifier } from '../identifiers.js';

/** Distribution spec path component. */
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
/** Platform app name (reference: app.name pattern). */
export const APP_NAME = /^[a-z][a-z0-9-]{1,28}[a-z0-9]$/;
/** Platform process type (reference: formation.type), restricted to the distribution grammar. */
const PROCESS_TYPE = /^[a-z0-9][a-z0-9_-]{0,127}$/;
/** Distribution spec tag grammar. */
const TAG = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export interface RepositoryName {
  name: string;
  app: string;
  processType: string;
}

/** Valid names parsed so far (a pure function of the name; bounded: cleared when full). */
const parsedNames = new Map<string, Readonly<RepositoryName>>();
const PARSED_NAMES_KEPT = 4096;

/**
 * Parses `<app>/<process-type>`. Every registry request of a repository parses its name, so
 * valid names are kept (the same frozen object is returned for the same name; invalid names
 * are checked each time and never kept).
 * @throws NAME_INVALID with a message saying which rule the name breaks.
 */
export function parseRepositoryName(name: string): Readonly<RepositoryName> {
  let parsed = parsedNames.get(name);
  if (parsed === undefined) {
    parsed = Object.freeze(checkRepositoryName(name));
    if (parsedNames.size >= PARSED_NAMES_KEPT) parsedNames.clear();
    parsedNames.set(name, parsed);
  }
  return parsed;
}

/** `parseRepositoryName` without the memory. */
function checkRepositoryName(name: string): RepositoryName {
  checkIdentifier('repository', name, 'NAME_INVALID');
  const parts = name.split('/');
  if (!parts.every((p) => COMPONENT.test(p))) {
    throw fail('NAME_INVALID', `invalid repository name "${clip(name)}": use lowercase letters, digits and separators`, { name: clip(name) });
  }
  if (parts.length !== 2) {
    throw fail('NAME_INVALID', `invalid repository name "${clip(name)}": repositories are named <app>/<process-type>, for example myapp/web`, { name: clip(name) });
  }
  const [app, processType] = parts as [string, string];
  if (!APP_NAME.test(app)) throw fail('NAME_INVALID', `invalid repository name "${name}": "${app}" is not a valid app name`, { name });
  if (!PROCESS_TYPE.test(processType)) throw fail('NAME_INVALID', `invalid repository name "${name}": "${processType}" is not a valid process type`, { name });
  return { name, app, processType };
}

/** True when `s` is a valid tag. */
export function isTag(s: string): boolean {
  return TAG.test(s);
}

function clip(s: string): string {
  return s.length > 100 ? s.slice(0, 100) + '…' : s;
}

/**
 * A manifest reference: a tag or a digest (distribution spec "reference").
 * @throws DIGEST_INVALID for a malformed digest, MANIFEST_INVALID for anything else malformed.
 */
export function parseReference(reference: string): { tag: string } | { digest: Digest } {
  if (isTag(reference)) return { tag: reference };
  if (reference.includes(':')) return { digest: parseDigest(reference) };
  throw fail('MANIFEST_INVALID', `invalid reference "${clip(reference)}": use a tag ([A-Za-z0-9_][A-Za-z0-9._-]{0,127}) or a sha256 digest`);
}
