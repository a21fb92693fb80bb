/**
 * The `web_url` of an app (docs/platform-conventions.md 3.2: "uri | null"). Configured by SLIPWAY_APP_URL_TEMPLATE
 * (`{app}` is replaced by the app name); otherwise derived from the API URL the way the
 * platform names its hosts: the API at `api.<domain>` gives `https://<app>.<domain>/` (same
 * scheme as the API); an API on a loopback address or `localhost` gives
 * `http://<app>.localhost/`; any other host `<scheme>://<app>.<host>/`. No port is kept: apps
 * are served by the routing layer in front of the dynos, not by this service.
 */

/**
 * Builds the function that maps an app name to its web URL.
 * @param template a URL template containing `{app}`, or undefined to derive from `apiUrl`
 * @param apiUrl the public API URL (`http(s)://host[:port]`)
 */
export function webUrlOf(template: string | undefined, apiUrl: string): (app: string) => string {
  if (template !== undefined) return (app) => template.replaceAll('{app}', app);
  const u = new URL(apiUrl);
  const host = u.hostname;
  const loopback = host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
  if (loopback) return (app) => `http://${app}.localhost/`;
  const domain = host.startsWith('api.') ? host.slice(4) : host;
  return (app) => `${u.protocol}//${app}.${domain}/`;
}
