// How long headless chromium takes to show the cluster map of a large cluster (the heat grid):
//   node bench-heat.mjs BINARY [NODES=5000] [CARDS=8] [PODS_PER_NODE=30]
// Writes a synthetic cluster file (NODES nodes x CARDS cards, PODS_PER_NODE pods holding cards
// on each), serves it with `vgpu-sched serve --cluster`, then times, five times each: a fresh
// page load until every node's square is on screen, and a re-render of the view (the page's
// work alone). Prints one line per measure; not a test (timings are never asserted).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, startService, watchedPage } from './lib.mjs';

const [binary, nodesArg, cardsArg, podsArg] = process.argv.slice(2);
if (!binary) { console.error('usage: node bench-heat.mjs BINARY [NODES] [CARDS] [PODS_PER_NODE]'); process.exit(2); }
const N = Number(nodesArg || 5000), C = Number(cardsArg || 8), P = Number(podsArg || 30);
const dir = mkdtempSync(join(tmpdir(), 'vs-heat-'));
const items = [];
for (let i = 0; i < N; i++) {
  const name = `gpu-${String(i).padStart(5, '0')}`;
  const reg = [];
  for (let c = 0; c < C; c++) reg.push({ id: `GPU-${i}-${c}`, index: c, count: 10, devmem: 81920, devcore: 100, type: 'NVIDIA H100 80GB HBM3', numa: c >> 2, mode: 'hami-core', health: true });
  items.push({ apiVersion: 'v1', kind: 'Node', metadata: { name, annotations: { 'hami.io/node-nvidia-register': JSON.stringify(reg) } }, status: { allocatable: { cpu: '128', memory: '1Ti', pods: '250' } } });
  for (let k = 0; k < (i * 7) % (P + 1); k++) {
    const c = (i + k) % C, mem = 4000 + ((i * 13 + k * 7) % 8) * 2000;
    items.push({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `p-${i}-${k}`, namespace: `team-${k % 12}`, uid: `u-${i}-${k}`,
      annotations: { 'hami.io/vgpu-node': name, 'hami.io/vgpu-devices-allocated': `GPU-${i}-${c},NVIDIA,${mem},10:;` } },
      spec: { nodeName: name, containers: [{ name: 'c', resources: { limits: { 'nvidia.com/gpu': '1' } } }] }, status: { phase: 'Running' } });
  }
}
const file = join(dir, 'cluster.json');
writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
const pods = items.length - N;
const t0 = Date.now();
const svc = await startService(binary, file);
console.log(`cluster: ${N} nodes x ${C} cards, ${pods} pods; service ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
const b = await launch();
try {
  const loads = [], renders = [];
  for (let i = 0; i < 5; i++) {
    const { page, problems } = await watchedPage(b.context, svc.origin);
    const s = Date.now();
    await page.goto(svc.url + '#/cluster');
    await page.waitForSelector(`.heat a:nth-child(${N})`);
    loads.push(Date.now() - s);
    const r = await page.evaluate(async () => {
      const m = document.getElementById('view');
      delete m.dataset.ready;
      const t = performance.now();
      window.dispatchEvent(new HashChangeEvent('hashchange'));
      while (m.dataset.ready !== 'cluster') await new Promise((res) => setTimeout(res, 1));
      return performance.now() - t;
    });
    renders.push(r);
    if (problems.length) console.log('problems: ' + problems.join('; '));
    await page.close();
  }
  const med = (v) => v.slice().sort((a, c) => a - c)[Math.floor(v.length / 2)];
  console.log(`page load until all ${N} squares are shown: median ${med(loads)} ms (runs: ${loads.join(', ')} ms)`);
  console.log(`re-render of the cluster map (fetch of the snapshot + DOM): median ${med(renders).toFixed(0)} ms (runs: ${renders.map((x) => x.toFixed(0)).join(', ')} ms)`);
} finally {
  await b.close();
  await svc.stop();
  rmSync(dir, { recursive: true, force: true });
}
