// The container's HEALTHCHECK (Dockerfile): exit 0 when the admin listener's /readyz answers 200
// within 4 s, else 1 with the answer or the error on stderr (docker inspect shows it).
const bound = process.env.SLIPWAY_ADMIN_HOST || '127.0.0.1';
const host = bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound; // a wildcard bind answers on loopback
const port = process.env.SLIPWAY_ADMIN_PORT || '5004';
const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/readyz`;
try {
  const r = await fetch(url, { signal: AbortSignal.timeout(4000) });
  if (r.status !== 200) {
    console.error(`${url}: ${r.status} ${(await r.text()).slice(0, 300)}`);
    process.exit(1);
  }
} catch (e) {
  console.error(`${url}: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}
