// Screenshots of every dashboard view on an embedded cluster (scripts/demo.sh, and by hand):
//   node screenshots.mjs BINARY CLUSTER OUTDIR [views...]
// Writes OUTDIR/dashboard-<view>.png; the cluster map also as OUTDIR/dashboard.png.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { filterPending, launch, openView, startService, watchedPage } from './lib.mjs';

const [binary, cluster, outdir, ...only] = process.argv.slice(2);
if (!binary || !cluster || !outdir) {
  console.error('usage: node screenshots.mjs BINARY CLUSTER OUTDIR [views...]');
  process.exit(2);
}
mkdirSync(outdir, { recursive: true });
const views = [
  ['cluster', 'cluster', 'cluster'], ['pending', 'pending', 'pending'], ['find', 'find?q=llama', 'find'],
  ['pod', 'pod/research/train-llama', 'pod'], ['fragmentation', 'fragmentation', 'fragmentation'],
  ['quota', 'quota', 'quota'], ['health', 'health', 'health'], ['whatif', 'whatif', 'whatif'],
  ['node', 'node/gpu-h100-1', 'node'], ['pending-one', 'pending/research/too-big', 'pending'],
].filter(([name]) => !only.length || only.includes(name));
const svc = await startService(binary, cluster);
let b;
try {
  await filterPending(svc, cluster);
  b = await launch();
  const { page, problems } = await watchedPage(b.context, svc.origin);
  for (const [name, route, view] of views) {
    await openView(page, svc.url, route, view);
    if (name === 'whatif') {
      await page.fill('#wi-mem', '20000');
      await page.fill('#wi-cores', '30');
      await page.click('#whatif-form button[type=submit]');
      await page.waitForSelector('[data-whatif=result]');
    }
    await page.screenshot({ path: join(outdir, `dashboard-${name}.png`), fullPage: true });
    if (name === 'cluster') await page.screenshot({ path: join(outdir, 'dashboard.png'), fullPage: true });
  }
  if (problems.length) console.error('problems:\n' + problems.join('\n'));
  console.log(`dashboard screenshots in ${outdir} (${svc.url})`);
} finally {
  if (b) await b.close();
  await svc.stop();
}
