/**
 * The registry view and the releases page of the dashboard in a real browser (Chromium via
 * playwright-core), fed by real pushes with skopeo: repositories, tags, digests, sizes, push
 * times, layers, inspection warnings and push/pull commands; deleting a tag and an image through
 * the confirmation page, checked through the registry API and then a GC run (the page's account
 * of what GC frees must be what it frees); releases with the tag each image came from, old
 * releases without it, and roll back. Every page gets axe-core (no serious or critical
 * violations) and a width check at 1280 and 390 px. The new POSTs are refused without a CSRF
 * token, for another account's app and from a read-only sign-in (which sees no delete or roll
 * back), changing nothing. The account signed in without JavaScript deletes through the same pages.
 */
import t from 'tap';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { api, createAccount, type TestServer } from '../helpers/oauth.js';
import { startInProcess } from '../helpers/harness.js';
import { chromiumSkip, launchBrowser, screenshotDir } from '../helpers/browser.js';
import { assertLook, signInPage } from '../helpers/dashboard.js';
import { skopeo, skopeoSkip } from '../helpers/skopeo.js';
import { buildImage, layerTar, type BuiltImage } from '../helpers/image.js';
import { http, basic } from '../helpers/http.js';
import { bytes } from '../../server/ops/units.js';
import { releases as releaseKeyspace } from '../../engine/platform/keyspaces.js';
import { releaseKey } from '../../engine/platform/releases.js';

const skip = chromiumSkip() || skopeoSkip();
const CONTAINER = 'application/vnd.slipway+json; version=3.container-releases';

/** Pushes a built image with skopeo to `<repository>:<tag>`; returns the manifest digest the registry stored. */
async function push(ts: TestServer, key: string, img: BuiltImage, repository: string, tag: string): Promise<string> {
  const host = new URL(ts.urls.registry).host;
  const r = await skopeo(['copy', '--dest-creds', `_:${key}`, '--dest-tls-verify=false', `dir:${img.dir}`, `docker://${host}/${repository}:${tag}`]);
  if (r.code !== 0) throw new Error(`skopeo push ${repository}:${tag}: ${r.stderr}`);
  return manifestDigest(ts, key, repository, tag);
}

/** The digest the registry answers for `repository:reference`, or null for 404. */
async function manifestDigest(ts: TestServer, key: string, repository: string, reference: string): Promise<string> {
  const r = await http('HEAD', `${ts.urls.registry}/v2/${repository}/manifests/${reference}`, { headers: { ...basic('_', key), accept: 'application/vnd.docker.distribution.manifest.v2+json' } });
  return r.status === 200 ? r.headers['docker-content-digest'] as string : `status ${r.status}`;
}

async function release(ts: TestServer, key: string, app: string, imageId: string): Promise<void> {
  const r = await api(ts, 'PATCH', `/apps/${app}/formation`, key, { updates: [{ type: 'web', docker_image: imageId }] }, { accept: CONTAINER });
  if (r.status !== 200) throw new Error(`release: ${r.status} ${r.text}`);
}

t.test('registry view and releases in Chromium', { skip }, async (t) => {
  const ts = await startInProcess();
  t.teardown(() => ts.stop());
  const shots = screenshotDir('dashboard-registry');
  const browser = await launchBrowser();
  t.teardown(() => browser.close());
  const page = browser.context.pages()[0] ?? await browser.context.newPage();
  page.on('dialog', (d) => void d.accept());
  const key = ts.operator.apiKey;
  const host = new URL(ts.urls.registry).host;
  const url = (path: string) => ts.auth + path;

  /** axe-core, the width check at 1280 and 390 px, and screenshots of both. */
  const look = (p: Page, name: string) => assertLook(t, p, shots, name);

  // Two images sharing their base layer: v1 with EXPOSE, USER and a whiteout; v2 clean.
  if ((await api(ts, 'POST', '/apps', key, { name: 'shop' })).status !== 201) throw new Error('app');
  const base = await layerTar({ 'bin/app': randomBytes(300_000) }, 1);
  const dir = join(ts.server.config.dataDir, 'test-images');
  const v1 = await buildImage(join(dir, 'v1'), {
    layers: [{ files: {}, bytes: base }, { files: { 'app/.wh.old.conf': '', 'app/data': randomBytes(50_000) } }],
    config: { Cmd: ['./serve', 'v1'], ExposedPorts: { '8080/tcp': {} }, User: 'app' },
  });
  const v2 = await buildImage(join(dir, 'v2'), {
    layers: [{ files: {}, bytes: base }, { files: { 'app/data': randomBytes(80_000) } }],
    config: { Cmd: ['./serve', 'v2'] },
  });
  const d1 = await push(ts, key, v1, 'shop/web', 'v1');
  await release(ts, key, 'shop', v1.configDigest); // v1, recording tag v1
  const d2 = await push(ts, key, v2, 'shop/web', 'v2');
  t.equal(await push(ts, key, v2, 'shop/web', 'latest'), d2, 'the same image under a second tag');
  await release(ts, key, 'shop', v2.configDigest); // v2, recording tags latest and v2

  await signInPage(page, ts, ts.operator, '/apps/shop');
  await page.click('button[type=submit]');
  await page.waitForURL(/\/apps\/shop$/);

  await t.test('the registry view: repositories, tags, digests, sizes, push times, warnings, commands', async (t) => {
    await page.click('nav.tabs a:has-text("Registry")');
    await page.waitForURL(/\/apps\/shop\/registry$/);
    t.equal(await page.textContent('#repo-web'), 'shop/web', 'the repository <app>/<process-type>');
    const rows = page.locator('#repo-web ~ table tbody tr');
    t.equal(await rows.count(), 2, 'two images');
    const cells = async (n: number) => (await rows.nth(n).locator('td').allTextContents()).map((c) => c.replace(/\s+/g, ' ').trim());
    // Same push time: the newest-first order falls back to the digest order.
    const [a, b] = [await cells(0), await cells(1)];
    const r2 = a[1] === d2 ? a : b;
    const r1 = a[1] === d1 ? a : b;
    t.equal(r2[0], 'latest v2', 'v2 image: both tags');
    t.equal(r1[0], 'v1');
    t.equal(r2[2], bytes(v2.config.length + v2.layers.reduce((s, l) => s + l.bytes.length, 0)), 'size: config plus layers, compressed');
    t.equal(r1[3], '2026-01-05 09:00 UTC', 'push time');
    t.equal(r2[4], 'none', 'a clean image has no warnings');
    t.match(r1[4], /^3 warnings/, 'EXPOSE, USER and the whiteout are warned about');
    const main = (await page.textContent('main'))!;
    t.match(main, `docker push ${host}/shop/web:latest`, 'the push command names this registry');
    t.match(main, `docker login ${host} --username _`);
    t.match(main, `docker pull ${host}/shop/web:latest`, 'and the pull command');
    t.notMatch(main, 'heroku container:push', 'no platform CLI commands: this registry host is not registry.<domain>');
    await look(page, 'registry');
    // The picture of docs/user-guide.md (docs/registry-view.png is a copy of it).
    await page.screenshot({ path: join(shots, 'docs-registry-view.png') });
  });

  await t.test('an image: copyable digest, layers, warnings, releases', async (t) => {
    await page.click(`a[aria-label="Details of shop/web@${d1.slice(0, 19)}"]`);
    t.equal(await page.inputValue('#digest'), d1, 'the digest in a read-only field');
    t.equal(await page.getAttribute('#digest', 'readonly'), '', 'read-only');
    t.ok(await page.isVisible('button[data-copy="digest"]'), 'with a copy button (the script)');
    t.equal(await page.inputValue('#image-id'), v1.configDigest, 'the image id a release names');
    const layers = page.locator('#layers-heading ~ table tbody tr');
    t.equal(await layers.count(), 3, 'two layers and the config');
    const first = (await layers.nth(0).locator('td').allTextContents()).map((c) => c.trim());
    t.same(first, ['1', v1.layers[0]!.digest, bytes(v1.layers[0]!.bytes.length), 'application/vnd.docker.image.rootfs.diff.tar.gzip']);
    const warnings = await page.locator('#warnings-heading ~ ul li').allTextContents();
    t.ok(warnings.some((w) => w.includes('EXPOSE')), 'EXPOSE');
    t.ok(warnings.some((w) => w.includes('USER app')), 'USER');
    t.ok(warnings.some((w) => w.includes('whiteout')), 'whiteout');
    t.match(await page.textContent('main'), `docker pull ${host}/shop/web@${d1}`, 'pull by digest');
    t.match(await page.textContent('.facts'), /Releases\s*v1/, 'the releases that run it');
    await look(page, 'image');
  });

  await t.test('releases: image, repository:tag, warnings; an old release without tags; roll back', async (t) => {
    // A release record of a build before tags were recorded (seeded through the metadata store).
    const app = (await api(ts, 'GET', '/apps/shop', key)).json;
    const k = releaseKey(app.id, 1);
    const old = (await ts.server.store.metadata.get(releaseKeyspace, k))!;
    t.same(old.images.web!.tags, ['v1'], 'the release recorded the tag it came from');
    await ts.server.store.metadata.transact(async (tx) => { const { tags: _, ...web } = old.images.web!; tx.put(releaseKeyspace, k, { ...old, images: { web } }); });

    await page.goto(url('/apps/shop/releases'));
    const from = async (v: number) => (await page.textContent(`#release-v${v} ~ table td[data-label="From"]`))!.replace(/\s+/g, ' ').trim();
    t.equal(await from(2), 'shop/web:latest shop/web:v2', 'v2 came from both tags');
    t.equal(await from(1), `shop/web@${d1} tag not recorded (released by an older version of Slipway); tagged now: v1`, 'an old release says so and shows the tags now');
    t.match(await page.textContent('#release-v1 ~ table td[data-label="Warnings"]'), 'USER app is not the user used at runtime', 'the release\'s warnings');
    t.equal(await page.getAttribute('#release-v2 ~ table td[data-label="Image"] a', 'href'), `/apps/shop/registry/web/images/${encodeURIComponent(d2)}`, 'the image links to its page');
    await look(page, 'releases');
    await page.click('button:has-text("Roll back to v1")');
    await page.waitForURL(/\/apps\/shop\/releases\?notice=rolled-back/);
    const list = (await api(ts, 'GET', '/apps/shop/releases', key)).json;
    t.equal(list.at(-1).rollback_of, 1, 'v3 rolls back to v1');
    t.equal(list.at(-1).processes.web.docker_image, v1.configDigest, 'running v1\'s image');
    t.match(await page.textContent('#release-v3'), 'current');
  });

  await t.test('delete a tag: a confirmation page, then only the tag goes', async (t) => {
    await page.goto(url(`/apps/shop/registry/web/images/${encodeURIComponent(d2)}`));
    await page.click('button[aria-label="Delete tag latest of shop/web"]');
    await page.waitForURL(/\/tags\/latest\/delete$/);
    const text = (await page.textContent('main'))!;
    t.match(text, 'Only the tag goes', 'the page says what goes');
    t.match(text, `shop/web@${d2}`, 'and how to pull the image still');
    t.match(text, 'No bytes are freed');
    t.equal(await manifestDigest(ts, key, 'shop/web', 'latest'), d2, 'nothing deleted before confirming');
    await look(page, 'delete-tag');
    await page.click('main button.danger');
    await page.waitForURL(/\/apps\/shop\/registry\?notice=tag-deleted/);
    t.equal(await manifestDigest(ts, key, 'shop/web', 'latest'), 'status 404', 'the tag is gone from the registry');
    t.equal(await manifestDigest(ts, key, 'shop/web', d2), d2, 'the image stays');
  });

  await t.test('a fir-generation app: no push commands, the reason instead', async (t) => {
    if ((await api(ts, 'POST', '/apps', key, { name: 'newgen', generation: 'fir' })).status !== 201) throw new Error('fir app');
    await page.goto(url('/apps/newgen/registry'));
    const main = (await page.textContent('main'))!;
    t.match(main, 'takes pushes for cedar-generation apps only');
    t.notMatch(main, 'docker push', 'no command that would be refused');
  });

  const dev = await createAccount(ts, 'dev@example.com');
  await t.test('another account and a form without its CSRF token change nothing', async (t) => {
    const other = await launchBrowser(false);
    t.teardown(() => other.close());
    const p = other.context.pages()[0] ?? await other.context.newPage();
    await signInPage(p, ts, dev, '/apps');
    await p.click('button[type=submit]');
    await p.waitForURL(/\/apps$/);
    t.equal((await p.goto(url('/apps/shop/registry')))!.status(), 404, 'another account\'s registry view is not found');
    t.equal((await p.goto(url(`/apps/shop/registry/web/images/${encodeURIComponent(d1)}`)))!.status(), 404, 'nor its images');
    t.equal((await p.goto(url('/apps/shop/releases')))!.status(), 404, 'nor its releases');
    await p.goto(url('/apps'));
    const csrf = await p.inputValue('input[name="_csrf"]');
    for (const path of [`/apps/shop/registry/web/tags/v1/delete`, `/apps/shop/registry/web/images/${encodeURIComponent(d1)}/delete`]) {
      const forged = await p.request.post(url(path), { form: { _csrf: csrf, confirmed: 'yes' }, maxRedirects: 0 });
      t.equal(forged.status(), 403, `${path}: refused for another account`);
      t.match(await forged.text(), 'you do not have access to app &quot;shop&quot;', 'with the registry API\'s words');
      const noCsrf = await page.request.post(url(path), { form: { confirmed: 'yes' }, maxRedirects: 0 });
      t.equal(noCsrf.status(), 403, `${path}: refused without the CSRF token, even for the owner`);
    }
    t.equal(await manifestDigest(ts, key, 'shop/web', 'v1'), d1, 'the tag and the image are still there');

    // The account's own app, without JavaScript: the same confirmation page, then the delete.
    if ((await api(ts, 'POST', '/apps', dev.apiKey, { name: 'devapp' })).status !== 201) throw new Error('dev app');
    const dd = await push(ts, dev.apiKey, v2, 'devapp/worker', 'main');
    await p.goto(url(`/apps/devapp/registry/worker/images/${encodeURIComponent(dd)}`));
    t.notOk(await p.isVisible('button[data-copy="digest"]'), 'no copy button without a script; the field is selectable');
    await p.click('button[aria-label="Delete tag main of devapp/worker"]');
    t.match(await p.textContent('main'), 'Only the tag goes', 'the confirmation page without JavaScript');
    await p.click('main button.danger');
    await p.waitForURL(/notice=tag-deleted/);
    t.equal(await manifestDigest(ts, dev.apiKey, 'devapp/worker', 'main'), 'status 404', 'deleted without JavaScript');
  });

  await t.test('a read-only sign-in sees no delete or roll back, and its posts are refused', async (t) => {
    const ro = await launchBrowser(false);
    t.teardown(() => ro.close());
    const p = ro.context.pages()[0] ?? await ro.context.newPage();
    await signInPage(p, ts, ts.operator, '/apps/shop/registry');
    await p.check('#read_only');
    await p.click('button[type=submit]');
    await p.waitForURL(/\/apps\/shop\/registry$/);
    for (const path of ['/apps/shop/registry', `/apps/shop/registry/web/images/${encodeURIComponent(d1)}`, '/apps/shop/releases']) {
      await p.goto(url(path));
      t.equal(await p.locator('main form').count(), 0, `${path}: no forms`);
    }
    t.match(await p.textContent('main'), 'v1', 'the releases are shown');
    const csrf = await p.inputValue('header input[name="_csrf"]');
    for (const path of [`/apps/shop/registry/web/tags/v1/delete`, `/apps/shop/registry/web/images/${encodeURIComponent(d1)}/delete`]) {
      const r = await p.request.post(url(path), { form: { _csrf: csrf, confirmed: 'yes' }, maxRedirects: 0 });
      t.equal(r.status(), 403, `${path} from a read-only session: 403`);
      t.match(await r.text(), 'does not allow delete', 'with the registry API\'s words');
    }
    t.equal(await manifestDigest(ts, key, 'shop/web', 'v1'), d1, 'the tag and the image are still there');
  });

  await t.test('delete an image a release runs: the page explains releases and GC, and GC frees what it said', async (t) => {
    await page.goto(url(`/apps/shop/registry/web/images/${encodeURIComponent(d1)}`));
    await page.click(`button[aria-label="Delete image shop/web@${d1.slice(0, 19)}"]`);
    const text = (await page.textContent('main'))!.replace(/\s+/g, ' ');
    t.match(text, 'its tags (shop/web:v1)', 'the tags that go with it');
    t.match(text, 'Releases v3 (current), v1 run this image', 'the releases that run it');
    t.match(text, 'rolling back to them fails until the same image is pushed again');
    const unshared = bytes(v1.config.length + v1.layers[1]!.bytes.length);
    t.match(text, `2 of its 3 blobs (${unshared} of`, 'the config and the own layer are freed; the shared base layer is not');
    t.match(text, 'once 1 h (the grace period) has passed');
    await look(page, 'delete-image');
    await page.click('main button.danger');
    await page.waitForURL(/\/apps\/shop\/registry\?notice=image-deleted/);
    t.equal(await manifestDigest(ts, key, 'shop/web', d1), 'status 404', 'the image is gone');
    t.equal(await manifestDigest(ts, key, 'shop/web', 'v1'), 'status 404', 'with its tag');
    const rollback = await api(ts, 'POST', '/apps/shop/releases', key, { release: '2' });
    t.equal(rollback.status, 201, 'a release whose image stays can be rolled back to');
    t.match((await api(ts, 'POST', '/apps/shop/releases', key, { release: '1' })).text, 'no longer stored', 'one whose image was deleted cannot, as the page said');

    ts.clock.advance(3600_000);
    const gc = (await ts.server.collectGarbage())!;
    const freed = gc.deletedBlobs.map((b) => b.digest).sort();
    t.same(freed, [v1.configDigest, v1.layers[1]!.digest].sort(), 'GC freed exactly the two blobs the page named');
    t.equal(await manifestDigest(ts, key, 'shop/web', d2), d2, 'the image sharing the base layer still pulls');
  });
});
