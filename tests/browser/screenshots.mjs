// Screenshots of every dashboard view (scripts/demo.sh, and by hand):
//   node screenshots.mjs BINARY CLUSTER OUTDIR [views...]   starts the binary on the cluster file
//                                                           and refuses its pending pods first
//   node screenshots.mjs --url URL OUTDIR [views...]        a dashboard already running at URL
// Writes OUTDIR/dashboard-<view>.png; the cluster map also as OUTDIR/dashboard.png.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { filterPending, launch, openView, startService, watchedPage } from './lib.mjs';

const argv = process.argv.slice(2);
let url, binary, cluster, outdir, only;
if (argv[0] === '--url') [, url, outdir, ...only] = argv;
else [binary, cluster, outdir, ...only] = argv;
if (!outdir || (!url && !cluster)) {
  console.error('usage: node screenshots.mjs BINARY CLUSTER OUTDIR [views...] | --url URL OUTDIR [views...]');
  process.exit(2);
}
mkdirSync(outdir, { recursive: true });
const views = [
  ['cluster', 'cluster', 'cluster'], ['pending', 'pending', 'pending'],
  ['fragmentation', 'fragmentation', 'fragmentation'], ['quota', 'quota', 'quota'],
  ['health', 'health', 'health'], ['whatif', 'whatif', 'whatif'],
].filter(([name]) => !only.length || only.includes(name));
let svc = null, b = null;
try {
  if (!url) {
    svc = await startService(binary, cluster);
    await filterPending(svc, cluster);
    url = svc.url;
  }
  if (!url.endsWith('/')) url += '/';
  b = await launch();
  const { page, problems } = await watchedPage(b.context, new URL(url).origin);
  for (const [name, route, view] of views) {
    await openView(page, url, route, view);
    if (name === 'whatif') {
      await page.fill('#wi-mem', '8000');
      await page.fill('#wi-cores', '30');
      await page.click('#whatif-form button[type=submit]');
      await page.waitForSelector('[data-whatif=result]');
    }
    await page.screenshot({ path: join(outdir, `dashboard-${name}.png`), fullPage: true });
    if (name === 'cluster') await page.screenshot({ path: join(outdir, 'dashboard.png'), fullPage: true });
  }
  if (problems.length) console.error('problems:\n' + problems.join('\n'));
  console.log(`dashboard screenshots in ${outdir} (${url})`);
} finally {
  if (b) await b.close();
  if (svc) await svc.stop();
}
