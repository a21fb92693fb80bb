/**
 * One warm push as docker sends it for an image whose blobs the registry holds: HEAD of each blob
 * (config, layer), then PUT of the manifest under `tag` (bench/cluster.ts, bench/cluster-ab.ts).
 */
import { request } from 'undici';
import { MANIFEST_V2, type SmallImage } from './image.js';

/**
 * Sends the three requests in order on `registry` (base URL) for repository `repo`.
 * @throws Error naming the request when an answer is not 200 (HEAD) or 201 (PUT).
 */
export async function warmPushOnce(registry: string, repo: string, auth: Record<string, string>, img: SmallImage, tag: string): Promise<void> {
  for (const d of [img.config.digest, img.layer.digest]) {
    const h = await request(`${registry}/v2/${repo}/blobs/${d}`, { method: 'HEAD', headers: auth });
    await h.body.dump();
    if (h.statusCode !== 200) throw new Error(`warm push: HEAD ${h.statusCode}`);
  }
  const p = await request(`${registry}/v2/${repo}/manifests/${tag}`, { method: 'PUT', headers: { ...auth, 'content-type': MANIFEST_V2 }, body: img.manifest });
  const text = await p.body.text();
  if (p.statusCode !== 201) throw new Error(`warm push: PUT ${p.statusCode} ${text.slice(0, 300)}`);
}

/**
 * Pushes `img` into `repo` (each blob in one monolithic POST, then the manifest as `latest`), so
 * that warm pushes find its blobs.
 * @throws Error naming the request that was refused.
 */
export async function pushSmallImage(registry: string, repo: string, auth: Record<string, string>, img: SmallImage): Promise<void> {
  for (const b of [img.config, img.layer]) {
    const r = await request(`${registry}/v2/${repo}/blobs/uploads/?digest=${b.digest}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: b.bytes });
    const text = await r.body.text();
    if (r.statusCode !== 201) throw new Error(`blob push ${r.statusCode} ${text.slice(0, 300)}`);
  }
  const m = await request(`${registry}/v2/${repo}/manifests/latest`, { method: 'PUT', headers: { ...auth, 'content-type': MANIFEST_V2 }, body: img.manifest });
  const text = await m.body.text();
  if (m.statusCode !== 201) throw new Error(`manifest push ${m.statusCode} ${text.slice(0, 300)}`);
}
