/**
 * Parses and validates a pushed manifest (Docker Image Manifest V2, Schema 2). Anything else is
 * refused with MANIFEST_INVALID and a message naming the supported type: containers/image
 * clients (skopeo, podman, buildah) treat MANIFEST_INVALID as "type rejected" and retry the
 * push converted to v2s2.
 */
import { fail } from '../errors.js';
import { isDigest, type Digest } from '../digest.js';
import type { Descriptor } from './records.js';
import { IMAGE_CONFIG, LAYER_TYPES, MANIFEST_V2S2, REFUSED_TYPES } from './media-types.js';

/** A validated schema 2 manifest's references. */
export interface ParsedManifest {
  config: Descriptor;
  layers: Descriptor[];
  /** Distinct blob digests (config + layers). */
  blobs: Digest[];
  /** The manifest's bytes decoded as UTF-8 (a BOM kept), what the record stores. */
  text: string;
}

/** Decodes UTF-8 strictly: invalid bytes throw instead of becoming U+FFFD; a BOM is kept. */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const SUPPORTED = `only ${MANIFEST_V2S2} (Docker image manifest v2, schema 2) is supported`;

/** Strips parameters and case from a Content-Type value. */
export function baseMediaType(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]!.trim().toLowerCase();
}

/**
 * @param bytes the request body
 * @param contentType the request's Content-Type (may be empty or generic JSON)
 * @throws MANIFEST_INVALID for bytes that are not valid UTF-8 (manifests are JSON, RFC 8259
 *         section 8.1; the record stores them as text), malformed JSON, a refused type, or a
 *         malformed descriptor.
 */
export function parseManifest(bytes: Uint8Array, contentType: string | undefined): ParsedManifest {
  const declared = baseMediaType(contentType);
  refuseType(declared);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw fail('MANIFEST_INVALID', 'manifest is not valid UTF-8 (manifests are JSON, which is UTF-8)');
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw fail('MANIFEST_INVALID', `manifest is not valid JSON: ${(e as Error).message}`);
  }
  if (!isObject(doc)) throw fail('MANIFEST_INVALID', 'manifest must be a JSON object');
  const mediaType = typeof doc.mediaType === 'string' ? doc.mediaType : '';
  refuseType(mediaType);
  if (doc.schemaVersion !== 2) throw fail('MANIFEST_INVALID', `manifest schemaVersion must be 2; ${SUPPORTED}`);
  if (mediaType !== MANIFEST_V2S2) {
    throw fail('MANIFEST_INVALID', `manifest mediaType ${mediaType ? `"${mediaType}"` : 'is missing'}; ${SUPPORTED}`);
  }
  if (declared && declared !== MANIFEST_V2S2 && declared !== 'application/json' && declared !== 'application/octet-stream') {
    throw fail('MANIFEST_INVALID', `Content-Type "${declared}" does not match the manifest; ${SUPPORTED}`);
  }
  const config = descriptor(doc.config, 'config');
  if (config.mediaType !== IMAGE_CONFIG) {
    throw fail('MANIFEST_INVALID', `config mediaType must be ${IMAGE_CONFIG}, got "${config.mediaType}"`);
  }
  if (!Array.isArray(doc.layers)) throw fail('MANIFEST_INVALID', 'manifest layers must be an array');
  const layers = doc.layers.map((l, i) => {
    const d = descriptor(l, `layers[${i}]`);
    if (!LAYER_TYPES.has(d.mediaType)) {
      throw fail('MANIFEST_INVALID', `layers[${i}] has unsupported mediaType "${d.mediaType}"; v2 schema 2 layers are ${[...LAYER_TYPES].join(' or ')}`);
    }
    return d;
  });
  const blobs = [...new Set([config.digest, ...layers.map((l) => l.digest)])];
  return { config, layers, blobs, text };
}

/** What a user of each client passes to push an image as v2 schema 2 instead. */
const CONVERT_HINT = 'push it as a Docker v2 schema 2 manifest: `podman push --format docker`, `buildah push --format docker`, `skopeo copy --format v2s2`, or `docker push`';

function refuseType(t: string): void {
  const name = REFUSED_TYPES[t];
  if (name) throw fail('MANIFEST_INVALID', `${name} (${t}) are not supported; ${SUPPORTED}: ${CONVERT_HINT}`, { mediaType: t });
}

function descriptor(v: unknown, where: string): Descriptor {
  if (!isObject(v)) throw fail('MANIFEST_INVALID', `${where} must be a descriptor object`);
  const { mediaType, digest, size } = v;
  if (typeof mediaType !== 'string') throw fail('MANIFEST_INVALID', `${where}.mediaType must be a string`);
  if (typeof digest !== 'string' || !isDigest(digest)) throw fail('MANIFEST_INVALID', `${where}.digest must be sha256:<64 hex>`);
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0) throw fail('MANIFEST_INVALID', `${where}.size must be a non-negative integer`);
  return { mediaType, digest, size };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
