/** Registry protocol steps for tests, through the real HTTP interface. */
import { http, type Reply } from './http.js';
import { sha256 } from './image.js';

export interface Target {
  registry: string;
  auth: Record<string, string>;
}

/** Monolithic upload: POST ?digest= with the bytes. */
export function pushBlob(t: Target, name: string, bytes: Buffer, digest = sha256(bytes)): Promise<Reply> {
  return http('POST', `${t.registry}/v2/${name}/blobs/uploads/?digest=${digest}`, {
    headers: { ...t.auth, 'content-type': 'application/octet-stream', 'content-length': String(bytes.length) }, body: bytes,
  });
}

/** Opens an upload session; returns its absolute Location. */
export async function startUpload(t: Target, name: string): Promise<string> {
  const r = await http('POST', `${t.registry}/v2/${name}/blobs/uploads/`, { headers: t.auth });
  if (r.status !== 202) throw new Error(`POST upload: ${r.status} ${r.text}`);
  return r.headers.location!;
}

/** Appends `?digest=` (or `&digest=`) to a session Location. */
export function withDigest(location: string, digest: string): string {
  return location + (location.includes('?') ? '&' : '?') + 'digest=' + digest;
}

export function putManifest(t: Target, name: string, reference: string, body: Buffer | string, contentType = 'application/vnd.docker.distribution.manifest.v2+json'): Promise<Reply> {
  return http('PUT', `${t.registry}/v2/${name}/manifests/${reference}`, { headers: { ...t.auth, 'content-type': contentType }, body });
}
