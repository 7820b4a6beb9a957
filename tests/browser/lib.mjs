// Helpers of the dashboard's browser tests and screenshots: start the real binary on an
// embedded cluster, refuse its pending pods through Filter like kube-scheduler would, and launch
// Debian's chromium through playwright-core (no browser download).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.VS_CHROMIUM || '/usr/bin/chromium';

// Starts `vgpu-sched serve --cluster file` with plain HTTP listeners on free ports; resolves when
// the dashboard answers. extra: more flags.
export async function startService(binary, cluster, extra = []) {
  const args = ['serve', '--cluster', cluster, '--http_bind=127.0.0.1:0',
    '--metrics-bind-address=127.0.0.1:0', '--scheduler-name=hami-scheduler', ...extra];
  const proc = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '', err = '';
  proc.stdout.on('data', (d) => { out += d; });
  proc.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  const deadline = Date.now() + 60000;
  let mainPort = 0, metricsPort = 0, base = '/';
  while (Date.now() < deadline) {
    const m = /^listening on port (\d+)$/m.exec(out);
    const s = /event=serving .*metrics_port=(\d+) dashboard=(\S+)/.exec(err);
    if (m && s) { mainPort = Number(m[1]); metricsPort = Number(s[1]); base = s[2]; break; }
    if (proc.exitCode !== null) throw new Error('vgpu-sched exited: ' + err);
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!mainPort) { proc.kill(); throw new Error('vgpu-sched did not start: ' + err); }
  const origin = `http://127.0.0.1:${metricsPort}`;
  // ready: the store has synced (the snapshot says so)
  let synced = false;
  while (!synced && Date.now() < deadline) {
    try {
      const r = await fetch(origin + base + 'api/v1/snapshot');
      synced = r.ok && (await r.json()).service.synced;
    } catch (e) { /* not yet */ }
    if (!synced) await new Promise((r) => setTimeout(r, 50));
  }
  if (!synced) { proc.kill(); throw new Error('vgpu-sched did not sync within 60 s: ' + err); }
  return {
    proc, mainPort, metricsPort, base, origin, url: origin + base,
    log: () => err,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}

// Sends every pod of the cluster file that is not placed (no spec.nodeName) to Filter over all
// nodes, as kube-scheduler would; returns each pod's answer by "ns/name".
export async function filterPending(svc, cluster) {
  const items = JSON.parse(readFileSync(cluster, 'utf8')).items;
  const nodes = items.filter((i) => i.kind === 'Node').map((n) => n.metadata.name);
  const answers = {};
  for (const p of items.filter((i) => i.kind === 'Pod' && !i.spec.nodeName)) {
    const r = await fetch(`http://127.0.0.1:${svc.mainPort}/filter`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ Pod: p, Nodes: null, NodeNames: nodes }),
    });
    answers[p.metadata.namespace + '/' + p.metadata.name] = await r.json();
  }
  return answers;
}

// Debian's chromium, headless, with a fresh profile directory (its --user-data-dir).
export async function launch(viewport = { width: 1400, height: 1000 }) {
  const profile = mkdtempSync(join(tmpdir(), 'vs-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return {
    context,
    async close() { await context.close(); rmSync(profile, { recursive: true, force: true }); },
  };
}

// A page that records console errors, page errors, failed requests and requests to any other
// origin than `origin`.
export async function watchedPage(context, origin) {
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('requestfailed', (r) => problems.push('failed: ' + r.url() + ' ' + (r.failure() || {}).errorText));
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.origin !== origin && u.protocol !== 'data:') problems.push('off-origin: ' + r.url());
  });
  page.on('dialog', (d) => { problems.push('dialog: ' + d.message()); d.dismiss(); });
  return { page, problems };
}

// Opens a hash route and waits until the view has rendered.
export async function openView(page, url, route, view) {
  await page.evaluate(() => { const m = document.getElementById('view'); if (m) delete m.dataset.ready; })
    .catch(() => {});
  // A hash change on the loaded page, as a person clicking would (a new navigation would abort
  // the page's requests in flight).
  if (page.url().startsWith(url)) {
    await page.evaluate((r) => {
      if (location.hash === '#/' + r) window.dispatchEvent(new HashChangeEvent('hashchange'));
      else location.hash = '#/' + r;
    }, route);
  }
  else {
    await page.goto(url + '#/' + route);
  }
  await page.waitForSelector(`main[data-ready="${view}"]`);
}
