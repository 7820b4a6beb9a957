/* vgpu-sched dashboard: hand-written, no framework. Every string from the cluster reaches the
   page as a DOM text node (textContent), never as markup. All requests are relative to the
   page, so the dashboard works under any base path. Views are hash routes:
   #/cluster  #/node/N  #/ns/NS  #/pending  #/pending/NS/NAME  #/find?q=Q  #/pod/NS/NAME
   #/fragmentation  #/quota  #/health  #/whatif */
'use strict';

(function () {
  const POLL_MS = 2000;
  const state = {
    snap: null, snapEtag: null, paused: false, timer: null, route: null, gen: 0,
    nsIndex: new Map(), lastError: null, pendingEtag: null, pending: null,
  };

  /* ------------------------------------------------------------ DOM helpers */

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') el.className = v;
        else if (k === 'text') el.textContent = v;
        else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
        else el.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
    }
    return el;
  }

  function clear(el) { while (el.firstChild) el.removeChild(el.firstChild); }

  function link(href, text, attrs) { return h('a', Object.assign({ href }, attrs || {}), text); }

  function enc(s) { return encodeURIComponent(s); }
  const nodeHref = (n) => '#/node/' + enc(n);
  const podHref = (ns, n) => '#/pod/' + enc(ns) + '/' + enc(n);
  const nsHref = (ns) => '#/ns/' + enc(ns);
  const pendingHref = (ns, n) => '#/pending/' + enc(ns) + '/' + enc(n);

  /* ------------------------------------------------------------ formatting */

  function mib(v) {
    if (v === null || v === undefined) return 'not reported';
    if (Math.abs(v) < 1024) return v + ' MiB';
    const g = v / 1024;
    return (Math.abs(g - Math.round(g)) < 0.05 ? Math.round(g) : g.toFixed(1)) + ' GiB';
  }
  // exact figures (requests, slices): MiB as asked, GiB beside when large
  function mibExact(v) {
    if (v === null || v === undefined) return 'not reported';
    return v >= 1024 ? v + ' MiB (' + mib(v) + ')' : v + ' MiB';
  }
  // compute in cards: gpucores are percent of one card
  function cardsOf(v) {
    const c = v / 100;
    return (Math.abs(c - Math.round(c)) < 0.005 ? String(Math.round(c)) : c.toFixed(2)) + (c === 1 ? ' card' : ' cards');
  }
  function pct(v) { return v === null || v === undefined ? 'not reported' : v + ' %'; }
  function num(v, digits) {
    if (v === null || v === undefined) return 'not reported';
    return Number(v).toFixed(digits === undefined ? 2 : digits);
  }
  function secs(v) {
    if (v === null || v === undefined) return 'not reported';
    if (v === 0) return '0 s';
    if (v < 0.001) return (v * 1e6).toFixed(0) + ' µs';
    if (v < 1) return (v * 1000).toFixed(v < 0.01 ? 2 : 1) + ' ms';
    return v.toFixed(2) + ' s';
  }
  function age(seconds) {
    if (seconds === null || seconds === undefined || seconds < 0) return 'not reported';
    seconds = Math.floor(seconds);
    const d = Math.floor(seconds / 86400), hh = Math.floor((seconds % 86400) / 3600);
    const m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    if (d) return d + 'd ' + hh + 'h';
    if (hh) return hh + 'h ' + m + 'm';
    if (m) return m + 'm ' + s + 's';
    return s + 's';
  }
  function when(unix) {
    if (!unix) return 'not reported';
    return new Date(unix * 1000).toLocaleString();
  }
  function ratio(used, total) { return total > 0 ? Math.max(0, Math.min(1, used / total)) : 0; }
  function request(c) {
    if (!c || !c.cards) return 'no GPU';
    const mem = c.memMiB !== null && c.memMiB !== undefined ? mibExact(c.memMiB)
      : c.memPct !== null && c.memPct !== undefined ? c.memPct + ' % of memory' : 'whole memory';
    return c.cards + ' × ' + mem + ', ' + c.coresPct + ' % cores';
  }

  /* ------------------------------------------------------------ namespaces */

  function nsCode(i) {
    let s = '';
    i += 1;
    while (i > 0) { const r = (i - 1) % 26; s = String.fromCharCode(65 + r) + s; i = Math.floor((i - 1) / 26); }
    return s;
  }
  function indexNamespaces(snap) {
    const names = new Set((snap.namespaces || []).map((n) => n.name));
    for (const n of snap.nodes || []) for (const c of n.cards || []) for (const p of c.pods || []) names.add(p.namespace);
    const sorted = Array.from(names).sort();
    state.nsIndex = new Map(sorted.map((n, i) => [n, i]));
  }
  function nsClass(ns) {
    const i = state.nsIndex.has(ns) ? state.nsIndex.get(ns) : 9;
    return 'ns' + (i % 10);
  }
  function nsTag(ns) {
    const i = state.nsIndex.has(ns) ? state.nsIndex.get(ns) : -1;
    return i >= 0 ? nsCode(i) : '?';
  }
  function swatch(ns, extra) {
    return h('span', { class: 'swatch ' + nsClass(ns) + (extra ? ' ' + extra : ''), 'aria-hidden': 'true' }, nsTag(ns));
  }

  /* ------------------------------------------------------------ fetching */

  // The browser's cache revalidates with the ETag it stored (If-None-Match) and turns a 304 into
  // the stored answer: an unchanged document costs the server no copy and the page no parse of a
  // new body. The caller compares ETags to skip re-rendering.
  async function getJSON(path) {
    const r = await fetch(path, { headers: { Accept: 'application/json' }, cache: 'no-cache', credentials: 'same-origin' });
    let body = null;
    try { body = await r.json(); } catch (e) { body = null; }
    if (!r.ok) {
      const err = new Error(body && body.error ? body.error : 'HTTP ' + r.status);
      err.status = r.status;
      throw err;
    }
    return { status: r.status, etag: r.headers.get('ETag'), body };
  }

  async function refreshSnapshot() {
    const r = await getJSON('api/v1/snapshot');
    if (state.snap && r.etag && r.etag === state.snapEtag) return false;
    state.snap = r.body;
    state.snapEtag = r.etag;
    indexNamespaces(state.snap);
    return true;
  }

  /* ------------------------------------------------------------ header and summary */

  function renderStatus() {
    const el = document.getElementById('status');
    clear(el);
    const s = state.snap;
    if (!s) return;
    el.append(...[
      h('span', { class: 'chip ' + (s.service.leader ? 'ok' : 'no') }, s.service.leader ? 'leader' : 'not the leader'),
      h('span', { class: 'chip ' + (s.service.synced ? 'ok' : 'no') }, s.service.synced ? 'cache synced' : 'cache syncing'),
      h('span', { class: 'chip' }, 'policies ' + s.service.nodePolicy + ' / ' + s.service.gpuPolicy),
      h('span', { class: 'chip', id: 'updated' }, (state.paused ? 'paused at ' : 'updated ') + new Date(s.generatedAt * 1000).toLocaleTimeString()),
      state.lastError ? h('span', { class: 'chip no' }, 'update failed: ' + state.lastError) : null].filter(Boolean));
  }

  function stat(label, value, detail, used, total, key) {
    return h('div', { class: 'stat', 'data-stat': key },
      h('div', { class: 'label' }, label),
      h('div', { class: 'value', 'data-value': used !== undefined ? used : value }, value),
      detail ? h('div', { class: 'detail' }, detail) : null,
      total ? h('div', { class: 'meter', role: 'img', 'aria-label': label + ' ' + Math.round(ratio(used, total) * 100) + ' % used' },
        meterFill(ratio(used, total))) : null);
  }
  function meterFill(r) { const d = h('div'); d.style.width = (r * 100).toFixed(1) + '%'; return d; }

  function renderSummary() {
    const el = document.getElementById('summary');
    clear(el);
    const s = state.snap;
    if (!s) return;
    const t = s.summary;
    el.append(
      stat('GPU nodes', String(t.gpuNodes), t.nodes + ' nodes in all', undefined, 0, 'gpuNodes'),
      stat('Cards', String(t.cards), t.cardsUsed + ' in use, ' + t.cardsIdle + ' idle' + (t.cardsUnusable ? ', ' + t.cardsUnusable + ' unusable' : ''), undefined, 0, 'cards'),
      stat('GPU memory', mib(t.memUsedMiB), 'of ' + mib(t.memTotalMiB) + ' allocated', t.memUsedMiB, t.memTotalMiB, 'memUsedMiB'),
      stat('GPU compute', cardsOf(t.coresUsedPct), 'of ' + cardsOf(t.coresTotalPct) + ' (gpucores ÷ 100)', t.coresUsedPct, t.coresTotalPct, 'coresUsedPct'),
      stat('Slots', String(t.slotsUsed), 'of ' + t.slotsTotal + ' container slots', t.slotsUsed, t.slotsTotal, 'slotsUsed'),
      stat('GPU pods', String(t.pods), 'tracked on cards', undefined, 0, 'pods'),
      stat('Pending', String(t.pending), 'refused, not placed yet', undefined, 0, 'pending'));
    document.getElementById('pending-count').textContent = t.pending ? String(t.pending) : '';
  }

  /* ------------------------------------------------------------ bars */

  function bar(kind, card, total, used, shareOf, focusable) {
    const b = h('div', { class: 'bar', role: focusable ? 'group' : 'img',
      'aria-label': kind + ': ' + figure(kind, used) + ' of ' + figure(kind, total) + ' used' });
    let accounted = 0;
    for (const p of card.pods || []) {
      const v = shareOf(p);
      if (!v) continue;
      accounted += v;
      const w = ratio(v, total) * 100;
      const label = p.namespace + '/' + p.name + ': ' + figure(kind, v) + (p.state !== 'bound' ? ' (' + p.state + ')' : '');
      const seg = focusable
        ? h('a', { class: 'seg ' + nsClass(p.namespace) + ' ' + p.state, href: podHref(p.namespace, p.name), title: label, 'aria-label': label })
        : h('span', { class: 'seg ' + nsClass(p.namespace) + ' ' + p.state, title: label });
      seg.style.width = w.toFixed(2) + '%';
      if (w > 6) seg.textContent = nsTag(p.namespace);
      b.append(seg);
    }
    if (!card.pods && used > 0) {
      const seg = h('span', { class: 'fill' + (ratio(used, total) > 0.9 ? ' hot' : ''), title: figure(kind, used) + ' used' });
      seg.style.width = (ratio(used, total) * 100).toFixed(2) + '%';
      b.append(seg);
    } else if (card.pods && used > accounted) {
      const seg = h('span', { class: 'seg other', title: figure(kind, used - accounted) + ' held by pods not shown' });
      seg.style.width = (ratio(used - accounted, total) * 100).toFixed(2) + '%';
      b.append(seg);
    }
    return b;
  }
  function figure(kind, v) { return kind === 'Memory' ? mib(v) : kind === 'Cores' ? pct(v) : v + (v === 1 ? ' slot' : ' slots'); }

  function cardBlock(node, c) {
    const flags = [];
    if (!c.health) flags.push(h('span', { class: 'badge bad' }, 'unhealthy'));
    if (c.cordoned) flags.push(h('span', { class: 'badge warn' }, 'cordoned'));
    if (c.migUnhealthy) flags.push(h('span', { class: 'badge bad' }, 'MIG bookkeeping off'));
    return h('div', { class: 'card', 'data-uuid': c.uuid },
      h('div', { class: 'title' },
        h('span', { class: 'idx' }, 'GPU ' + c.index),
        h('span', null, c.type),
        h('span', { class: 'muted' }, (c.vendor || '') + ' · ' + (c.mode || 'hami-core') + ' · NUMA ' + c.numa),
        h('span', { class: 'muted mono', title: c.uuid }, c.uuid.length > 18 ? c.uuid.slice(0, 18) + '…' : c.uuid),
        flags),
      h('div', { class: 'bars' },
        h('span', { class: 'what' }, 'Memory'), bar('Memory', c, c.memTotalMiB, c.memUsedMiB, (p) => p.memMiB, true),
        h('span', { class: 'fig', 'data-mem-used': c.memUsedMiB, 'data-mem-total': c.memTotalMiB }, mib(c.memUsedMiB) + ' / ' + mib(c.memTotalMiB)),
        h('span', { class: 'what' }, 'Cores'), bar('Cores', c, c.coresTotalPct, c.coresUsedPct, (p) => p.coresPct, false),
        h('span', { class: 'fig', 'data-cores-used': c.coresUsedPct }, c.coresUsedPct + ' / ' + c.coresTotalPct + ' %'),
        h('span', { class: 'what' }, 'Slots'), bar('Slots', c, c.slotsTotal, c.slotsUsed, (p) => p.slots, false),
        h('span', { class: 'fig', 'data-slots-used': c.slotsUsed }, c.slotsUsed + ' / ' + c.slotsTotal)));
  }

  function nodeBlock(n) {
    return h('section', { class: 'node', 'data-node': n.name, 'aria-label': 'node ' + n.name },
      h('header', null,
        link(nodeHref(n.name), n.name, { class: 'nodename' }),
        !n.schedulable ? h('span', { class: 'badge warn' }, 'unschedulable') : null,
        n.error ? h('span', { class: 'badge bad', title: n.error }, 'devices unusable') : null,
        h('span', { class: 'muted' }, n.cardCount + (n.cardCount === 1 ? ' card, ' : ' cards, ') + n.pods + (n.pods === 1 ? ' pod' : ' pods'))),
      n.error ? h('p', { class: 'error-box' }, n.error) : null,
      (n.cards || []).map((c) => cardBlock(n, c)));
  }

  function legend(snap) {
    const names = Array.from(state.nsIndex.keys());
    if (!names.length) return null;
    return h('div', { class: 'legend', 'aria-label': 'Namespaces' },
      h('span', { class: 'muted' }, 'Namespaces:'),
      names.map((ns) => link(nsHref(ns), [swatch(ns), h('span', { class: 'nsname' }, ns)])),
      h('span', { class: 'muted' }, h('span', { class: 'swatch ns8 reserved', 'aria-hidden': 'true' }, ' '), ' striped: reserved or placed, not bound yet'));
  }

  /* ------------------------------------------------------------ views */

  const views = {};

  views.cluster = function (root, args) {
    const s = state.snap;
    const gpuNodes = s.nodes.filter((n) => n.registered);
    const hidden = s.nodes.length - gpuNodes.length;
    root.append(h('h1', null, 'Cluster map'));
    if (!gpuNodes.length) {
      root.append(h('p', { class: 'muted' }, 'No node has registered GPUs yet (hami.io/node-nvidia-register).'));
      return;
    }
    const filter = h('input', { type: 'search', id: 'node-filter', placeholder: 'node name contains…', value: args.q || '' });
    const form = h('form', { class: 'row', role: 'search', onsubmit: (e) => { e.preventDefault(); location.hash = '#/cluster' + (filter.value ? '?q=' + enc(filter.value) : ''); } },
      h('label', { for: 'node-filter' }, 'Filter nodes'), filter, h('button', { class: 'btn', type: 'submit' }, 'Filter'),
      hidden ? h('span', { class: 'muted' }, hidden + ' nodes without GPUs not shown') : null);
    root.append(form);
    const shown = args.q ? gpuNodes.filter((n) => n.name.toLowerCase().includes(args.q.toLowerCase())) : gpuNodes;
    if (s.detail === 'pods') {
      root.append(legend(s));
      root.append(h('div', { class: 'nodes' }, shown.map(nodeBlock)));
    } else {
      root.append(heatGrid(shown));
    }
  };

  function heatLevel(n) {
    if (n.error) return 'hx';
    const r = ratio(n.memUsedMiB, n.memTotalMiB);
    return r === 0 ? 'h0' : r < 0.25 ? 'h1' : r < 0.6 ? 'h2' : r < 0.9 ? 'h3' : 'h4';
  }

  function heatGrid(nodes) {
    const wrap = h('div', { class: 'panel' });
    wrap.append(h('p', null, nodes.length + ' GPU nodes: each square is one node, by share of its GPU memory allocated. Select one to see its cards and pods.'));
    wrap.append(h('div', { class: 'heat-legend' },
      [['h0', 'idle'], ['h1', 'under 25 %'], ['h2', '25–60 %'], ['h3', '60–90 %'], ['h4', '90 % or more'], ['hx', 'devices unusable']]
        .map(([c, t]) => h('span', null, h('span', { class: 'box ' + c, 'aria-hidden': 'true' }), t))));
    // Thousands of squares: plain elements with few attributes (the title names the link for
    // assistive technology as well), built in a detached container.
    const grid = h('div', { class: 'heat', role: 'group', 'aria-label': 'GPU nodes by memory allocated' });
    const frag = document.createDocumentFragment();
    nodes.forEach((n, i) => {
      const a = document.createElement('a');
      a.className = heatLevel(n);
      a.href = nodeHref(n.name);
      a.title = n.name + ': ' + mib(n.memUsedMiB) + ' of ' + mib(n.memTotalMiB) + ', ' + n.pods + ' pods' + (n.error ? ', devices unusable' : '');
      if (i) a.tabIndex = -1;
      frag.appendChild(a);
    });
    grid.appendChild(frag);
    // one tab stop for the grid; arrows move within it
    grid.addEventListener('keydown', (e) => {
      const items = Array.from(grid.children);
      const i = items.indexOf(document.activeElement);
      if (i < 0) return;
      // the squares in the first row: the row length, whatever the width
      let cols = 1;
      while (cols < items.length && items[cols].offsetTop === items[0].offsetTop) cols++;
      const to = { ArrowRight: i + 1, ArrowLeft: i - 1, ArrowDown: i + cols, ArrowUp: i - cols, Home: 0, End: items.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      const j = Math.max(0, Math.min(items.length - 1, to));
      items[i].tabIndex = -1;
      items[j].tabIndex = 0;
      items[j].focus();
    });
    wrap.append(grid);
    return wrap;
  }

  views.node = async function (root, args) {
    const name = args.parts[0];
    const r = await getJSON('api/v1/nodes/' + enc(name));
    const n = r.body.node;
    root.append(h('p', null, link('#/cluster', '← Cluster map')));
    root.append(h('h1', null, 'Node ', h('span', { class: 'mono' }, n.name)));
    root.append(h('div', { class: 'panel' }, h('dl', { class: 'facts' },
      h('dt', null, 'Schedulable'), h('dd', null, n.schedulable ? 'yes' : 'no (cordoned by kubectl)'),
      h('dt', null, 'GPU memory'), h('dd', null, mib(n.memUsedMiB) + ' of ' + mib(n.memTotalMiB)),
      h('dt', null, 'GPU cores'), h('dd', null, n.coresUsedPct + ' of ' + n.coresTotalPct + ' %'),
      h('dt', null, 'Slots'), h('dd', null, n.slotsUsed + ' of ' + n.slotsTotal),
      h('dt', null, 'Pods'), h('dd', null, String(n.pods)),
      n.error ? [h('dt', null, 'Problem'), h('dd', { class: 'refused' }, n.error)] : null)));
    const names = new Set(state.nsIndex.keys());
    for (const c of n.cards) for (const p of c.pods) names.add(p.namespace);
    if (names.size !== state.nsIndex.size) state.nsIndex = new Map(Array.from(names).sort().map((x, i) => [x, i]));
    root.append(legend());
    root.append(h('div', { class: 'nodes' }, nodeBlock(n)));
    const rows = [];
    for (const c of n.cards) for (const p of c.pods) rows.push([p, c]);
    root.append(h('h2', null, 'Pods on this node'));
    if (!rows.length) { root.append(h('p', { class: 'muted' }, 'No GPU pod is on this node.')); return; }
    root.append(table(['Namespace', 'Pod', 'State', 'GPU', 'Memory', 'Cores', 'Slots'], rows.map(([p, c]) => [
      link(nsHref(p.namespace), [swatch(p.namespace), ' ', p.namespace]),
      link(podHref(p.namespace, p.name), p.name), p.state, 'GPU ' + c.index,
      num_(p.memMiB, mib(p.memMiB)), num_(p.coresPct, pct(p.coresPct)), num_(p.slots, String(p.slots))])));
  };

  function num_(v, text) { return { num: true, value: v, text }; }

  const NUM_HEADS = new Set(['Memory', 'Cores', 'Slots', 'Attempts', 'Count', 'Nodes', 'Age', 'Waiting',
    'In flight', 'Cards', 'Free cards', 'Idle (cards)', 'Stranded (cards)', 'Pods', 'Memory used',
    'Memory limit', 'Cores used', 'Cores limit', 'Weight']);

  function table(heads, rows, attrs) {
    const t = h('table', attrs || null,
      h('thead', null, h('tr', null, heads.map((x) => h('th', { scope: 'col', class: NUM_HEADS.has(x) ? 'num' : null }, x)))),
      h('tbody', null, rows.map((r) => h('tr', null, r.map((c) => {
        if (c && typeof c === 'object' && !(c instanceof Node) && !Array.isArray(c) && c.num) {
          return h('td', { class: 'num', 'data-value': c.value === null || c.value === undefined ? 'null' : c.value }, c.text);
        }
        return h('td', null, c);
      })))));
    return h('div', { class: 'table-wrap' }, t);
  }

  views.ns = function (root, args) {
    const ns = args.parts[0];
    const s = state.snap;
    const q = (s.namespaces || []).find((x) => x.name === ns);
    root.append(h('p', null, link('#/quota', '← Quota')));
    root.append(h('h1', null, swatch(ns), ' Namespace ', h('span', { class: 'mono' }, ns)));
    if (q) root.append(quotaPanel(q));
    const rows = [];
    for (const n of s.nodes) for (const c of n.cards || []) for (const p of c.pods || []) if (p.namespace === ns) rows.push([p, n, c]);
    root.append(h('h2', null, 'GPU pods'));
    if (s.detail !== 'pods') {
      root.append(h('p', { class: 'muted' }, 'This cluster is large: pods are listed per node. ', link('#/find?q=' + enc(ns), 'Search this namespace\'s pods')));
    } else if (!rows.length) {
      root.append(h('p', { class: 'muted' }, 'No GPU pod of this namespace is on a card.'));
    } else {
      root.append(table(['Pod', 'Node', 'GPU', 'State', 'Memory', 'Cores'], rows.map(([p, n, c]) => [
        link(podHref(p.namespace, p.name), p.name), link(nodeHref(n.name), n.name), 'GPU ' + c.index, p.state,
        num_(p.memMiB, mib(p.memMiB)), num_(p.coresPct, pct(p.coresPct))])));
    }
    const pend = (state.pending && state.pending.pods || []).filter((p) => p.namespace === ns);
    if (pend.length) {
      root.append(h('h2', null, 'Pending pods'));
      root.append(h('ul', null, pend.map((p) => h('li', null, link(pendingHref(p.namespace, p.name), p.name)))));
    }
  };

  function usageLine(label, used, limit, fmt) {
    return h('div', { class: 'hbar' },
      h('span', null, label + ': ' + fmt(used) + (limit === null || limit === undefined ? ' (no limit)' : ' of ' + fmt(limit))),
      limit ? h('div', { class: 'meter', role: 'img', 'aria-label': label + ' ' + Math.round(ratio(used, limit) * 100) + ' % of the limit' }, meterFill(ratio(used, limit))) : h('span'),
      h('span', { class: 'muted' }, limit ? Math.round(ratio(used, limit) * 100) + ' %' : ''));
  }
  function quotaPanel(q) {
    return h('div', { class: 'panel' },
      usageLine('GPU memory', q.memUsedMiB, q.memLimitMiB, mib),
      usageLine('GPU cores', q.coresUsedPct, q.coresLimitPct, pct));
  }

  function missNote(x) {
    if (x.error) return '—';
    return x.nearestMissStatus === 'none' ? 'no card of an accepted type comes near' : 'not worked out';
  }

  async function loadPending() {
    const r = await getJSON('api/v1/pending');
    if (!state.pending || r.etag !== state.pendingEtag) { state.pending = r.body; state.pendingEtag = r.etag; }
    return state.pending;
  }

  views.pending = async function (root, args) {
    if (args.parts.length === 2) return pendingOne(root, args.parts[0], args.parts[1]);
    const p = await loadPending();
    root.append(h('h1', null, 'Pending GPU pods'));
    root.append(h('p', { class: 'muted' }, 'Every GPU pod vgpu-sched refused and has not placed yet, with the reasons of its last Filter. Kept until the pod is placed or deleted.'));
    if (!p.pods.length) { root.append(h('p', { class: 'panel' }, 'No GPU pod is waiting.')); return; }
    const totals = new Map();
    for (const x of p.pods) for (const r of x.reasons) totals.set(r.reason, (totals.get(r.reason) || 0) + 1);
    const top = Array.from(totals.entries()).sort((a, b) => b[1] - a[1]);
    root.append(h('div', { class: 'panel' }, h('h2', null, 'Why, across pending pods'),
      top.map(([word, n]) => h('div', { class: 'hbar' }, h('span', null, word),
        h('div', { class: 'meter', role: 'img', 'aria-label': word + ': ' + n + ' pods' }, meterFill(n / p.pods.length)), h('span', null, n + (n === 1 ? ' pod' : ' pods'))))));
    const now = p.generatedAt;
    root.append(table(['Pod', 'Asks', 'Age', 'Attempts', 'Reasons (nodes)', 'Nearest miss'], p.pods.map((x) => [
      h('span', null, swatch(x.namespace), ' ', link(pendingHref(x.namespace, x.name), x.namespace + '/' + x.name)),
      x.error ? h('span', { class: 'refused' }, 'invalid request') : x.containers.filter((c) => c.cards).map((c) => h('div', null, request(c))),
      num_(now - x.firstRefusedAt, age(now - x.firstRefusedAt)),
      num_(x.attempts, String(x.attempts)),
      x.error ? h('span', { class: 'refused' }, x.error) : h('span', { class: 'reasons' }, x.reasons.slice(0, 4).map((r) => r.reason + ' (' + r.nodes + ')').join(', ')),
      x.nearestMiss ? x.nearestMiss.text : h('span', { class: 'muted' }, missNote(x))]), { 'data-table': 'pending' }));
  };

  async function pendingOne(root, ns, name) {
    const r = await getJSON('api/v1/pending/' + enc(ns) + '/' + enc(name));
    const x = r.body.pod;
    const now = r.body.generatedAt;
    root.append(h('p', null, link('#/pending', '← Pending')));
    root.append(h('h1', null, 'Pending: ', h('span', { class: 'mono' }, x.namespace + '/' + x.name)));
    root.append(h('div', { class: 'panel' }, h('dl', { class: 'facts' },
      h('dt', null, 'Namespace'), h('dd', null, link(nsHref(x.namespace), x.namespace)),
      h('dt', null, 'Refused since'), h('dd', null, when(x.firstRefusedAt) + ' (' + age(now - x.firstRefusedAt) + ' ago)'),
      h('dt', null, 'Attempts'), h('dd', null, String(x.attempts)),
      h('dt', null, 'Asks'), h('dd', null, x.containers.map((c) => h('div', null, c.name + (c.init ? ' (init)' : '') + ': ' + request(c)))),
      x.useGpuType ? [h('dt', null, 'Card types'), h('dd', null, x.useGpuType)] : null,
      h('dt', null, 'Nearest miss'), h('dd', null, x.nearestMiss ? x.nearestMiss.text : missNote(x)),
      x.preemption ? [h('dt', null, 'Preempting'), h('dd', null, x.preemption.victims.join(', ') + ' on ' + x.preemption.node)] : null,
      h('dt', null, 'Details'), h('dd', null, link(podHref(x.namespace, x.name), 'The pod\'s page')))));
    if (x.error) root.append(h('p', { class: 'error-box' }, x.error));
    root.append(h('h2', null, 'Reasons of the last Filter'));
    root.append(table(['Reason', 'Nodes'], x.reasons.map((w) => [w.reason, num_(w.nodes, String(w.nodes))])));
    root.append(h('h2', null, 'Per node'));
    root.append(table(['Node', 'Why it did not fit'], x.nodes.map((n) => [link(nodeHref(n.node), n.node), n.reason])));
    if (x.nodesNotKept) root.append(h('p', { class: 'muted' }, x.nodesNotKept + ' more nodes refused it; their reasons are counted above, not kept one by one.'));
  }

  views.find = async function (root, args) {
    root.append(h('h1', null, 'Find my pod'));
    const input = h('input', { type: 'search', id: 'find-q', name: 'q', placeholder: 'pod name or namespace', value: args.q || '', autocomplete: 'off' });
    root.append(h('form', { class: 'row panel', role: 'search', onsubmit: (e) => { e.preventDefault(); location.hash = '#/find?q=' + enc(input.value.trim()); } },
      h('label', { for: 'find-q' }, 'Pod'), input, h('button', { class: 'btn', type: 'submit' }, 'Find')));
    if (!args.q) { root.append(h('p', { class: 'muted' }, 'Type part of a pod\'s name (or its namespace): its node, cards, slices, mode, bind phase and policy.')); return; }
    const r = await getJSON('api/v1/pods?q=' + enc(args.q));
    const pods = r.body.pods;
    if (!pods.length) { root.append(h('p', { class: 'panel' }, 'No GPU pod matches “', args.q, '”. vgpu-sched tracks pods that asked for a GPU.')); return; }
    if (pods.length === 1 && args.go !== '0') { location.replace(podHref(pods[0].namespace, pods[0].name)); return; }
    root.append(table(['Pod', 'Namespace', 'Node', 'State'], pods.map((p) => [
      link(podHref(p.namespace, p.name), p.name), link(nsHref(p.namespace), p.namespace),
      p.node ? link(nodeHref(p.node), p.node) : h('span', { class: 'muted' }, 'none'), p.state]), { 'data-table': 'found' }));
    if (r.body.truncated) root.append(h('p', { class: 'muted' }, 'More pods match: type more of the name.'));
  };

  views.pod = async function (root, args) {
    const [ns, name] = args.parts;
    const r = await getJSON('api/v1/pods/' + enc(ns) + '/' + enc(name));
    const p = r.body;
    root.append(h('p', null, link('#/find?q=' + enc(name) + '&go=0', '← Find my pod')));
    root.append(h('h1', null, 'Pod ', h('span', { class: 'mono' }, p.namespace + '/' + p.name)));
    const st = p.state === 'pending' ? h('span', { class: 'refused' }, 'pending: refused by Filter') : p.state;
    root.append(h('div', { class: 'panel' }, h('dl', { class: 'facts', 'data-pod': p.namespace + '/' + p.name },
      h('dt', null, 'Namespace'), h('dd', null, link(nsHref(p.namespace), [swatch(p.namespace), ' ', p.namespace])),
      h('dt', null, 'State'), h('dd', { 'data-field': 'state' }, st),
      h('dt', null, 'Node'), h('dd', { 'data-field': 'node' }, p.node ? link(nodeHref(p.node), p.node) : 'none yet'),
      h('dt', null, 'Mode'), h('dd', { 'data-field': 'mode' }, p.mode || 'not reported'),
      h('dt', null, 'Bind phase'), h('dd', { 'data-field': 'bindPhase' }, p.bindPhase || 'not reported'),
      h('dt', null, 'Bind time'), h('dd', null, when(p.bindTime)),
      h('dt', null, 'Policies'), h('dd', { 'data-field': 'policies' }, 'node ' + p.policies.node + ' (' + p.policies.nodeFrom + '), GPU ' + p.policies.gpu + ' (' + p.policies.gpuFrom + ')'),
      h('dt', null, 'Phase'), h('dd', null, p.phase || 'not reported'),
      h('dt', null, 'Priority'), h('dd', null, p.priority === null ? 'not reported' : String(p.priority)),
      h('dt', null, 'Filtered at'), h('dd', null, when(p.filteredAt)),
      p.preemption ? [h('dt', null, 'Preemption'), h('dd', null, 'evicting ' + p.preemption.victims + ' on ' + p.preemption.node)] : null,
      p.api.error ? [h('dt', null, 'API'), h('dd', { class: 'refused' }, p.api.error)] : null)));
    if (p.cards.length) {
      root.append(h('h2', null, 'Cards'));
      root.append(table(['GPU', 'UUID', 'Vendor', 'Model', 'Memory', 'Cores', 'Slots', 'Card memory used'], p.cards.map((c) => [
        link(nodeHref(p.node), 'GPU ' + c.index), h('span', { class: 'mono' }, c.uuid), c.vendor, c.type,
        num_(c.memMiB, mibExact(c.memMiB)), num_(c.coresPct, pct(c.coresPct)), num_(c.slots, String(c.slots)),
        mib(c.cardMemUsedMiB) + ' of ' + mib(c.cardMemTotalMiB)]), { 'data-table': 'pod-cards' }));
    }
    root.append(h('h2', null, 'Containers'));
    root.append(table(['Container', 'Asks', 'Slices (card: memory, cores)'], p.containers.map((c) => [
      c.name + (c.init ? ' (init)' : ''), c.request ? request(c.request) : 'no GPU',
      c.devices.length ? c.devices.map((d) => h('div', null, (d.index === null ? d.uuid : 'GPU ' + d.index) + ': ' + mibExact(d.memMiB) + ', ' + pct(d.coresPct))) : h('span', { class: 'muted' }, 'none')])));
    if (p.mig.length) {
      root.append(h('h2', null, 'MIG instances'));
      root.append(table(['Container', 'GPU', 'Profile', 'Placement', 'MIG UUID'], p.mig.map((m) => [
        String(m.container), h('span', { class: 'mono' }, m.gpu), m.profile, m.placementStart + '+' + m.placementSize, m.migUuid || 'not created yet'])));
    }
    if (p.pending) {
      root.append(h('h2', null, 'Why it is pending'));
      root.append(h('div', { class: 'panel' },
        h('p', null, p.pending.error || p.pending.reasons.map((w) => w.reason + ' on ' + w.nodes + (w.nodes === 1 ? ' node' : ' nodes')).join('; ')),
        p.pending.nearestMiss ? h('p', null, 'Nearest miss: ', p.pending.nearestMiss.text) : null,
        h('p', null, link(pendingHref(p.namespace, p.name), 'Every node\'s reason'))));
    }
  };

  views.fragmentation = async function (root) {
    const r = await getJSON('api/v1/fragmentation');
    const f = r.body;
    root.append(h('h1', null, 'Fragmentation'));
    root.append(h('p', { class: 'muted' }, 'Idle capacity in cards (half a card\'s free cores plus half its free memory). Stranded: the idle capacity no request shape seen so far can use, by vgpu-sched\'s fragmentation measure.'));
    const t = f.total;
    root.append(h('div', { class: 'summary inline' },
      stat('Idle capacity', t.idleCards === null ? 'not reported' : num(t.idleCards) + ' cards', 'healthy cards, free share', undefined, 0, 'idleCards'),
      stat('Stranded', t.strandedCards === null ? 'not reported' : num(t.strandedCards) + ' cards', t.strandedCards === null ? 'no GPU pod seen yet to measure against' : 'unusable by the workload seen', undefined, 0, 'strandedCards')));
    if (f.workload.length) {
      root.append(h('h2', null, 'Workload measured against'));
      root.append(table(['Cards', 'Memory', 'Cores', 'Weight'], f.workload.map((w) => [
        num_(w.cards, String(w.cards)), w.memMiB !== null ? mib(w.memMiB) : w.memPct + ' % of a card', pct(w.coresPct), num(w.weight, 3)])));
    }
    const nodes = f.nodes.slice().sort((a, b) => (b.strandedCards || 0) - (a.strandedCards || 0) || a.name.localeCompare(b.name));
    root.append(h('h2', null, 'Per node'));
    root.append(table(['Node', 'Cards', 'Free cards', 'Largest slice that fits', 'Idle (cards)', 'Stranded (cards)'], nodes.map((n) => [
      link(nodeHref(n.name), n.name), num_(n.cards, String(n.cards)), num_(n.freeCards, String(n.freeCards)),
      n.largestSlice ? 'GPU ' + n.largestSlice.card + ': ' + mib(n.largestSlice.memMiB) + ', ' + pct(n.largestSlice.coresPct) : h('span', { class: 'muted' }, 'nothing fits'),
      num_(n.idleCards, n.idleCards === null ? 'not reported' : num(n.idleCards)),
      num_(n.strandedCards, n.strandedCards === null ? 'not reported' : num(n.strandedCards))]), { 'data-table': 'fragmentation' }));
  };

  views.quota = function (root) {
    const s = state.snap;
    root.append(h('h1', null, 'Quota'));
    root.append(h('p', { class: 'muted' }, 'GPU memory and cores each namespace holds, as HAMi accounts them, against the smallest ResourceQuota limit (limits.nvidia.com/gpumem, limits.nvidia.com/gpucores).'));
    if (!s.namespaces.length) { root.append(h('p', { class: 'panel' }, 'No namespace holds GPUs or has a GPU quota.')); return; }
    const usedCell = (used, limit, fmt, what) => {
      const cell = h('div', null, fmt(used));
      if (limit !== null && limit !== undefined) {
        cell.append(h('div', { class: 'meter', role: 'img', 'aria-label': what + ' ' + Math.round(ratio(used, limit) * 100) + ' % of the limit' }, meterFill(ratio(used, limit))));
      }
      return { num: true, value: used, text: cell };
    };
    root.append(table(['Namespace', 'Pods', 'Memory used', 'Memory limit', 'Cores used', 'Cores limit'], s.namespaces.map((q) => [
      link(nsHref(q.name), [swatch(q.name), ' ', q.name]),
      num_(q.pods, q.pods === null ? 'not reported' : String(q.pods)),
      usedCell(q.memUsedMiB, q.memLimitMiB, mib, 'memory'), num_(q.memLimitMiB, q.memLimitMiB === null ? 'no limit' : mib(q.memLimitMiB)),
      usedCell(q.coresUsedPct, q.coresLimitPct, pct, 'cores'), num_(q.coresLimitPct, q.coresLimitPct === null ? 'no limit' : pct(q.coresLimitPct))]), { 'data-table': 'quota' }));
  };

  views.health = async function (root) {
    const r = await getJSON('api/v1/health');
    const x = r.body;
    root.append(h('h1', null, 'Health'));
    if (!x.leader) root.append(h('p', { class: 'notice' }, 'This replica is not the leader: Filter and Bind are served by the leader; this page shows this replica\'s view.'));
    (x.draConflicts || []).forEach((c) => root.append(h('p', { class: 'notice', 'data-dra-conflict': c.deviceclass },
      'DeviceClass ' + c.deviceclass + ' maps ' + c.resource + ' to DRA: kube-scheduler refuses every pod asking ' + c.resource + ' before vgpu-sched sees it.')));
    const f = x.filter, b = x.bind;
    root.append(h('div', { class: 'summary inline' },
      stat('Filter', String(f.results.scheduled + f.results.unschedulable + f.results.error + f.results.passthrough), f.results.scheduled + ' placed, ' + f.results.unschedulable + ' refused, ' + f.results.error + ' errors', undefined, 0, 'filterTotal'),
      stat('Filter latency', secs(f.latency.meanSeconds), 'mean; p99 ≤ ' + secs(f.latency.p99Seconds), undefined, 0, 'filterMean'),
      stat('Bind', String(b.ok + b.error), b.ok + ' bound, ' + b.error + ' failed', undefined, 0, 'bindTotal'),
      stat('Bind latency', secs(b.latency.meanSeconds), 'mean; p99 ≤ ' + secs(b.latency.p99Seconds), undefined, 0, 'bindMean'),
      stat('Binds waiting', String(b.waiting), 'allocation ' + secs(b.allocationSeconds), undefined, 0, 'waiting')));
    root.append(h('h2', null, 'Node locks and bind queues'));
    const l = x.nodeLocks;
    root.append(h('p', { class: 'muted' }, 'hami.io/mutex.lock: ' + l.acquired + ' taken, ' + l.contended + ' contended, ' + l.broken + ' broken, ' + l.released + ' released by this replica.'));
    if (l.nodes.length) {
      root.append(table(['Node', 'Lock holder', 'Age', 'Allocated', 'Taken by this replica', 'Waiting', 'In flight'], l.nodes.map((n) => [
        link(nodeHref(n.node), n.node), n.holder || h('span', { class: 'muted' }, 'unlocked'),
        num_(n.ageSeconds, age(n.ageSeconds)), n.holder ? (n.released ? 'yes, release due' : 'not yet') : '—',
        n.takenHere || '—', num_(n.waiting, String(n.waiting)), num_(n.inFlight, String(n.inFlight))]), { 'data-table': 'locks' }));
    } else {
      root.append(h('p', { class: 'panel' }, 'No node is locked and no Bind is queued.'));
    }
    root.append(h('h2', null, 'Cards and nodes needing attention'));
    if (!x.cards.length && !x.nodes.length) root.append(h('p', { class: 'panel' }, 'Every registered card is healthy and not cordoned; every node is schedulable.'));
    if (x.cards.length) root.append(table(['Node', 'GPU', 'UUID', 'Problem'], x.cards.map((c) => [link(nodeHref(c.node), c.node), 'GPU ' + c.index, h('span', { class: 'mono' }, c.uuid), c.problem]), { 'data-table': 'cards' }));
    if (x.nodes.length) root.append(table(['Node', 'Schedulable', 'Problem'], x.nodes.map((n) => [link(nodeHref(n.node), n.node), n.schedulable ? 'yes' : 'no', n.error || '—'])));
    root.append(h('h2', null, 'Filter refusals by reason (per node)'));
    const rej = f.nodeRejections.filter((w) => w.count > 0);
    root.append(rej.length ? table(['Reason', 'Count'], rej.map((w) => [w.reason, num_(w.count, String(w.count))]), { 'data-table': 'rejections' }) : h('p', { class: 'panel' }, 'No node has refused a pod yet.'));
    root.append(h('h2', null, 'Bind timings'));
    root.append(table(['Step', 'Count', 'Mean', 'p50 ≤', 'p99 ≤'], [['Bind', b.latency], ['Wait in queue', b.queueWait], ['Lock held', b.lockHold], ['Filter', f.latency]].map(([n, t]) => [
      n, num_(t.count, String(t.count)), secs(t.meanSeconds), secs(t.p50Seconds), secs(t.p99Seconds)])));
    root.append(h('h2', null, 'Cache'));
    const s = x.store;
    root.append(h('p', { class: 'muted' }, 'Handshake: ' + x.handshakeNote + '.'));
    root.append(table(['Counter', 'Count'], [['Malformed pod annotations', s.malformedPods], ['Malformed node annotations', s.malformedNodes], ['Reservations expired', s.reservationsExpired], ['Commit conflicts', s.commitConflicts], ['Relists', s.relists], ['Requeue nudges', s.requeueNudges]].map(([k, v]) => [k, num_(v, String(v))])));
  };

  views.whatif = function (root, args) {
    root.append(h('h1', null, 'What if…'));
    root.append(h('p', { class: 'muted' }, 'Describe a pod or paste one. vgpu-sched evaluates it on a private copy of its current state with the same code as Filter: nothing is reserved and nothing is written.'));
    const kind = args.kind === 'pod' ? 'pod' : 'shape';
    const f = {};
    const field = (id, label, input) => { f[id] = input; input.id = 'wi-' + id; return h('label', { for: 'wi-' + id }, label, input); };
    const shapeBox = h('fieldset', { id: 'wi-shape-box' }, h('legend', null, 'Shape'),
      h('div', { class: 'grid form' },
        field('cards', 'Cards', h('input', { type: 'number', min: '1', max: '64', value: '1', required: true })),
        field('mem', 'Memory per card (MiB, blank = whole card)', h('input', { type: 'number', min: '1', placeholder: 'e.g. 8192' })),
        field('cores', 'Cores per card (%)', h('input', { type: 'number', min: '0', max: '100', placeholder: 'default' })),
        field('type', 'Card type contains', h('input', { type: 'text', placeholder: 'e.g. A100' })),
        field('mode', 'Mode', h('select', null, h('option', { value: '' }, 'any'), h('option', { value: 'hami-core' }, 'hami-core'), h('option', { value: 'mig' }, 'MIG'), h('option', { value: 'mps' }, 'MPS'))),
        field('ns', 'Namespace', h('input', { type: 'text', value: 'default' })),
        field('priority', 'Priority', h('input', { type: 'number', value: '0' }))));
    const podBox = h('fieldset', { id: 'wi-pod-box' }, h('legend', null, 'Pod (JSON or YAML)'),
      field('pod', 'Pod manifest', h('textarea', { spellcheck: 'false', placeholder: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: trainer\nspec:\n  containers:\n  - name: main\n    resources:\n      limits:\n        nvidia.com/gpu: 1\n        nvidia.com/gpumem: 8000' })));
    const common = h('div', { class: 'grid form' },
      field('count', 'How many', h('input', { type: 'number', min: '1', max: '100', value: '1' })),
      field('np', 'Node policy', h('select', null, h('option', { value: '' }, 'service default (' + state.snap.service.nodePolicy + ')'), ['binpack', 'spread', 'fragmentation'].map((x) => h('option', { value: x }, x)))),
      field('gp', 'GPU policy', h('select', null, h('option', { value: '' }, 'service default (' + state.snap.service.gpuPolicy + ')'), ['spread', 'binpack', 'topology-aware', 'numa', 'mutex', 'fragmentation'].map((x) => h('option', { value: x }, x)))));
    const rShape = h('input', { type: 'radio', name: 'wi-kind', id: 'wi-kind-shape', value: 'shape', checked: kind === 'shape' });
    const rPod = h('input', { type: 'radio', name: 'wi-kind', id: 'wi-kind-pod', value: 'pod', checked: kind === 'pod' });
    const sync = () => { shapeBox.hidden = !rShape.checked; podBox.hidden = !rPod.checked; };
    rShape.addEventListener('change', sync);
    rPod.addEventListener('change', sync);
    const out = h('div', { class: 'result', id: 'wi-result', 'aria-live': 'polite' });
    const submit = h('button', { class: 'btn', type: 'submit' }, 'Evaluate');
    const form = h('form', { class: 'panel', id: 'whatif-form', onsubmit: async (e) => {
      e.preventDefault();
      const body = {};
      const intOf = (el) => el.value === '' ? undefined : Number(el.value);
      if (rShape.checked) {
        body.shape = { cards: intOf(f.cards), memMiB: intOf(f.mem), coresPct: intOf(f.cores), type: f.type.value || undefined,
          mode: f.mode.value || undefined, namespace: f.ns.value || undefined, priority: intOf(f.priority) };
      } else {
        body.pod = f.pod.value;
      }
      body.count = intOf(f.count);
      if (f.np.value) body.nodePolicy = f.np.value;
      if (f.gp.value) body.gpuPolicy = f.gp.value;
      submit.disabled = true;
      clear(out);
      out.append(h('p', { class: 'muted' }, 'Evaluating…'));
      try {
        const r = await fetch('api/v1/whatif', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), credentials: 'same-origin' });
        const j = await r.json();
        clear(out);
        if (!r.ok) out.append(h('p', { class: 'error-box', role: 'alert' }, j.error || ('HTTP ' + r.status)));
        else out.append(whatifResult(j));
      } catch (err) {
        clear(out);
        out.append(h('p', { class: 'error-box', role: 'alert' }, String(err.message || err)));
      } finally {
        submit.disabled = false;
      }
    } },
      h('div', { class: 'radios', role: 'radiogroup', 'aria-label': 'What to evaluate' },
        h('label', { for: 'wi-kind-shape' }, rShape, 'A shape'), h('label', { for: 'wi-kind-pod' }, rPod, 'A pod manifest')),
      shapeBox, podBox, common, h('div', { class: 'row' }, submit));
    sync();
    root.append(form, out);
  };

  function whatifResult(j) {
    const box = h('div', { class: 'panel', 'data-whatif': 'result' });
    box.append(h('p', { class: 'muted' }, j.notes.join(' · ') + ' (state ' + j.basedOn.version + ', ' + j.basedOn.nodes + ' nodes; policies ' + j.nodePolicy + ' / ' + j.gpuPolicy + ')'));
    for (const r of j.results) {
      const item = h('div', { class: 'card' });
      if (r.node) {
        item.append(h('p', null, h('span', { class: 'placed' }, 'Fits: '), r.pod, ' → ', link(nodeHref(r.node), r.node),
          ', ' + r.cards.map((c) => 'GPU ' + (c.index === null ? c.uuid : c.index)).join(', '),
          r.score !== null ? ' (score ' + num(r.score) + ')' : ''));
        if (r.containers.length) item.append(h('ul', null, r.containers.filter((c) => c.devices.length).map((c) => h('li', null,
          'container ' + c.index + ': ' + c.devices.map((d) => mib(d.memMiB) + ', ' + pct(d.coresPct) + ' on ' + d.uuid).join('; ')))));
        if (r.preemption) item.append(h('p', null, 'by preempting ' + r.preemption.victims.join(', ')));
      } else if (r.error) {
        item.append(h('p', null, h('span', { class: 'refused' }, 'Invalid: '), r.pod + ': ' + r.error));
      } else {
        item.append(h('p', null, h('span', { class: 'refused' }, 'Does not fit: '), r.pod));
        item.append(table(r.reasonsSummary ? ['Reason', 'Nodes'] : ['Node', 'Why'], r.reasons.map((x) => r.reasonsSummary
          ? [x.reason, num_(x.nodes, String(x.nodes))] : [link(nodeHref(x.node), x.node), x.reason])));
      }
      box.append(item);
    }
    return box;
  }

  /* ------------------------------------------------------------ router */

  function parseRoute() {
    const raw = location.hash.replace(/^#\/?/, '');
    const [path, query] = raw.split('?');
    const parts = (path || 'cluster').split('/').map((x) => { try { return decodeURIComponent(x); } catch (e) { return x; } });
    const args = { parts: parts.slice(1) };
    for (const kv of (query || '').split('&')) {
      if (!kv) continue;
      const [k, v] = kv.split('=');
      try { args[k] = decodeURIComponent((v || '').replace(/\+/g, ' ')); } catch (e) { args[k] = v; }
    }
    return { view: parts[0] || 'cluster', args };
  }

  const tabOf = { cluster: 'cluster', node: 'cluster', ns: 'quota', pending: 'pending', find: 'find', pod: 'find', fragmentation: 'fragmentation', quota: 'quota', health: 'health', whatif: 'whatif' };
  const polled = { cluster: 1, node: 1, ns: 1, pending: 1, fragmentation: 1, quota: 1, health: 1 };

  async function render(fromPoll) {
    const route = parseRoute();
    const fn = views[route.view];
    for (const a of document.querySelectorAll('nav.tabs a')) {
      if (a.dataset.view === (tabOf[route.view] || '')) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    if (fromPoll && !polled[route.view]) return;
    const main = document.getElementById('view');
    const gen = ++state.gen;
    const next = h('div');
    try {
      if (!state.snap) await refreshSnapshot();
      if (route.view === 'pending' || route.view === 'ns') await loadPending().catch(() => null);
      if (!fn) next.append(h('h1', null, 'Not found'), h('p', null, 'No view “', route.view, '”. ', link('#/cluster', 'Cluster map')));
      else await fn(next, route.args);
      state.lastError = null;
    } catch (err) {
      if (fromPoll) { state.lastError = err.message || String(err); renderStatus(); return; }
      clear(next);
      next.append(h('h1', null, 'Could not load this view'), h('p', { class: 'error-box', role: 'alert' }, String(err.message || err)));
    }
    if (gen !== state.gen) return; // a newer render won
    const y = window.scrollY;
    const active = document.activeElement && document.activeElement.id;
    clear(main);
    main.append(next);
    document.title = (next.querySelector('h1') ? next.querySelector('h1').textContent + ' · ' : '') + 'vgpu-sched';
    if (fromPoll) {
      window.scrollTo(0, y);
      if (active && document.getElementById(active)) document.getElementById(active).focus();
    }
    main.dataset.ready = route.view;
  }

  async function poll() {
    if (state.paused) return;
    document.body.dataset.polling = '1'; // a poll under way (its render may still replace the view)
    try {
      const changed = await refreshSnapshot();
      state.lastError = null;
      renderStatus();
      if (changed) renderSummary();
      const v = parseRoute().view;
      if (changed || v === 'pending' || v === 'health' || v === 'fragmentation') await render(true);
    } catch (err) {
      state.lastError = err.message || String(err);
      renderStatus();
    } finally {
      delete document.body.dataset.polling;
    }
  }

  function schedule() {
    clearInterval(state.timer);
    state.timer = setInterval(poll, POLL_MS);
  }

  document.getElementById('pause').addEventListener('click', (e) => {
    state.paused = !state.paused;
    e.currentTarget.setAttribute('aria-pressed', String(state.paused));
    e.currentTarget.textContent = state.paused ? 'Resume updates' : 'Pause updates';
    renderStatus();
  });

  window.addEventListener('hashchange', () => {
    render(false).then(() => { const m = document.getElementById('view'); if (m) m.focus({ preventScroll: true }); });
  });

  (async function start() {
    try {
      await refreshSnapshot();
      renderStatus();
      renderSummary();
    } catch (err) {
      state.lastError = err.message || String(err);
    }
    if (!location.hash) history.replaceState(null, '', '#/cluster');
    await render(false);
    schedule();
  })();
})();
