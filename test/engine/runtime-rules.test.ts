/** Unit tests of the container runtime rules applied at release (docs/rules.md What the service does 6). */
import t from 'tap';
import { processCommand, releaseWarnings, shellQuote, workingDirectory, NEW_LAYER_EXTRACT } from '../../engine/platform/runtime-rules.js';
import type { ImageInfo } from '../../engine/registry/records.js';
import type { AppRecord } from '../../engine/platform/records.js';

const image = (over: Partial<ImageInfo> = {}): ImageInfo => ({
  architecture: 'amd64', os: 'linux', entrypoint: null, cmd: ['npm', 'start'], workingDir: '', env: [], user: '',
  ignoredInstructions: [], layerCount: 3, whiteouts: 0, warnings: [], ...over,
});
const app = (space: string | null): AppRecord => ({
  id: 'a', name: 'x', ownerId: 'o', teamId: null, generation: 'cedar', stack: 'container', buildStack: 'container', space, createdAt: 0, updatedAt: 0,
});

t.test('commands', async (t) => {
  t.equal(processCommand(image()), "/bin/sh -c 'npm start'", 'CMD through a shell');
  t.equal(processCommand(image({ entrypoint: ['/app/run'], cmd: ['--port', '$PORT'] })), "/app/run --port '$PORT'", 'ENTRYPOINT as given');
  t.equal(processCommand(image({ entrypoint: ['/app/run'], cmd: null })), '/app/run');
  t.equal(processCommand(image({ entrypoint: null, cmd: null })), null, 'nothing to run');
  t.equal(shellQuote("it's"), `'it'\\''s'`);
  t.equal(workingDirectory(image()), '/');
  t.equal(workingDirectory(image({ workingDir: '/srv' })), '/srv');
});

t.test('warnings depend on the runtime', async (t) => {
  const heavy = image({ whiteouts: 2, layerCount: 45, ignoredInstructions: ['HEALTHCHECK', 'STOPSIGNAL'], user: 'web' });
  const shared = releaseWarnings(heavy, app(null), {}).join('\n');
  t.match(shared, /HEALTHCHECK is not supported/);
  t.match(shared, /STOPSIGNAL is ignored: processes stop with SIGTERM followed by SIGKILL/);
  t.match(shared, /USER web is not the user used at runtime/);
  t.match(shared, /whiteout.*enable the runtime-new-layer-extract labs feature/);
  t.match(shared, /45 layers; more than 40 layers may fail to start on the shared runtime/);
  t.notMatch(shared, /\.profile/);
  const fixed = releaseWarnings(heavy, app(null), { [NEW_LAYER_EXTRACT]: true }).join('\n');
  t.notMatch(fixed, /whiteout/, 'the labs feature honours whiteouts on the shared runtime');
  const space = releaseWarnings(heavy, app('s1'), { [NEW_LAYER_EXTRACT]: true }).join('\n');
  t.match(space, /not honoured in isolated spaces, and there is no workaround/);
  t.notMatch(space, /more than 40 layers/, 'the layer limit is a shared-runtime limit');
  t.match(space, /\.profile and \.profile\.d scripts are not run at boot in isolated spaces/);
  t.same(releaseWarnings(image(), app(null), {}), [], 'a plain image has none');
});
