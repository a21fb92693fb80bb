/**
 * Route templates of the registry and upload hosts (server/ops/routes.ts): each REGISTRY_ROUTES
 * pattern, with `:param` written `<param>`, labels the requests of that route whatever their
 * repository, reference, digest or session id; other paths are `unmatched`.
 */
import t from 'tap';
import { routeTemplate } from '../../server/ops/routes.js';
import { matchRegistryPath, REGISTRY_ROUTES } from '../../server/registry/routes.js';

const SAMPLES: Record<string, string> = {
  name: 'some-app/web', reference: 'v1', digest: 'sha256:' + 'c'.repeat(64), session: '0b7d6c1e-uuid',
};

t.test('every registry pattern labels its own requests', async (t) => {
  for (const pattern of new Set(REGISTRY_ROUTES.map((r) => r.pattern))) {
    const path = pattern.replace(/:([a-z]+)/g, (_, p: string) => SAMPLES[p]!);
    const template = pattern.replace(/:([a-z]+)/g, '<$1>');
    t.equal(routeTemplate('registry', path), template, path);
    t.equal(routeTemplate('upload', path), template, `${path} on the upload host`);
  }
});

t.test('particular paths', async (t) => {
  t.equal(routeTemplate('registry', `/v2/a/web/referrers/${SAMPLES.digest}`), '/v2/<name>/referrers/<digest>', 'referrers are not blobs');
  t.equal(routeTemplate('registry', '/v2'), '/v2/');
  t.equal(routeTemplate('registry', '/v2/a/web/blobs/uploads'), '/v2/<name>/blobs/uploads/', 'upload start without the slash');
  t.equal(routeTemplate('registry', '/v2/a/web/nothing'), 'unmatched');
  t.equal(routeTemplate('registry', '/other'), 'unmatched');
});

t.test('the pattern the dispatcher noted gives the same template as matching the path', async (t) => {
  for (const pattern of new Set(REGISTRY_ROUTES.map((r) => r.pattern))) {
    const path = pattern.replace(/:([a-z]+)/g, (_, p: string) => SAMPLES[p]!);
    const noted = matchRegistryPath(path)!.pattern; // what routes.ts `dispatch` notes
    t.equal(routeTemplate('registry', path, noted), routeTemplate('registry', path), path);
    t.equal(routeTemplate('upload', path, noted), routeTemplate('upload', path), `${path} on the upload host`);
  }
});
