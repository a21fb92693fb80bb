/**
 * Content digests, as the OCI image spec defines them: `algorithm:encoded`. Only sha256 is
 * accepted for storage (distribution spec, "Digests"); the syntax check covers every algorithm
 * so that a well-formed but unsupported digest gets a precise message.
 */
import { createHash } from 'node:crypto';
import { fail } from './errors.js';
import { checkIdentifier } from './identifiers.js';

/** A validated `sha256:<64 lowercase hex>` string. */
export type Digest = string & { readonly __brand: 'Digest' };

const SHA256 = /^sha256:[a-f0-9]{64}$/;
const ANY_DIGEST = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$/;

/** True when `s` is a sha256 digest in canonical form. */
export function isDigest(s: string): s is Digest {
  return SHA256.test(s);
}

/**
 * Parses a digest given by a client.
 * @throws SlipwayError DIGEST_INVALID when malformed or not sha256.
 */
export function parseDigest(s: string): Digest {
  if (SHA256.test(s)) return s as Digest;
  checkIdentifier('digest', s, 'DIGEST_INVALID');
  if (ANY_DIGEST.test(s)) throw fail('DIGEST_INVALID', `unsupported digest algorithm in "${clip(s)}": only sha256 is supported`, { digest: clip(s) });
  throw fail('DIGEST_INVALID', `invalid digest "${clip(s)}": expected sha256:<64 hex characters>`, { digest: clip(s) });
}

/** sha256 digest of bytes held in memory (manifests, configs: small objects only). */
export function digestOf(bytes: Uint8Array): Digest {
  return ('sha256:' + createHash('sha256').update(bytes).digest('hex')) as Digest;
}

/** The hex part of a digest, used for blob file names. */
export function hexOf(d: Digest): string {
  return d.slice(7);
}

function clip(s: string): string {
  return s.length > 100 ? s.slice(0, 100) + '…' : s;
}
