// The dashboard in a real browser: Debian's chromium driven by playwright-core, against the real
// binary serving the fixed embedded cluster tests/browser/cluster.json.
//   VS_BINARY=build/vgpu-sched VS_SHOTS=build/browser node --test dashboard.test.mjs
// Every view loads with no console error and no failed or off-origin request; the numbers on
// screen are the JSON API's; a pending pod shows its reason; find-my-pod finds a pod by name;
// what-if answers; a pod named <img src=x onerror=alert(1)> shows as text; the keyboard reaches
// every control; axe-core finds no serious or critical violation. Screenshots go to VS_SHOTS.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { filterPending, launch, openView, startService, watchedPage } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const binary = resolve(root, process.env.VS_BINARY || 'build/vgpu-sched');
const cluster = join(here, 'cluster.json');
const shots = resolve(root, process.env.VS_SHOTS || 'build/browser');
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const HOSTILE = '<img src=x onerror=alert(1)>';

// [route, the view that renders it, screenshot name]
const VIEWS = [
  ['cluster', 'cluster', 'cluster'],
  ['node/gpu-h100-1', 'node', 'node'],
  ['ns/research', 'ns', 'namespace'],
  ['pending', 'pending', 'pending'],
  ['pending/research/too-big', 'pending', 'pending-pod'],
  ['find', 'find', 'find'],
  ['pod/inference/serve-llm', 'pod', 'pod'],
  ['fragmentation', 'fragmentation', 'fragmentation'],
  ['quota', 'quota', 'quota'],
  ['health', 'health', 'health'],
  ['whatif', 'whatif', 'whatif'],
];

let svc, browser, page, problems;

async function api(path) {
  const r = await fetch(svc.url + path);
  assert.equal(r.status, 200, path);
  return r.json();
}

before(async () => {
  mkdirSync(shots, { recursive: true });
  svc = await startService(binary, cluster);
  const answers = await filterPending(svc, cluster);
  // Three are refused by every node with reasons, one is invalid: the views below show them.
  const outcome = Object.fromEntries(Object.entries(answers).map(([k, a]) =>
    [k, a.Error ? 'error: ' + a.Error : a.NodeNames ? 'placed' : a.FailedNodes ? 'refused' : 'no answer']));
  assert.deepEqual(outcome, {
    'research/too-big': 'refused',
    'team-a/wants-h200': 'refused',
    'sandbox/"><script>alert(2)</script>': 'refused',
    'team-b/bad-quantity': 'error: invalid nvidia.com/gpumem "8Gi" in container main: must be a whole number of MiB between 0 and 2147483647',
  }, JSON.stringify(answers) + '\n' + svc.log().slice(-2000));
  const pending = await api('api/v1/pending');
  assert.deepEqual(pending.pods.map((p) => `${p.namespace}/${p.name}`).sort(), Object.keys(answers).sort(),
    JSON.stringify(pending) + '\n' + svc.log().slice(-2000));
  browser = await launch();
  ({ page, problems } = await watchedPage(browser.context, svc.origin));
});

after(async () => {
  if (browser) await browser.close();
  if (svc) {
    // a clean shutdown, and nothing from a sanitizer when the binary has one
    assert.equal(await svc.stop(), 0, svc.log().slice(-2000));
    assert.doesNotMatch(svc.log(), /Sanitizer|runtime error:/);
  }
});

describe('dashboard', () => {
  test('every view loads with no console error and no failed or off-origin request', async () => {
    for (const [route, view, name] of VIEWS) {
      await openView(page, svc.url, route, view);
      assert.equal(await page.locator('main h1').count(), 1, route);
      const h1 = await page.locator('main h1').innerText();
      if (/Could not load|Not found/.test(h1)) {
        // what the service knew then, for a failure that does not reproduce
        const pend = await fetch(svc.url + 'api/v1/pending').then((r) => r.text(), (e) => String(e));
        assert.fail(`${route}: ${h1}; problems ${JSON.stringify(problems)}\npending: ${pend}\n${svc.log().slice(-3000)}`);
      }
      await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
      assert.deepEqual(problems, [], route);
    }
  });

  test('the numbers on screen are the JSON API\'s', async () => {
    const snap = await api('api/v1/snapshot');
    await openView(page, svc.url, 'cluster', 'cluster');
    // let a poll pass: the page's snapshot is the server's current one
    await page.waitForFunction(() => document.querySelector('[data-stat=memUsedMiB] .value'));
    for (const [key, field] of [['memUsedMiB', 'memUsedMiB'], ['coresUsedPct', 'coresUsedPct'], ['slotsUsed', 'slotsUsed']]) {
      const shown = await page.locator(`[data-stat=${key}] .value`).getAttribute('data-value');
      assert.equal(Number(shown), snap.summary[field], key);
    }
    assert.equal(await page.locator('[data-stat=memUsedMiB] .value').innerText(), '495.1 GiB');
    assert.equal(await page.locator('[data-stat=cards] .value').innerText(), String(snap.summary.cards));
    assert.equal(await page.locator('[data-stat=pods] .value').innerText(), String(snap.summary.pods));
    assert.equal(await page.locator('[data-stat=pending] .value').innerText(), String(snap.summary.pending));
    // every card's figures
    for (const n of snap.nodes.filter((x) => x.registered)) {
      for (const c of n.cards) {
        const card = page.locator(`[data-node="${n.name}"] [data-uuid="${c.uuid}"]`);
        assert.equal(Number(await card.locator('[data-mem-used]').getAttribute('data-mem-used')), c.memUsedMiB, c.uuid);
        assert.equal(Number(await card.locator('[data-mem-used]').getAttribute('data-mem-total')), c.memTotalMiB, c.uuid);
        assert.equal(await card.locator('[data-cores-used]').innerText(), `${c.coresUsedPct} / ${c.coresTotalPct} %`, c.uuid);
        assert.equal(await card.locator('[data-slots-used]').innerText(), `${c.slotsUsed} / ${c.slotsTotal}`, c.uuid);
        // one focusable memory segment per pod share
        assert.equal(await card.locator('a.seg').count(), c.pods.filter((p) => p.memMiB > 0).length, c.uuid);
      }
    }
    // quota
    await openView(page, svc.url, 'quota', 'quota');
    const rows = page.locator('[data-table=quota] tbody tr');
    assert.equal(await rows.count(), snap.namespaces.length);
    for (let i = 0; i < snap.namespaces.length; i++) {
      const q = snap.namespaces[i];
      const cells = rows.nth(i).locator('td');
      assert.equal(await cells.nth(0).innerText(), `${'ABCDE'[i]} ${q.name}`);
      assert.equal(await cells.nth(2).getAttribute('data-value'), String(q.memUsedMiB), q.name);
      assert.equal(await cells.nth(3).getAttribute('data-value'), q.memLimitMiB === null ? 'null' : String(q.memLimitMiB), q.name);
      assert.equal(await cells.nth(4).getAttribute('data-value'), String(q.coresUsedPct), q.name);
    }
    assert.equal(await rows.nth(1).locator('td').nth(3).innerText(), '488.3 GiB');
    assert.equal(await rows.nth(0).locator('td').nth(3).innerText(), 'no limit');
    // fragmentation
    const frag = await api('api/v1/fragmentation');
    await openView(page, svc.url, 'fragmentation', 'fragmentation');
    for (const n of frag.nodes) {
      const row = page.locator('[data-table=fragmentation] tbody tr', { has: page.locator(`a[href="#/node/${n.name}"]`) });
      assert.equal(await row.locator('td').nth(5).getAttribute('data-value'), String(n.strandedCards), n.name);
    }
  });

  test('a pending pod shows its reason and its nearest miss', async () => {
    const pending = await api('api/v1/pending');
    const big = pending.pods.find((p) => p.name === 'too-big');
    await openView(page, svc.url, 'pending', 'pending');
    const row = page.locator('[data-table=pending] tbody tr', { hasText: 'research/too-big' });
    assert.equal(await row.count(), 1);
    const reasons = await row.locator('td').nth(4).innerText();
    assert.match(reasons, /^CardInsufficientMemory \(6\), /);
    assert.equal(await row.locator('td').nth(5).innerText(), big.nearestMiss.text);
    assert.equal(big.nearestMiss.text, 'gpu-h100-1 card 6 lacks 17.7 GiB');
    const bad = page.locator('[data-table=pending] tbody tr', { hasText: 'team-b/bad-quantity' });
    assert.match(await bad.innerText(), /invalid nvidia\.com\/gpumem "8Gi" in container main/);
    // its own page lists every node's reason
    await row.locator('a').first().click();
    await page.waitForSelector('main[data-ready=pending] h1:has-text("Pending: ")');
    const perNode = page.locator('main table').nth(1).locator('tbody tr');
    assert.equal(await perNode.count(), 7);
    assert.equal(await perNode.nth(0).innerText(), 'gpu-a100-1\t1/4 CardCordoned, 3/4 CardInsufficientMemory');
  });

  test('find my pod finds a pod by name', async () => {
    await openView(page, svc.url, 'find', 'find');
    await page.fill('#find-q', 'serve-llm');
    await page.press('#find-q', 'Enter');
    await page.waitForSelector('main[data-ready=pod] [data-pod="inference/serve-llm"]');
    const pod = await api('api/v1/pods/inference/serve-llm');
    assert.equal(await page.locator('[data-field=node]').innerText(), pod.node);
    assert.equal(await page.locator('[data-field=state]').innerText(), 'bound');
    assert.equal(await page.locator('[data-field=mode]').innerText(), 'hami-core');
    assert.equal(await page.locator('[data-field=bindPhase]').innerText(), 'success');
    assert.equal(await page.locator('[data-field=policies]').innerText(), 'node binpack (default), GPU spread (default)');
    const cards = page.locator('[data-table=pod-cards] tbody tr');
    assert.equal(await cards.count(), 1);
    assert.equal(await cards.nth(0).locator('td').nth(0).innerText(), 'GPU 4');
    assert.equal(await cards.nth(0).locator('td').nth(1).innerText(), 'GPU-h1-4');
    assert.equal(await cards.nth(0).locator('td').nth(4).getAttribute('data-value'), '48000');
    // several matches: a list
    await openView(page, svc.url, 'find?q=llama', 'find');
    assert.equal(await page.locator('[data-table=found] tbody tr').count(), 2);
  });

  test('what-if answers, for a shape and for a pasted pod', async () => {
    await openView(page, svc.url, 'whatif', 'whatif');
    await page.fill('#wi-mem', '20000');
    await page.fill('#wi-cores', '30');
    await page.click('#whatif-form button[type=submit]');
    const result = page.locator('[data-whatif=result]');
    await result.waitFor();
    assert.match(await result.innerText(), /Fits: default\/what-if → gpu-h100-1, GPU 7/);
    assert.match(await result.innerText(), /nothing was reserved or written/);
    await page.check('#wi-kind-pod');
    await page.fill('#wi-pod', 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: huge\n  namespace: ml\nspec:\n  containers:\n  - name: main\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n        nvidia.com/gpumem: 200000\n');
    await page.click('#whatif-form button[type=submit]');
    await page.waitForSelector('[data-whatif=result] >> text=Does not fit: ml/huge');
    assert.match(await page.locator('[data-whatif=result]').innerText(), /gpu-h100-1\s+8\/8 CardInsufficientMemory/);
    await page.fill('#wi-pod', 'not: [a pod');
    await page.click('#whatif-form button[type=submit]');
    await page.waitForSelector('#wi-result .error-box');
    assert.match(await page.locator('#wi-result .error-box').innerText(), /^pod: /);
    // nothing was reserved
    assert.equal((await api('api/v1/snapshot')).summary.memUsedMiB, 507000);
    assert.deepEqual(problems.filter((p) => !p.includes('400 (Bad Request)')), []);
    problems.length = 0;
  });

  test('a pod named <img src=x onerror=alert(1)> shows as text', async () => {
    await openView(page, svc.url, 'cluster', 'cluster');
    const seg = page.locator(`[data-node="gpu-t4-1"] a.seg[aria-label^="sandbox/${HOSTILE}"]`);
    assert.equal(await seg.count(), 1);
    await page.evaluate(() => { location.hash = '#/find?q=onerror'; });
    await page.waitForSelector('main[data-ready=pod] [data-pod^="sandbox/"]'); // one match: its page
    assert.equal(await page.locator('main h1').innerText(), `Pod sandbox/${HOSTILE}`);
    await openView(page, svc.url, 'pending', 'pending');
    assert.equal(await page.locator('main', { hasText: 'sandbox/"><script>alert(2)</script>' }).count(), 1);
    // nothing became markup: no such image or script in the document, no dialog
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    assert.equal(await page.locator('main script').count(), 0);
    assert.deepEqual(problems, []);
  });

  test('the keyboard reaches every control of every view', async () => {
    // Updates paused (the page's own button), and no poll still under way: a poll re-renders
    // the pending, health and fragmentation views, which would move the focus back to the top
    // while the test tabs through them (on a slow machine one walk outlasts the 2 s poll).
    await page.click('#pause');
    assert.equal(await page.getAttribute('#pause', 'aria-pressed'), 'true');
    await page.waitForSelector('body:not([data-polling])', { state: 'attached' });
    // Every control in document order, keyed by its position (the heat grid's squares are one
    // tab stop); a radio group is one tab stop (arrow keys move within it): its members share a
    // key. Returns the keys and the focused control's.
    const kb = () => {
      const sel = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
      const els = Array.from(document.querySelectorAll(sel))
        .filter((el) => !el.disabled && el.getClientRects().length && !el.closest('[hidden]'));
      const keys = els.map((el, i) => (el.type === 'radio' ? 'radio:' + el.name : String(i)));
      const at = els.indexOf(document.activeElement);
      return { keys: keys.filter((k, i, all) => all.indexOf(k) === i), active: at >= 0 ? keys[at] : undefined };
    };
    for (const [route, view] of VIEWS) {
      await openView(page, svc.url, route, view);
      const controls = (await page.evaluate(kb)).keys;
      await page.evaluate(() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); });
      await page.focus('body');
      // Where the first Tab lands depends on the browser's focus navigation starting point
      // (the blurred element or the top), and leaving the last control may take a press or two
      // outside the page: up to two full rounds, stopping once every control was reached. A
      // control Tab never reaches is missed in both.
      const reached = new Set();
      const walk = [];
      for (let i = 0; i < 2 * (controls.length + 5) && reached.size < controls.length; i++) {
        await page.keyboard.press('Tab');
        const k = (await page.evaluate(kb)).active;
        walk.push(k === undefined ? '-' : k);
        if (k !== undefined && controls.includes(k)) reached.add(k);
      }
      const missed = controls.filter((k) => !reached.has(k));
      assert.deepEqual(missed, [], `${route}: ${missed.length} of ${controls.length} controls not reached by Tab (focus went ${walk.join(' ')})`);
    }
    await page.click('#pause');
    assert.equal(await page.getAttribute('#pause', 'aria-pressed'), 'false');
    // the what-if radio group: arrow keys switch between shape and pod
    await openView(page, svc.url, 'whatif', 'whatif');
    await page.focus('#wi-kind-shape');
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'wi-kind-pod');
    assert.equal(await page.isVisible('#wi-pod'), true);
    // the page's own navigation works from the keyboard: Enter on a tab opens its view
    await openView(page, svc.url, 'cluster', 'cluster');
    await page.focus('nav.tabs a[data-view=health]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('main[data-ready=health]');
  });

  test('axe-core finds no serious or critical violation', async () => {
    for (const [route, view] of VIEWS) {
      await openView(page, svc.url, route, view);
      // evaluated through the debugging protocol: the page's CSP (no inline script) stays on
      if (!(await page.evaluate(() => Boolean(window.axe)))) await page.evaluate(axeSource);
      const found = await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
      });
      assert.deepEqual(found, [], route);
    }
  });
});
