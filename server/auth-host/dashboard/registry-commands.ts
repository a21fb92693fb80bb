/**
 * The exact commands the registry view shows for pushing and pulling an app's repository
 * `<app>/<process-type>` (docs/container-workflow.md): docker with the registry's public host,
 * and the platform CLI (`heroku container:*`), which derives the registry host from
 * `HEROKU_HOST=<domain>` as `registry.<domain>` and so works only when the registry's host has
 * that form.
 */
import type { AuthContext } from '../context.js';

/** The registry's public `host[:port]` (what docker names images with). */
export function registryHost(ctx: Pick<AuthContext, 'urls'>): string {
  return new URL(ctx.urls.registry).host;
}

/** The `HEROKU_HOST` under which the platform CLI reaches `host`, or null when it cannot (host not `registry.<domain>`). */
export function cliDomain(host: string): string | null {
  return host.startsWith('registry.') && !host.includes(':') ? host.slice('registry.'.length) : null;
}

/** Commands, one per line, with the platform CLI's set-up when it can be used. */
export interface Commands {
  docker: string[];
  /** null when the registry host is not `registry.<domain>` (the CLI cannot reach it). */
  cli: { domain: string; lines: string[] } | null;
}

/** Log in, tag and push a local image to `<host>/<app>/<type>`, then release it. */
export function pushCommands(host: string, app: string, type: string): Commands {
  const name = `${host}/${app}/${type}`;
  const domain = cliDomain(host);
  return {
    docker: [
      `docker login ${host} --username _   # password: an API token or your API key`,
      `docker tag <local image> ${name}:latest`,
      `docker push ${name}:latest`,
    ],
    cli: domain === null ? null : { domain, lines: ['heroku container:login', `heroku container:push ${type} -a ${app}`, `heroku container:release ${type} -a ${app}`] },
  };
}

/** Pull `<host>/<app>/<type>` by tag (default `latest`) and, when given, by digest. */
export function pullCommands(host: string, app: string, type: string, tag = 'latest', digest?: string): Commands {
  const name = `${host}/${app}/${type}`;
  const domain = cliDomain(host);
  return {
    docker: [`docker pull ${name}:${tag}`, ...(digest ? [`docker pull ${name}@${digest}`] : [])],
    cli: domain === null ? null : { domain, lines: [`heroku container:pull ${type} -a ${app}`] },
  };
}
