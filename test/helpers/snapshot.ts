/**
 * What an account can see of the server's state, read through the real HTTP interface: the
 * registry catalog and every repository's tags, and the API listings of apps, teams, OAuth
 * clients and authorizations. Two equal snapshots mean a run of requests changed nothing the
 * account can observe.
 */
import { basic, bearer, http } from './http.js';

const V3 = 'application/vnd.slipway+json; version=3';

/** Reads the listings as `apiKey`'s account; throws when a listing is not a 200/206. */
export async function snapshot(urls: { registry: string; api: string }, apiKey: string): Promise<string> {
  const reg = { headers: basic('_', apiKey) };
  const catalog = await http('GET', `${urls.registry}/v2/_catalog`, reg);
  if (catalog.status !== 200) throw new Error(`catalog answered ${catalog.status}`);
  const parts: Record<string, unknown> = { catalog: catalog.json };
  for (const name of catalog.json.repositories as string[]) parts[`tags ${name}`] = (await http('GET', `${urls.registry}/v2/${name}/tags/list`, reg)).json;
  for (const path of ['/apps', '/teams', '/oauth/clients', '/oauth/authorizations']) {
    const r = await http('GET', urls.api + path, { headers: { ...bearer(apiKey), accept: V3 } });
    if (r.status !== 200 && r.status !== 206) throw new Error(`${path} answered ${r.status}`);
    parts[path] = r.json;
  }
  return JSON.stringify(parts);
}
