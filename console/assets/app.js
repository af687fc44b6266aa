// The console's pages: a router over location.hash, the live snapshot
// stream (GET /v1/console/events, read with fetch so that it can carry the
// bearer token) and the actions, all through the control API.
'use strict';

(() => {
  const { esc, fmtRate } = window.sluiceGraph;
  const S = { snap: null, token: sessionStorage.getItem('sluice-token') || '', mounted: '', stream: null, paused: false };
  const $ = (sel, root) => (root || document).querySelector(sel);

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.error) || 'HTTP ' + status);
      this.status = status;
      this.body = body || {};
    }
  }

  function headers(json) {
    const h = {};
    if (S.token) h.Authorization = 'Bearer ' + S.token;
    if (json) h['Content-Type'] = 'application/json';
    return h;
  }

  // api calls the control API; a 401 asks for a token.
  async function api(method, path, body) {
    const resp = await fetch(path, { method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) });
    let data = null;
    try { data = await resp.json(); } catch (e) { /* no JSON body */ }
    // Without a valid token, or with one whose role does not allow the
    // action (a read token trying to scale), ask for another.
    if (resp.status === 401 || resp.status === 403) askToken(data && data.error);
    if (!resp.ok) throw new ApiError(resp.status, data);
    return data;
  }

  function askToken(reason) {
    const d = $('#token-dialog');
    $('#token-reason').textContent = reason || '';
    if (!d.open) d.showModal();
    $('#token').focus();
  }

  $('#token-form').addEventListener('submit', () => {
    S.token = $('#token').value.trim();
    sessionStorage.setItem('sluice-token', S.token);
    connect();
  });

  function setConn(text, cls) {
    const c = $('#conn');
    c.textContent = text;
    c.className = 'conn ' + (cls || '');
  }

  // connect (re)opens the snapshot stream.
  async function connect() {
    if (S.stream) S.stream.abort();
    const ctl = new AbortController();
    S.stream = ctl;
    setConn('connecting…');
    try {
      const resp = await fetch('/v1/console/events', { headers: headers(false), signal: ctl.signal });
      if (resp.status === 401 || resp.status === 403) {
        let d = null;
        try { d = await resp.json(); } catch (e) { /* no JSON body */ }
        setConn('not authorized', 'bad');
        askToken(d && d.error);
        return;
      }
      if (!resp.ok) throw new Error('HTTP ' + resp.status);
      setConn('live', 'ok');
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          onEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
    } catch (e) {
      if (ctl.signal.aborted) return;
      setConn('disconnected: ' + e.message, 'bad');
    }
    if (S.stream === ctl && !ctl.signal.aborted) {
      setConn('reconnecting…', 'bad');
      setTimeout(() => { if (S.stream === ctl) connect(); }, 2000);
    }
  }

  function onEvent(block) {
    let event = 'message', data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (event === 'snapshot') {
      S.snap = JSON.parse(exactIDs(data));
      setConn('live · ' + S.snap.node + ' · v' + S.snap.topologyVersion, 'ok');
      render();
    } else if (event === 'problem') {
      setConn('problem: ' + JSON.parse(data).error, 'bad');
    }
  }

  function route() {
    const parts = (location.hash || '#/graph').replace(/^#\/?/, '').split('/');
    return { page: parts[0] || 'graph', arg: decodeURIComponent(parts.slice(1).join('/')) };
  }

  const pages = {};

  // render mounts the page the hash names (once) and updates it with the
  // latest snapshot.
  function render() {
    const r = route();
    const page = pages[r.page] || pages.graph;
    const key = r.page + '/' + r.arg;
    const root = $('#page');
    if (S.mounted !== key) {
      S.mounted = key;
      root.innerHTML = '';
      page.mount(root, r.arg);
      document.querySelectorAll('[data-nav]').forEach((a) => a.classList.toggle('active', a.dataset.nav === r.page));
    }
    if (S.snap && page.update) page.update(root, S.snap, r.arg);
  }
  window.addEventListener('hashchange', render);

  // exactIDs quotes the checkpoint ids of a snapshot's JSON: they are
  // 64-bit, beyond what a JavaScript number holds exactly.
  const exactIDs = (json) => json.replace(/"(last|inProgress)":(\d{16,})/g, '"$1":"$2"');

  // checkpointTable shows the coordinator's account of checkpoints, with
  // times in the viewer's zone and sizes for people.
  function checkpointTable(ck) {
    if (!ck) return '';
    const when = (t, agoMs) => (t ? esc(new Date(t).toLocaleTimeString()) + (agoMs !== undefined ? ' (' + fmtMs(agoMs) + ' ago)' : '') : '—');
    const row = (field, label, value) => '<tr><th>' + esc(label) + '</th><td data-field="' + field + '">' + value + '</td></tr>';
    let rows = ck.error ? row('error', 'error', '<span class="field-error">' + esc(ck.error) + '</span>') : '';
    rows += row('coordinator', 'coordinator', esc(ck.coordinator || '—'));
    rows += row('last', 'newest complete', ck.last && ck.last !== '0' ? esc(String(ck.last)) + (ck.lastSavepoint ? ' (savepoint)' : '') + ' at ' + when(ck.lastTime, ck.lastAgeMs) : 'none yet');
    if (ck.lastSize) rows += row('size', 'its size', fmtBytes(ck.lastSize) + ', ' + fmtBytes(ck.lastUploaded) + ' uploaded, in ' + fmtMs(ck.lastDurationMs || 0));
    rows += row('counts', 'completed / failed', ck.completed + ' / ' + ck.failed + (ck.consecutiveFailures ? ' (' + ck.consecutiveFailures + ' in a row)' : ''));
    if (ck.inProgress) rows += row('progress', 'in progress', esc(String(ck.inProgress)));
    if (ck.lastError) rows += row('failure', 'last failure', when(ck.lastFailure) + ': ' + esc(ck.lastError));
    rows += row('rollbacks', 'rollbacks', ck.rollbacks + ' (generation ' + ck.generation + ')');
    return '<h3>Checkpoints</h3><table id="op-checkpoints" class="kv">' + rows + '</table>';
  }

  const badge = (s) => '<span class="badge ' + esc(s) + '">' + esc(s) + '</span>';
  const pct = (f) => Math.round((f || 0) * 100) + '%';
  function fmtBytes(n) {
    if (!n) return '0 B';
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return n.toFixed(i ? 1 : 0) + ' ' + u[i];
  }
  function fmtMs(ms) {
    if (ms >= 1000) return (ms / 1000).toFixed(1) + ' s';
    if (ms >= 1) return ms.toFixed(1) + ' ms';
    return Math.round(ms * 1000) + ' µs';
  }
  // lat shows two quantiles of an instance's latency: "—" without
  // telemetry, or for end-to-end without event times.
  const lat = (l, p50, p99) => (l && l[p99] ? fmtMs(l[p50]) + ' / ' + fmtMs(l[p99]) : '—');
  const card = (label, value, id) => '<div class="card"' + (id ? ' id="' + id + '"' : '') + '>' + esc(label) + '<b>' + esc(value) + '</b></div>';

  pages.graph = {
    mount(root) {
      root.innerHTML = '<h2>Streams and operators</h2>' +
        '<div class="legend"><span><span class="swatch idle"></span>idle</span>' +
        '<span><span class="swatch busy"></span>busy (mailbox filling)</span>' +
        '<span><span class="swatch backpressured"></span>backpressured (blocked on credits)</span>' +
        '<span><span class="swatch dangling"></span>dangling stream</span>' +
        '<span>edges: records/s · click an operator for its page</span></div>' +
        '<div class="graph-wrap"><svg id="graph" class="graph" xmlns="http://www.w3.org/2000/svg"></svg></div>' +
        '<p id="graph-empty" class="muted"></p>';
      $('#graph', root).addEventListener('click', (e) => {
        const g = e.target.closest('[data-operator]');
        if (g) location.hash = '#/operator/' + encodeURIComponent(g.dataset.operator);
      });
    },
    update(root, snap) {
      window.sluiceConsole.lastRenderMs = window.sluiceGraph.render($('#graph', root), snap);
      $('#graph-empty', root).textContent = (snap.operators || []).length ? '' : 'No operator is deployed: see Deploy.';
    },
  };

  // fmtWatermark shows an instance's event-time watermark: "—" before it
  // has one, "end of input" (and "finished") once its input ended.
  function fmtWatermark(i) {
    const fin = i.finished ? ' ' + badge('finished') : '';
    if (!i.watermark) return '—' + fin;
    if (new Date(i.watermark).getUTCFullYear() >= 2262) return 'end of input' + fin;
    return esc(i.watermark.replace('T', ' ').replace(/Z$/, ' UTC')) + fin;
  }

  // deadLetters lists an operator's latest dead letters with their
  // headers (sluice-error says why).
  function deadLetters(dls) {
    if (!dls || !dls.length) return '';
    const rows = dls.map((d) => '<tr data-dead-letter><td>' + esc(new Date(d.time).toLocaleTimeString()) + '</td><td>' + esc(d.node) + ' #' + d.index + '</td><td><code>' + esc(d.key) + '</code>' + (d.keyBytes > 256 ? ' <span class="muted">… (' + d.keyBytes + ' bytes, first 256 shown)</span>' : '') + '</td>' +
      '<td><code>' + esc(d.value) + '</code>' + (d.valueBytes > 256 ? ' <span class="muted">… (' + d.valueBytes + ' bytes, first 256 shown)</span>' : '') + '</td>' +
      '<td><dl class="headers">' + (d.headers || []).map((h) => '<dt>' + esc(h.key) + '</dt><dd>' + esc(h.value) + '</dd>').join('') + '</dl></td></tr>').join('');
    return '<h3>Recent dead letters</h3><table id="op-dead-letters"><tr><th>time</th><th>instance</th><th>key</th><th>value</th><th>headers</th></tr>' + rows + '</table>';
  }

  pages.operator = {
    mount(root, name) {
      root.innerHTML = '<h2><span id="op-name"></span> <span id="op-state"></span></h2>' +
        '<p id="op-missing" class="message bad" hidden></p>' +
        '<div id="op-cards" class="cards"></div>' +
        '<div class="actions">' +
        '<form id="scale-form" class="inline"><label>Instances <input id="scale-instances" type="number" min="1" step="1"></label>' +
        '<button id="scale-apply" type="submit">Scale</button><span class="field-error" data-field-error="instances"></span></form>' +
        '<button id="kill-open" class="danger" type="button">Kill…</button></div>' +
        '<p id="op-message" class="message"></p>' +
        '<div id="op-detail"></div>' +
        '<dialog id="kill-dialog"><form method="dialog"><h3>Kill <span class="kill-name"></span>?</h3>' +
        '<p>Its instances stop on every node and it leaves the topology. Its state is kept (a redeploy under the same name resumes from it) unless you purge it.</p>' +
        '<label><input id="kill-purge" type="checkbox"> Purge its state too (--purge): its key groups are deleted for good</label>' +
        '<button id="kill-confirm" class="danger" value="kill">Kill</button> <button id="kill-cancel" value="cancel">Cancel</button></form></dialog>';
      $('#op-name', root).textContent = name;
      $('.kill-name', root).textContent = name;
      const input = $('#scale-instances', root);
      input.addEventListener('input', () => { input.dataset.dirty = '1'; });
      const msg = $('#op-message', root);
      const say = (text, ok) => { msg.textContent = text; msg.className = 'message ' + (ok ? 'ok' : 'bad'); };
      $('#scale-form', root).addEventListener('submit', async (e) => {
        e.preventDefault();
        const fieldErr = $('[data-field-error=instances]', root);
        fieldErr.textContent = '';
        try {
          const resp = await api('PUT', '/v1/operators/' + encodeURIComponent(name) + '/instances', { instances: Number(input.value) });
          delete input.dataset.dirty;
          say('Scaled to ' + resp.operator.instances + ' instances (topology version ' + resp.version + ').', true);
        } catch (err) {
          const f = (err.body.fields || []).find((l) => l.startsWith('instances'));
          if (f) fieldErr.textContent = f; else say(err.message, false);
        }
      });
      const dialog = $('#kill-dialog', root);
      $('#kill-open', root).addEventListener('click', () => { $('#kill-purge', root).checked = false; dialog.showModal(); });
      dialog.addEventListener('close', async () => {
        if (dialog.returnValue !== 'kill') return;
        const purge = $('#kill-purge', root).checked;
        try {
          const resp = await api('DELETE', '/v1/operators/' + encodeURIComponent(name) + (purge ? '?purge=1' : ''));
          say('Killed ' + name + (purge ? ' and purged its state' : '') + ' (topology version ' + resp.version + ').', true);
        } catch (err) {
          say(err.message, false);
        }
      });
    },
    update(root, snap, name) {
      const op = (snap.operators || []).find((o) => o.name === name);
      const missing = $('#op-missing', root);
      missing.hidden = !!op;
      missing.textContent = op ? '' : 'No operator "' + name + '" is deployed.';
      if (!op) {
        $('#op-state', root).innerHTML = '';
        $('#op-cards', root).innerHTML = '';
        $('#op-detail', root).innerHTML = '';
        return;
      }
      $('#op-state', root).innerHTML = badge(op.state);
      const input = $('#scale-instances', root);
      if (!input.dataset.dirty && document.activeElement !== input) input.value = op.instances;
      $('#op-cards', root).innerHTML = card('kind', op.kind) + card('instances', op.instances, 'op-instances-count') +
        card('key groups', op.keyGroups) + card('epoch', op.epoch) + card('in', fmtRate(op.inRate), 'op-in-rate') +
        card('out', fmtRate(op.outRate)) + card('mailbox', op.queued) + card('backpressure', pct(op.blocked)) +
        card('restarts', op.restarts) + card('dead letters', op.deadLetters);
      const total = op.detail.reduce((a, i) => a + (i.processed || 0), 0) || 1;
      const rows = op.detail.map((i) => '<tr data-instance="' + i.index + '"><td class="num">' + i.index + '</td><td>' + esc(i.node || '—') + '</td><td>' + badge(i.state) +
        (i.failedReason ? '<br><span class="field-error">' + esc(i.failedReason) + '</span>' : '') + '</td>' +
        '<td>[' + i.firstGroup + ', ' + i.endGroup + ')</td><td class="num">' + fmtRate(i.inRate) + '</td><td class="num">' + fmtRate(i.outRate) + '</td>' +
        '<td class="num">' + lat(i.latency, 'processP50Ms', 'processP99Ms') + '</td><td class="num">' + lat(i.latency, 'endToEndP50Ms', 'endToEndP99Ms') + '</td>' +
        '<td class="num">' + i.processed + '</td><td><meter min="0" max="1" value="' + ((i.processed || 0) / total).toFixed(3) + '"></meter> ' + pct((i.processed || 0) / total) + '</td>' +
        '<td class="num">' + (i.queued || 0) + '</td><td class="num">' + pct(i.blocked) + '</td><td class="num">' + i.restarts + '</td>' +
        '<td class="num">' + i.deadLetters + '</td><td class="num">' + (i.transientErrors || 0) + '</td><td class="num">' + fmtBytes(i.stateBytes) + '</td>' +
        '<td class="wm">' + fmtWatermark(i) + '</td><td>' + esc(i.lastError || '') + '</td></tr>').join('');
      const io = '<p>Inputs: ' + ((op.inputs || []).map((i) => esc(i.stream) + ' (' + esc(i.routing) + ')').join(', ') || 'none (a source)') +
        ' · Outputs: ' + (esc((op.outputs || []).join(', ')) || 'none (a sink)') + '</p>';
      const ck = checkpointTable(snap.checkpoints);
      $('#op-detail', root).innerHTML = (op.pending ? '<p class="message bad">' + esc(op.pending) + '</p>' : '') + io +
        '<h3>Instances</h3><table id="op-table"><tr><th>#</th><th>node</th><th>state</th><th>key groups</th><th>in</th><th>out</th><th>processing p50 / p99</th><th>end-to-end p50 / p99</th><th>processed</th>' +
        '<th>skew (share of records)</th><th>mailbox</th><th>backpressure</th><th>restarts</th><th>dead letters</th><th>transient errors</th><th>state size</th><th>watermark</th><th>last error</th></tr>' +
        rows + '</table>' + deadLetters(op.recentDeadLetters) + ck;
    },
  };

  pages.nodes = {
    mount(root) {
      root.innerHTML = '<h2>Nodes</h2><div id="nodes-body"></div>';
    },
    update(root, snap) {
      const rows = (snap.nodes || []).map((n) => {
        const p = n.process;
        return '<tr data-node="' + esc(n.id) + '"><td>' + esc(n.id) + (n.id === snap.node ? ' (this node)' : '') + '</td><td>' + esc(n.address) + '</td>' +
          '<td>' + (n.httpAddr ? '<a href="' + esc(location.protocol + '//' + n.httpAddr + '/ui/') + '">' + esc(n.httpAddr) + '</a>' : '—') + '</td>' +
          '<td>' + (n.healthy ? badge('healthy') : badge('down') + ' ' + esc(n.error || '')) + '</td>' +
          '<td class="num">' + (p ? n.cpu.toFixed(2) + ' of ' + p.cpus : '—') + '</td><td class="num">' + (p ? fmtBytes(p.heapBytes) + ' / ' + fmtBytes(p.sysBytes) : '—') + '</td>' +
          '<td class="num">' + (p ? p.goroutines : '—') + '</td><td class="num">' + n.instances + '</td><td class="num">' + n.queued + '</td><td class="num">' + n.buffered + '</td>' +
          '<td>' + (n.pending || []).map(esc).join('<br>') + '</td></tr>';
      }).join('');
      const launched = (snap.launcher || []).map((l) => '<tr><td>' + esc(l.operator) + '</td><td>' + esc(l.id) + '</td><td>' + esc(l.where) + '</td><td>' + esc(l.state) +
        '</td><td class="num">' + l.restarts + '</td><td>' + esc(l.message || '') + '</td></tr>').join('');
      $('#nodes-body', root).innerHTML = '<table id="nodes-table"><tr><th>node</th><th>address</th><th>console</th><th>health</th><th>CPU (cores)</th>' +
        '<th>memory (heap / runtime)</th><th>goroutines</th><th>instances</th><th>mailboxes</th><th>output buffers</th><th>pending handoffs</th></tr>' + rows + '</table>' +
        (launched ? '<h3>Launched processes (local launcher, Mesos tasks)</h3><table><tr><th>operator</th><th>id</th><th>where</th><th>state</th><th>restarts</th><th>message</th></tr>' + launched + '</table>' : '') +
        '<h3>Pending</h3>' + ((snap.pending || []).length ? '<ul>' + snap.pending.map((p) => '<li>' + esc(p) + '</li>').join('') + '</ul>' : '<p class="muted">Nothing is waiting.</p>') +
        '<h3>Recent events <a href="#/events" class="muted">(all)</a></h3>' + ((snap.events || []).length ? eventTable('nodes-events', snap.events.slice(0, 8)) : '<p class="muted">None yet.</p>');
    },
  };

  // The timeline's words for each kind of event, and its badge class.
  const eventWords = {
    'member-joined': ['joined', 'healthy'], 'member-left': ['left', 'pending'], 'node-lost': ['node lost', 'down'],
    rollback: ['rollback', 'down'], restored: ['restored', 'pending'], deployed: ['deployed', 'running'],
    scaled: ['scaled', 'running'], killed: ['killed', 'pending'],
  };

  // eventRows renders timeline entries as table rows, newest first.
  function eventRows(evs) {
    return evs.map((e) => {
      const [word, cls] = eventWords[e.what] || [e.what, ''];
      const subject = e.peer ? 'node ' + esc(e.peer) : e.operator ? '<a href="#/operator/' + encodeURIComponent(e.operator) + '">' + esc(e.operator) + '</a>' : '';
      const detail = (e.checkpoint ? 'checkpoint ' + esc(e.checkpoint) + ': ' : '') + esc(e.detail || '');
      return '<tr data-event="' + esc(e.what) + '"><td>' + esc(new Date(e.time).toLocaleTimeString()) + '</td><td><span class="badge ' + cls + '">' + esc(word) + '</span></td>' +
        '<td>' + subject + '</td><td>' + detail + '</td><td>' + esc((e.nodes || []).join(', ')) + '</td></tr>';
    }).join('');
  }
  const eventTable = (id, evs) => '<table id="' + id + '"><tr><th>time</th><th>event</th><th>of</th><th>detail</th><th>seen by</th></tr>' + eventRows(evs) + '</table>';

  pages.events = {
    mount(root) {
      root.innerHTML = '<h2>Events</h2><p class="muted">What happened to the cluster, newest first, as the nodes that answered saw it: members joined, left and lost, rollbacks, restores from checkpoints, deploys, scales and kills. A node that was killed shows here as lost, in its peers\' accounts.</p><div id="events-body"></div>';
    },
    update(root, snap) {
      const evs = snap.events || [];
      $('#events-body', root).innerHTML = evs.length ? eventTable('events-table', evs) : '<p class="muted">Nothing has happened since these nodes started.</p>';
    },
  };

  // errorWhere splits an API field error ("manifests[0] (\"x\"): line 3:
  // instances: must be ≥ 1") into its document, line, field and problem.
  function errorWhere(text, line) {
    let m, doc = 0, ln = 0, field = '';
    if ((m = /^manifests\[(\d+)\] \("[^"]*"\): /.exec(line))) { doc = Number(m[1]); line = line.slice(m[0].length); }
    if ((m = /^line (\d+): /.exec(line))) { ln = Number(m[1]); line = line.slice(m[0].length); }
    if ((m = /^([A-Za-z][\w.[\]-]*): /.exec(line))) field = m[1];
    if (!ln && field) {
      // Validation errors name the field, not the line: find it in the
      // document they are about.
      const leaf = field.replace(/\[\d+\]/g, '').split('.').pop();
      const lines = text.split('\n');
      let d = 0;
      for (let i = 0; i < lines.length; i++) {
        if (/^---/.test(lines[i])) { d++; continue; }
        if (d === doc && new RegExp('^\\s*(-\\s*)?"?' + leaf + '"?\\s*:').test(lines[i])) { ln = i + 1; break; }
      }
    }
    return { line: ln, field, problem: line };
  }

  pages.deploy = {
    mount(root) {
      root.innerHTML = '<h2>Deploy</h2><form id="deploy-form"><div class="deploy-grid"><div>' +
        '<label for="manifest">Manifest: YAML or JSON, several separated by --- (as for <code>sluice deploy -f</code>)</label>' +
        '<textarea id="manifest" rows="20" spellcheck="false" placeholder="name: count&#10;kind: count&#10;instances: 3"></textarea>' +
        '<p><label>…or upload a file <input id="manifest-file" type="file" accept=".yaml,.yml,.json,text/yaml,application/json"></label></p>' +
        '<button id="deploy-submit" type="submit">Deploy</button></div>' +
        '<div><ul id="manifest-errors" class="field-errors"></ul></div></div></form><p id="deploy-result" class="message"></p>';
      const ta = $('#manifest', root);
      $('#manifest-file', root).addEventListener('change', async (e) => {
        const f = e.target.files[0];
        if (f) ta.value = await f.text();
      });
      $('#deploy-form', root).addEventListener('submit', async (e) => {
        e.preventDefault();
        const errs = $('#manifest-errors', root), result = $('#deploy-result', root);
        errs.innerHTML = '';
        result.textContent = '';
        ta.removeAttribute('aria-invalid');
        try {
          const resp = await api('POST', '/v1/console/deploy', { text: ta.value });
          result.className = 'message ok';
          result.innerHTML = 'Deployed (topology version ' + resp.version + '): ' +
            resp.operators.map((o, i) => '<a href="#/operator/' + encodeURIComponent(o.name) + '">' + esc(o.name) + '</a>' + (resp.created[i] ? ' (new)' : ' (updated)')).join(', ');
        } catch (err) {
          const fields = err.body.fields || [];
          result.className = 'message bad';
          result.textContent = err.message;
          if (fields.length) ta.setAttribute('aria-invalid', 'true');
          errs.innerHTML = fields.map((f) => {
            const w = errorWhere(ta.value, f);
            return '<li class="field-error" data-field="' + esc(w.field) + '" data-line="' + w.line + '"><span class="where">' +
              esc((w.line ? 'line ' + w.line : '') + (w.line && w.field ? ' · ' : '') + w.field) + '</span><br>' + esc(w.problem) + '</li>';
          }).join('');
        }
      });
    },
  };

  // Pause stops the live updates; the page keeps the last snapshot.
  $('#live-toggle').addEventListener('click', (e) => {
    if (S.stream && !S.paused) {
      S.paused = true;
      const ctl = S.stream;
      S.stream = null;
      ctl.abort();
      setConn('paused', 'bad');
      e.target.textContent = 'Resume';
    } else {
      S.paused = false;
      e.target.textContent = 'Pause';
      connect();
    }
  });

  window.sluiceConsole = { lastRenderMs: 0, api, renderGraph: (snap) => window.sluiceGraph.render($('#graph'), snap) };
  render();
  connect();
})();
