// The graph page's layered layout and SVG rendering. Streams and operators
// alternate in columns (producers left of their streams, streams left of
// their consumers), ordered within a column by the mean position of what
// feeds them; edges carry records/s.
'use strict';

window.sluiceGraph = (() => {
  const W = 170, H = 44, COL = 240, ROW = 64, PAD = 20;
  // The graph is scaled down to fit the page, to this much at most.
  const MIN_SCALE = 0.6;
  // An operator's mailbox holding this many records colours it fully busy.
  const BUSY_QUEUED = 2048;

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

  function fmtRate(n) {
    if (!n) return '0/s';
    if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M/s';
    if (n >= 1e3) return (n / 1e3).toFixed(1) + 'k/s';
    return (n < 10 ? n.toFixed(1) : n.toFixed(0)) + '/s';
  }

  // colour returns an operator's fill: green when idle, towards red as its
  // mailbox fills (busy: it cannot keep up), towards purple as it is
  // blocked by backpressure (its consumers cannot keep up); grey when not
  // running.
  function colour(op) {
    if (op.state !== 'running') return op.state === 'degraded' ? '#f3b3aa' : '#e3e7ee';
    const busy = Math.min(1, (op.queued || 0) / BUSY_QUEUED);
    const bp = Math.min(1, op.blocked || 0);
    const mix = (a, b, t) => a.map((x, i) => Math.round(x + (b[i] - x) * t));
    let c = [205, 240, 215];
    c = bp > busy ? mix(c, [150, 110, 200], bp) : mix(c, [230, 90, 70], busy);
    return 'rgb(' + c.join(',') + ')';
  }

  // layout places every node: {id: {x, y, layer}}.
  function layout(nodes, edges) {
    const layer = new Map(nodes.map((n) => [n, 0]));
    // Longest path from the sources; a cycle stops growing after as many
    // rounds as there are nodes.
    for (let round = 0; round < nodes.length; round++) {
      let moved = false;
      for (const [u, v] of edges) {
        if (layer.get(v) < layer.get(u) + 1) { layer.set(v, layer.get(u) + 1); moved = true; }
      }
      if (!moved) break;
    }
    const cols = [];
    for (const n of nodes) {
      const l = layer.get(n);
      (cols[l] = cols[l] || []).push(n);
    }
    const preds = new Map(nodes.map((n) => [n, []]));
    for (const [u, v] of edges) preds.get(v).push(u);
    const pos = new Map();
    cols.forEach((col) => { if (col) col.sort(); });
    for (let sweep = 0; sweep < 2; sweep++) {
      cols.forEach((col) => {
        if (!col) return;
        col.forEach((n, i) => pos.set(n, i));
        const bary = (n) => {
          const ps = preds.get(n).filter((p) => pos.has(p) && layer.get(p) < layer.get(n));
          return ps.length ? ps.reduce((a, p) => a + pos.get(p), 0) / ps.length : pos.get(n);
        };
        const keys = new Map(col.map((n) => [n, bary(n)]));
        col.sort((a, b) => keys.get(a) - keys.get(b) || (a < b ? -1 : 1));
        col.forEach((n, i) => pos.set(n, i));
      });
    }
    const out = {};
    cols.forEach((col, l) => {
      if (!col) return;
      col.forEach((n, i) => { out[n] = { x: PAD + l * COL, y: PAD + i * ROW, layer: l }; });
    });
    return out;
  }

  // render draws snap's operators and streams into svg and returns the
  // milliseconds it took (building the SVG and laying it out).
  function render(svg, snap) {
    const t0 = performance.now();
    const ops = snap.operators || [], streams = snap.streams || [];
    const byName = new Map(ops.map((o) => [o.name, o]));
    const nodes = [], edges = [];
    for (const o of ops) nodes.push('o:' + o.name);
    for (const s of streams) {
      nodes.push('s:' + s.name);
      for (const p of s.producers || []) if (byName.has(p)) edges.push(['o:' + p, 's:' + s.name]);
      for (const c of s.consumers || []) if (byName.has(c.operator)) edges.push(['s:' + s.name, 'o:' + c.operator]);
    }
    const at = layout(nodes, edges);
    let maxX = 0, maxY = 0;
    for (const n of nodes) { maxX = Math.max(maxX, at[n].x + W); maxY = Math.max(maxY, at[n].y + H); }
    const parts = [];
    // An edge between neighbouring columns is a curve in the gap between
    // them; a longer one (a consumer that also reads something deeper)
    // would cross the columns between, through their nodes, so it runs in
    // a lane of its own below every node.
    let lanes = 0;
    for (const [u, v] of edges) {
      const a = at[u], b = at[v];
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
      // The producer's output rate on its edge into the stream, the
      // consumer's input rate on the edge out of it.
      const rate = u.startsWith('o:') ? byName.get(u.slice(2)).outRate : byName.get(v.slice(2)).inRate;
      let d, lx, ly;
      if (b.layer - a.layer === 1) {
        const mx = (x1 + x2) / 2;
        d = 'M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2;
        lx = mx; ly = (y1 + y2) / 2 - 4;
      } else {
        const lane = maxY + 16 + 14 * lanes++, g = (COL - W) / 2;
        d = 'M' + x1 + ',' + y1 + ' C' + (x1 + g) + ',' + y1 + ' ' + x1 + ',' + lane + ' ' + (x1 + g) + ',' + lane +
          ' L' + (x2 - g) + ',' + lane + ' C' + x2 + ',' + lane + ' ' + (x2 - g) + ',' + y2 + ' ' + x2 + ',' + y2;
        lx = (x1 + x2) / 2; ly = lane - 3;
      }
      parts.push('<path class="edge" marker-end="url(#arrow)" data-from="' + esc(u) + '" data-to="' + esc(v) + '" d="' + d + '"/>');
      parts.push('<text class="rate" text-anchor="middle" x="' + lx + '" y="' + ly + '" data-edge="' + esc(u + '->' + v) + '" data-rate="' + (rate || 0) + '">' + fmtRate(rate) + '</text>');
    }
    maxY += lanes ? 16 + 14 * lanes : 0;
    for (const o of ops) {
      const p = at['o:' + o.name];
      // A source shows what it produces, the others what they take in.
      const flow = (o.inputs || []).length ? fmtRate(o.inRate) + ' in' : fmtRate(o.outRate) + ' out';
      const sub = '×' + o.instances + ' · ' + flow + ' · q ' + (o.queued || 0) + ' · bp ' + Math.round((o.blocked || 0) * 100) + '%';
      parts.push('<g class="op" data-operator="' + esc(o.name) + '" data-state="' + esc(o.state) + '" transform="translate(' + p.x + ',' + p.y + ')">' +
        '<title>' + esc(o.name + ' (' + o.kind + '): ' + o.state + (o.pending ? ' — ' + o.pending : '')) + '</title>' +
        '<rect width="' + W + '" height="' + H + '" rx="4" fill="' + colour(o) + '"/>' +
        '<text x="8" y="17">' + esc(o.name) + '</text><text class="sub" x="8" y="34">' + esc(sub) + '</text></g>');
    }
    for (const s of streams) {
      const p = at['s:' + s.name];
      const warn = s.noProducer && s.noConsumer ? 'no producer, no consumer' : s.noProducer ? 'no producer' : s.noConsumer ? 'no consumer' : '';
      parts.push('<g class="stream' + (warn ? ' dangling' : '') + '" data-stream="' + esc(s.name) + '"' + (warn ? ' data-dangling="' + warn + '"' : '') +
        ' transform="translate(' + p.x + ',' + p.y + ')"><rect width="' + W + '" height="' + H + '" rx="20"/>' +
        '<text x="14" y="' + (warn ? 17 : 26) + '">' + esc(s.name) + '</text>' +
        (warn ? '<text class="warn" x="14" y="34">⚠ ' + warn + (s.dropped ? ' · ' + s.dropped + ' dropped' : '') + (s.held ? ' · ' + s.held + ' held' : '') + '</text>' : '') + '</g>');
    }
    // Scaled down to the page's width (to MIN_SCALE) rather than clipped
    // behind a scroll bar; never scaled up.
    svg.setAttribute('viewBox', '0 0 ' + (maxX + PAD) + ' ' + (maxY + PAD));
    svg.setAttribute('width', '100%');
    svg.removeAttribute('height');
    svg.style.maxWidth = (maxX + PAD) + 'px';
    svg.style.minWidth = Math.round((maxX + PAD) * MIN_SCALE) + 'px'; // smaller would be unreadable: then it scrolls
    svg.innerHTML = '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">' +
      '<path d="M 0 0 L 10 5 L 0 10 z" fill="#8a93a6"/></marker></defs>' + parts.join('');
    svg.getBoundingClientRect(); // lay it out now, inside the measurement
    const ms = performance.now() - t0;
    svg.dataset.renderMs = ms.toFixed(1);
    return ms;
  }

  return { render, fmtRate, esc };
})();
