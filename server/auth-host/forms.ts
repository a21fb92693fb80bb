/**
 * Form bodies (`application/x-www-form-urlencoded`, HTML 4.01 §17.13.4) of the auth host's
 * pages and token endpoint: a size limit, the content type, and single-valued fields
 * (RFC 6749 §3.1, §3.2: parameters MUST NOT be repeated).
 */
import type { Exchange } from '../http/exchange.js';
import { fail } from '../../engine/errors.js';

/** Largest form body, bytes (sign-in, consent, token requests are far smaller). */
export const MAX_FORM_BODY = 16 * 1024;

/**
 * Reads a form body.
 * @throws BAD_REQUEST for another content type or a field with U+0000 (%00), which no record
 *         may hold (engine/storage/metadata.ts `storableString`); BODY_TOO_LARGE past
 *         `MAX_FORM_BODY`.
 */
export async function readForm(ex: Exchange): Promise<URLSearchParams> {
  const type = ex.header('content-type').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    throw fail('BAD_REQUEST', `The body must be application/x-www-form-urlencoded, not "${type.slice(0, 80) || 'missing'}".`);
  }
  const raw = await ex.body(MAX_FORM_BODY);
  const params = new URLSearchParams(raw.toString('utf8'));
  // Percent-decoding turns bad sequences into U+FFFD, so NUL is the one unstorable character.
  for (const [name, value] of params) {
    if (name.includes('\0') || value.includes('\0')) throw fail('BAD_REQUEST', 'Form fields must not contain U+0000 (%00).');
  }
  return params;
}

/**
 * A single-valued field.
 * @returns the value, or null when absent.
 * @throws BAD_REQUEST when the field is repeated.
 */
export function field(params: URLSearchParams, name: string): string | null {
  const all = params.getAll(name);
  if (all.length > 1) throw fail('BAD_REQUEST', `The parameter ${name} must not be repeated.`);
  return all.length === 0 ? null : all[0]!;
}
