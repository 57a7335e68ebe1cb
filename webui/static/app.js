// Nimbus-HA web UI: one page, hash-routed, reading the REST API under
// api/v1 of the same origin. Plain ES2020, no framework, no build step.
//
// Routes: #/ (cluster), #/topology/<id>, #/supervisor/<id>.
//
// Every value from the API reaches the DOM through textContent (el, text):
// never parsed as HTML. The page's CSP forbids inline scripts and styles.
//
// Element ids and classes the browser test (integration/webui_browser_test.go)
// relies on: #nimbuses (rows' status cell: td.status), a.topology-link,
// #topology-status, #action-activate, #action-deactivate, #action-rebalance,
// #action-kill, #confirm, #confirm-ok, #confirm-cancel, #action-result,
// #freshness, #no-leader, button.handover (data-to: the nimbus's host:port),
// #topology-workers, button.restart-worker (data-worker: host:port),
// #loglevels-table (rows' cells: logger, level, ...), #loglevel-logger,
// #loglevel-level, #loglevel-timeout, #loglevel-set, #loglevel-result,
// button.loglevel-remove (data-logger: the logger's name), #blobs (rows'
// cells: key, version, size, replication, state, owner, used by, updated;
// a cell that is not OK has class not-ok).
'use strict';

(() => {
  const API = 'api/v1/';
  const REFRESH_MS = 5000;
  const DASH = '—';

  // state is the page's only mutable state.
  const state = {
    route: null, // {page, id}
    generation: 0, // bumped on every route change; late answers are dropped
    seq: 0, // bumped on every refresh; only the latest is rendered
    timer: 0,
    lastOk: 0, // Date.now() of the last successful refresh
    cacheAgeMs: null,
    lastError: '',
    pending: null, // the action the confirmation dialog is about: {label, danger, send, describe, generation}
    result: null, // the last action's outcome on this route: {ok, msg}
    logRelay: null, // stormctl ui's log relay, relative to the page ('logviewer/'), when it serves the page
  };

  // ---- DOM helpers ----------------------------------------------------

  const $ = (sel) => document.querySelector(sel);

  // el builds an element. attrs: id, class, href, title, type, ...;
  // children: nodes or values (made text; null/undefined/'' become a dash).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') e.className = v;
      else if (k === 'hidden') e.hidden = true;
      else e.setAttribute(k, String(v));
    }
    for (const c of children) e.append(c instanceof Node ? c : text(c));
    return e;
  }

  // text is the display string of a value from the API.
  function text(v) {
    if (v === undefined || v === null || v === '') return DASH;
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (Array.isArray(v)) return v.length ? v.map(text).join(', ') : DASH;
    if (typeof v === 'object') return JSON.stringify(v);
    return String(v);
  }

  // slug makes a value safe to use in a class name.
  const slug = (v) => String(v ?? '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '');

  const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

  function uptime(str, secs) {
    if (typeof str === 'string' && str !== '') return str;
    let s = num(secs);
    if (s === null) return DASH;
    const parts = [];
    for (const [unit, n] of [['d', 86400], ['h', 3600], ['m', 60]]) {
      if (s >= n || parts.length) {
        parts.push(Math.floor(s / n) + unit);
        s %= n;
      }
    }
    parts.push(s + 's');
    return parts.join(' ');
  }

  // bytes is a size in the largest binary unit that keeps it at least 1.
  function bytes(n) {
    let v = num(n);
    if (v === null) return DASH;
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    for (; v >= 1024 && i < units.length - 1; i++) v /= 1024;
    return (i === 0 ? String(v) : v.toFixed(1)) + ' ' + units[i];
  }

  function unixTime(secs) {
    const s = num(secs);
    if (!s) return DASH;
    return new Date(s * 1000).toISOString().replace('T', ' ').slice(0, 19) + ' UTC';
  }

  // exitOf is a worker's last exit: its code, or the signal that ended it.
  function exitOf(w) {
    if (w.lastExitSignal) return 'signal ' + w.lastExitSignal;
    return num(w.lastExitCode) !== null ? 'code ' + w.lastExitCode : DASH;
  }

  const hostPort = (host, port) => (host ? host + (port !== undefined && port !== null && port !== '' ? ':' + port : '') : DASH);

  function topologyHref(encodedId, id) {
    return '#/topology/' + (encodedId || encodeURIComponent(id ?? ''));
  }
  const supervisorHref = (id) => '#/supervisor/' + encodeURIComponent(id ?? '');

  // table builds a table. columns: [{title, cell(row) → node or value, num?, cls?}].
  function table(id, columns, rows, emptyText) {
    const head = el('tr', null, ...columns.map((c) => el('th', { class: c.num ? 'num' : null, scope: 'col' }, c.title)));
    const body = el('tbody');
    const list = Array.isArray(rows) ? rows : [];
    for (const row of list) {
      body.append(el('tr', null, ...columns.map((c) => {
        const v = c.cell(row);
        const cls = [c.num ? 'num' : '', typeof c.cls === 'function' ? c.cls(row) : (c.cls || '')].join(' ').trim();
        return el('td', { class: cls || null }, v);
      })));
    }
    if (!list.length) {
      body.append(el('tr', null, el('td', { class: 'empty', colspan: columns.length }, emptyText || 'none')));
    }
    return el('table', { id }, el('thead', null, head), body);
  }

  // kv builds a two-column table of label → value.
  function kv(id, pairs) {
    return el('table', { id, class: 'kv' }, el('tbody', null,
      ...pairs.map(([k, v, attrs]) => el('tr', null, el('th', { scope: 'row' }, k), el('td', attrs || null, v)))));
  }

  const stat = (label, value) => el('div', { class: 'stat' }, el('span', { class: 'label' }, label), el('span', { class: 'value' }, value));

  function link(href, label, cls) {
    return el('a', { href, class: cls || null }, label);
  }

  // ---- the API --------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body, fallback) {
      const msg = (body && (body.errorMessage || body.error)) || fallback || 'HTTP ' + status;
      super(msg);
      this.status = status;
    }
  }

  async function call(path, init) {
    let resp;
    try {
      resp = await fetch(API + path, { credentials: 'same-origin', headers: { Accept: 'application/json' }, ...init });
    } catch (err) {
      throw new ApiError(0, null, 'cannot reach the nimbus: ' + err.message);
    }
    state.logRelay = logRelayOf(resp.headers.get(LOG_RELAY_HEADER));
    let body = null;
    try {
      body = await resp.json();
    } catch (_) {
      body = null;
    }
    if (!resp.ok) throw new ApiError(resp.status, body);
    if (body === null || typeof body !== 'object') throw new ApiError(resp.status, null, 'not a JSON object');
    return body;
  }

  const get = (path) => call(path);

  // stormctl ui (cmd/stormctl/uilogviewer.go) adds this header to every
  // answer it relays: the path, relative to the page, where it relays
  // each supervisor's logviewer with the user's certificate. The nimbus
  // never sets it. Only a plain relative path is taken.
  const LOG_RELAY_HEADER = 'X-Stormctl-Ui-Logviewer';
  const logRelayOf = (v) => (v && /^[A-Za-z0-9_-]+\/$/.test(v) ? v : null);

  // post sends body (an object; none: {}) as JSON.
  function post(path, body) {
    return call(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify(body ?? {}),
    });
  }

  // ---- routing --------------------------------------------------------

  function parseRoute() {
    const h = location.hash.replace(/^#\/?/, '');
    const [page, ...rest] = h.split('/');
    let id = rest.join('/');
    try {
      id = decodeURIComponent(id);
    } catch (_) {
      // keep it as written
    }
    if ((page === 'topology' || page === 'supervisor') && id) return { page, id };
    return { page: 'cluster', id: '' };
  }

  function onRoute() {
    state.route = parseRoute();
    state.generation++;
    state.pending = null;
    state.result = null;
    const dialog = $('#confirm');
    if (dialog.open) dialog.close();
    renderCrumbs();
    const app = $('#app');
    app.replaceChildren(el('p', { class: 'empty' }, 'loading…'));
    refresh();
  }

  function renderCrumbs() {
    const r = state.route;
    const crumbs = [link('#/', 'Cluster')];
    if (r.page !== 'cluster') {
      crumbs.push(el('span', { class: 'sep' }, '›'), el('span', null, (r.page === 'topology' ? 'Topology ' : 'Supervisor ') + r.id));
    }
    $('#crumbs').replaceChildren(...crumbs);
    document.title = r.page === 'cluster' ? 'Nimbus-HA' : r.id + ' · Nimbus-HA';
  }

  // ---- refreshing -----------------------------------------------------

  async function refresh() {
    clearTimeout(state.timer);
    const gen = state.generation;
    const seq = ++state.seq;
    const route = state.route;
    try {
      const data = await load(route);
      if (gen !== state.generation || seq !== state.seq) return;
      state.lastOk = Date.now();
      state.lastError = '';
      // The oldest cache any of the answers was read from.
      const ages = Object.values(data).map((d) => num(d && d.cacheAgeMs)).filter((a) => a !== null);
      state.cacheAgeMs = ages.length ? Math.max(...ages) : null;
      renderBanner(data.cluster);
      render(route, data);
    } catch (err) {
      if (gen !== state.generation || seq !== state.seq) return;
      state.lastError = err.message;
      if (err.status === 404 && route.page !== 'cluster') {
        // An answer, not a failure: the topology or supervisor is gone.
        state.lastError = '';
        state.lastOk = Date.now();
        $('#app').replaceChildren(el('h1', null, (route.page === 'topology' ? 'Topology ' : 'Supervisor ') + route.id),
          el('p', { class: 'empty' }, 'Not found: ' + err.message), el('p', null, link('#/', 'Back to the cluster')));
      }
    } finally {
      if (gen === state.generation && seq === state.seq) {
        renderFreshness();
        state.timer = setTimeout(refresh, REFRESH_MS);
      }
    }
  }

  async function load(route) {
    switch (route.page) {
      case 'topology': {
        const path = 'topology/' + encodeURIComponent(route.id);
        // The log levels are a panel of the page: when they cannot be
        // read, the panel says why and the rest of the page still shows.
        const [cluster, topology, logconfig] = await Promise.all([get('cluster/summary'), get(path),
          get(path + '/logconfig').catch((err) => ({ error: err.message }))]);
        return { cluster, topology, logconfig };
      }
      case 'supervisor': {
        const [cluster, supervisor] = await Promise.all([get('cluster/summary'), get('supervisor?id=' + encodeURIComponent(route.id))]);
        const sups = Array.isArray(supervisor.supervisors) ? supervisor.supervisors : [];
        if (!sups.length) throw new ApiError(404, null, 'no supervisor has the id ' + route.id);
        return { cluster, supervisor };
      }
      default: {
        // The blobs are a panel of the page, as the log levels are of a
        // topology's: when they cannot be read, the panel says why.
        const [cluster, nimbuses, supervisors, topologies, blobs] = await Promise.all([
          get('cluster/summary'), get('nimbus/summary'), get('supervisor/summary'), get('topology/summary'),
          get('blobstore').catch((err) => ({ error: err.message }))]);
        return { cluster, nimbuses, supervisors, topologies, blobs };
      }
    }
  }

  function renderFreshness() {
    const f = $('#freshness');
    const parts = [];
    if (state.lastOk) {
      parts.push('updated ' + Math.max(0, Math.round((Date.now() - state.lastOk) / 1000)) + ' s ago');
      if (state.cacheAgeMs !== null) parts.push('server cache ' + state.cacheAgeMs + ' ms old');
    } else {
      parts.push('loading…');
    }
    f.textContent = parts.join(' · ');
    f.classList.toggle('stale', !!state.lastError);
    const banner = $('#load-error');
    banner.hidden = !state.lastError;
    banner.textContent = state.lastError ? 'Refresh failed: ' + state.lastError + (state.lastOk ? ' (showing older data)' : '') : '';
  }

  function renderBanner(cluster) {
    const b = $('#no-leader');
    const c = cluster || {};
    const reasons = Array.isArray(c.leadershipBlockedBy) ? c.leadershipBlockedBy : [];
    const secs = num(c.leaderlessSeconds) || 0;
    const leaderless = secs > 0 || reasons.length > 0 || c.leader === '';
    b.hidden = !leaderless;
    if (!leaderless) {
      b.replaceChildren();
      return;
    }
    b.replaceChildren(el('div', null, 'No leader for ' + secs + ' s'),
      el('ul', null, ...(reasons.length ? reasons : ['no reason reported']).map((r) => el('li', null, r))));
  }

  function render(route, data) {
    const app = $('#app');
    if (route.page === 'topology') renderTopology(app, data);
    else if (route.page === 'supervisor') renderSupervisor(app, data);
    else renderCluster(app, data);
  }

  // ---- the cluster page -----------------------------------------------

  function renderCluster(app, { cluster, nimbuses, supervisors, topologies, blobs }) {
    const c = cluster;
    const nimbusCols = [
      { title: 'Nimbus', cell: (n) => hostPort(n.host, n.port), cls: 'host' },
      { title: 'Status', cell: (n) => n.status, cls: (n) => 'status status-' + slug(n.status) },
      { title: 'Eligible', cell: (n) => n.eligible },
      { title: 'Holds all code', cell: (n) => n.holdsAllCode },
      { title: 'Missing topologies', cell: (n) => n.missingTopologies, cls: 'mono' },
      { title: 'Epoch', cell: (n) => (n.status === 'Leader' ? n.epoch : null), num: true },
      { title: 'Version', cell: (n) => n.version },
      { title: 'Release', cell: (n) => n.release },
      { title: 'Uptime', cell: (n) => uptime(n.nimbusUpTime, n.nimbusUpTimeSeconds) },
    ];
    // Admins may hand leadership to a follower that holds all code.
    if (c.uiActionsEnabled !== false && c.userMayHandOver === true) {
      nimbusCols.push({ title: 'Leadership', cell: handOverButton });
    }
    const supervisorCols = [
      { title: 'Id', cell: (s) => link(supervisorHref(s.id), text(s.id), 'supervisor-link'), cls: 'mono' },
      { title: 'Host', cell: (s) => s.host },
      { title: 'Slots', cell: (s) => s.slotsTotal, num: true },
      { title: 'Used', cell: (s) => s.slotsUsed, num: true },
      { title: 'Free', cell: (s) => s.slotsFree, num: true },
      { title: 'Failing workers', cell: (s) => s.workersFailing, num: true, cls: (s) => (num(s.workersFailing) > 0 ? 'bad' : '') },
      { title: 'Version', cell: (s) => s.version },
      { title: 'Release', cell: (s) => s.release },
      { title: 'Uptime', cell: (s) => uptime(s.uptime, s.uptimeSeconds) },
    ];
    const topologyCols = [
      { title: 'Name', cell: (t) => link(topologyHref(t.encodedId, t.id), text(t.name || t.id), 'topology-link') },
      { title: 'Id', cell: (t) => t.id, cls: 'mono' },
      { title: 'Status', cell: (t) => t.status, cls: (t) => 'topology-status status-' + slug(t.status) },
      { title: 'Uptime', cell: (t) => uptime(t.uptime, t.uptimeSeconds) },
      { title: 'Workers', cell: (t) => t.workersTotal, num: true },
      { title: 'Executors', cell: (t) => t.executorsTotal, num: true },
      { title: 'Replication', cell: (t) => t.replicationCount, num: true },
      { title: 'Failing workers', cell: (t) => t.workersFailing, num: true, cls: (t) => (num(t.workersFailing) > 0 ? 'bad' : '') },
    ];
    app.replaceChildren(
      el('h1', null, 'Cluster'),
      el('div', { class: 'stats', id: 'cluster-summary' },
        stat('Leader', c.leader || DASH),
        stat('Eligible standbys', c.eligibleStandbys),
        stat('Nimbus-HA', c.nimbusHaVersion),
        stat('Cluster version', c.clusterVersion),
        stat('Storm API', c.stormVersion),
        stat('Supervisors', c.supervisors),
        stat('Topologies', c.topologies),
        stat('Slots used / total', text(c.slotsUsed) + ' / ' + text(c.slotsTotal)),
        stat('Free slots', c.slotsFree),
        stat('Executors', c.executorsTotal),
        stat('Tasks', c.tasksTotal),
        stat('You', c.user)),
      el('h2', null, 'Nimbuses'),
      resultLine(),
      table('nimbuses', nimbusCols, nimbuses.nimbuses, 'no nimbus reports'),
      el('h2', null, 'Supervisors'),
      table('supervisors', supervisorCols, supervisors.supervisors, 'no supervisors'),
      el('h2', null, 'Topologies'),
      table('topologies', topologyCols, topologies.topologies, 'no topologies'),
      el('h2', null, 'Blobs'),
      blobsPanel(blobs));
  }

  // blobsPanel is the blobstore's table (GET blobstore: the blobs this
  // user may read), or why it cannot be read.
  function blobsPanel(blobs) {
    if (!blobs || blobs.error) {
      return el('p', { id: 'blobs-error', class: 'empty' }, 'Cannot read the blobs: ' + text(blobs && blobs.error));
    }
    const notOk = (b) => (b.state !== 'OK' ? 'not-ok state-' + slug(b.state) : '');
    const cols = [
      { title: 'Key', cell: (b) => b.key, cls: 'mono' },
      { title: 'Version', cell: (b) => b.version, num: true },
      { title: 'Size', cell: (b) => el('span', { title: text(b.size) + ' bytes' }, bytes(b.size)), num: true },
      { title: 'Replication', cell: (b) => text(b.replicationCount) + ' / ' + text(b.replicationFactor), num: true, cls: notOk },
      { title: 'State', cell: (b) => b.state, cls: notOk },
      { title: 'Owner', cell: (b) => b.owner },
      // Only the leader knows which topologies use a blob: elsewhere null.
      { title: 'Used by', cell: (b) => (Array.isArray(b.usedBy) ? (b.usedBy.length ? b.usedBy : 'none') : 'known to the leader'),
        cls: (b) => (Array.isArray(b.usedBy) ? 'mono' : 'empty') },
      { title: 'Updated', cell: (b) => unixTime(num(b.updatedUnixMs) !== null ? Math.floor(b.updatedUnixMs / 1000) : null) },
    ];
    return table('blobs', cols, blobs.blobs, 'no blobs you may read');
  }

  // handOverButton is a follower's "Make leader" button, or a dash.
  function handOverButton(n) {
    if (n.status !== 'Not a Leader' || !n.eligible) return DASH; // Storm's word for a follower
    const to = hostPort(n.host, n.port);
    const button = el('button', { type: 'button', class: 'handover', 'data-to': to }, 'Make leader');
    button.addEventListener('click', () => askFirst({
      label: 'Make leader',
      title: 'Hand leadership to ' + to + '?',
      explain: `The leader steps down and ${to} leads within milliseconds; nimbuses queued before it queue again behind. Requests in flight are retried by the clients. The topologies keep running.`,
      send: () => post('nimbus/handover?to=' + encodeURIComponent(to)),
      describe: (b) => `${text(b.to)} leads (epoch ${text(b.toEpoch)}); ${text(b.leaderlessMs)} ms without a leader`,
    }));
    return button;
  }

  // resultLine is where an action's outcome is shown, kept across refreshes.
  function resultLine() {
    const r = el('div', { id: 'action-result', role: 'status', 'aria-live': 'polite' });
    if (state.result) {
      r.textContent = state.result.msg;
      r.classList.toggle('ok', state.result.ok === true);
      r.classList.toggle('failed', state.result.ok === false);
    }
    return r;
  }

  // ---- the topology page ----------------------------------------------

  const workerCols = [
    { title: 'Host', cell: (w) => w.host },
    { title: 'Port', cell: (w) => w.port, num: true },
    { title: 'Supervisor', cell: (w) => (w.supervisorId ? link(supervisorHref(w.supervisorId), w.supervisorId, 'supervisor-link') : DASH), cls: 'mono' },
    { title: 'State', cell: (w) => w.state, cls: (w) => 'state state-' + slug(w.state) },
    { title: 'Restarts', cell: (w) => w.restarts, num: true },
    { title: 'Last exit', cell: exitOf },
    { title: 'Last error', cell: (w) => w.lastError, cls: 'error-text' },
    { title: 'Last error at', cell: (w) => unixTime(w.lastErrorTime) },
    { title: 'Log', cell: (w) => logLink(w) },
  ];

  // logLink links a worker to its log on its supervisor's logviewer
  // (workerLogLink), which asks for the same client certificate as the
  // nimbus: when stormctl ui serves the page, through its relay, since the
  // browser has none.
  function logLink(w) {
    const href = logHref(w);
    return href ? el('a', { href, class: 'log-link', target: '_blank', rel: 'noopener noreferrer' }, 'log') : DASH;
  }

  // logHref is where a worker's log link goes, or '': only an http(s)
  // URL with a host becomes a link (a javascript: URL never does).
  function logHref(w) {
    let u;
    try {
      u = new URL(w.workerLogLink);
    } catch (_) {
      return '';
    }
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) return '';
    if (state.logRelay === null) return u.href;
    if (!w.supervisorId) return '';
    return state.logRelay + encodeURIComponent(w.supervisorId) + u.pathname + u.search;
  }

  // counted shows a tuple count or latency: the API writes null where no
  // worker reported in the window, which is "no data", not zero.
  const counted = (v) => (v === null || v === undefined ? 'no data' : v);
  const countCol = (title, key) => ({ title, cell: (r) => counted(r[key]), num: true, cls: (r) => (r[key] === null || r[key] === undefined ? 'no-data' : '') });

  const statsCols = [
    { title: 'Window', cell: (s) => s.windowPretty },
    countCol('Emitted', 'emitted'),
    countCol('Transferred', 'transferred'),
    countCol('Acked', 'acked'),
    countCol('Failed', 'failed'),
    countCol('Complete latency (ms)', 'completeLatency'),
  ];

  function componentCols(idKey) {
    const counts = idKey === 'spoutId'
      ? [countCol('Emitted', 'emitted'), countCol('Transferred', 'transferred'), countCol('Acked', 'acked'),
        countCol('Failed', 'failed'), countCol('Complete latency (ms)', 'completeLatency')]
      : [countCol('Executed', 'executed'), countCol('Execute latency (ms)', 'executeLatency'),
        countCol('Process latency (ms)', 'processLatency'), countCol('Capacity', 'capacity'), countCol('Emitted', 'emitted'),
        countCol('Acked', 'acked'), countCol('Failed', 'failed')];
    return [
      { title: 'Id', cell: (c) => c[idKey], cls: 'mono' },
      { title: 'Executors', cell: (c) => c.executors, num: true },
      { title: 'Tasks', cell: (c) => c.tasks, num: true },
      ...counts,
      { title: 'Last error', cell: (c) => c.lastError, cls: 'error-text' },
      { title: 'Error host', cell: (c) => (c.errorHost ? hostPort(c.errorHost, c.errorPort) : DASH) },
    ];
  }

  const executorCols = [
    { title: 'Component', cell: (e) => e.component, cls: 'mono' },
    { title: 'Tasks', cell: (e) => (num(e.taskStart) !== null ? (e.taskStart === e.taskEnd ? e.taskStart : e.taskStart + '–' + text(e.taskEnd)) : DASH) },
    { title: 'Host', cell: (e) => e.host },
    { title: 'Port', cell: (e) => e.port, num: true },
    { title: 'Supervisor', cell: (e) => e.supervisorId, cls: 'mono' },
    { title: 'Uptime', cell: (e) => uptime(e.uptime, e.uptimeSeconds) },
  ];

  // The actions: what each does, said in the confirmation dialog.
  const ACTIONS = {
    activate: { label: 'Activate', explain: (n) => `Activate topology ${n}: its spouts start emitting again.` },
    deactivate: { label: 'Deactivate', explain: (n) => `Deactivate topology ${n}: its spouts stop emitting; bolts finish what is in flight. Its workers keep running.` },
    rebalance: { label: 'Rebalance', wait: 'rebalance-wait', explain: (n, w) => `Rebalance topology ${n}: it is deactivated for ${w} s, then its workers are spread again over the free slots and it is activated.` },
    kill: { label: 'Kill', wait: 'kill-wait', danger: true, explain: (n, w) => `Kill topology ${n}: it is deactivated now and its workers are stopped after ${w} s. Its code is deleted. This cannot be undone.` },
  };

  function actionBar() {
    const groups = Object.entries(ACTIONS).map(([name, a]) => {
      const button = el('button', { type: 'button', id: 'action-' + name, class: a.danger ? 'danger' : null }, a.label);
      button.addEventListener('click', () => confirmTopologyAction(name));
      if (!a.wait) return el('span', { class: 'action-group' }, button);
      const input = el('input', { type: 'number', id: a.wait, min: 0, step: 1, value: 30, inputmode: 'numeric' });
      return el('span', { class: 'action-group' }, button, el('label', { for: a.wait }, 'wait', input, 's'));
    });
    return el('div', { class: 'actions', id: 'actions' }, ...groups);
  }

  // renderTopology builds the page's frame once per visit and then only
  // replaces the data in it, so that the action bar (and a wait being
  // typed, with its focus) survives the refreshes.
  function renderTopology(app, { cluster, topology: t, logconfig }) {
    const gen = String(state.generation);
    if (app.dataset.generation !== gen || !$('#topology-data')) {
      app.replaceChildren(
        el('h1', { id: 'topology-title' }),
        el('div', { id: 'topology-head' }),
        actionBar(),
        resultLine(),
        el('div', { id: 'topology-data' }),
        logLevelsPanel());
      app.dataset.generation = gen;
    }
    $('#actions').hidden = cluster.uiActionsEnabled === false;
    state.topology = { id: t.id || state.route.id, name: t.name || t.id || state.route.id };
    // What the REST answer says this user may do; the leader decides either way.
    const actions = cluster.uiActionsEnabled !== false;
    const mayRestart = actions && t.userMayRestartWorkers === true;
    const maySetLevels = actions && t.userMaySetLogConfig === true;
    renderLogLevels(logconfig, maySetLevels);

    // The truth stormctl list tells: running of wanted, and slots lacking.
    const workersLine = (t) => {
      if (typeof t.workersRunning !== 'number') return t.workersTotal;
      let line = t.workersRunning + ' of ' + t.workersTotal + ' running';
      if (t.missingSlots > 0) line += ', lacks ' + t.missingSlots + (t.missingSlots === 1 ? ' slot' : ' slots');
      return line;
    };
    $('#topology-title').replaceChildren('Topology ', el('span', { class: 'mono' }, state.topology.name));
    const replicas = (Array.isArray(t.replicas) ? t.replicas : []).map((r) => hostPort(r.host, r.port));
    $('#topology-head').replaceChildren(kv('topology-summary', [
      ['Name', t.name],
      ['Id', t.id, { class: 'mono' }],
      ['Owner', t.owner],
      ['Status', t.status, { id: 'topology-status', class: 'status-' + slug(t.status) }],
      ['Uptime', uptime(t.uptime, t.uptimeSeconds)],
      ['Workers', workersLine(t), { id: 'topology-workers', class: t.missingSlots > 0 ? 'shortfall' : '' }],
      ...(t.missingSlots > 0 && t.schedulerInfo ? [['Scheduler', t.schedulerInfo, { id: 'topology-scheduler-info', class: 'shortfall' }]] : []),
      ['Executors', t.executorsTotal],
      ['Tasks', t.tasksTotal],
      ['Message timeout (s)', t.msgTimeout],
      ['Replication count', t.replicationCount],
      ['Replicas', replicas],
    ]));

    const conf = t.configuration && typeof t.configuration === 'object' ? t.configuration : {};
    const confRows = Object.keys(conf).sort().map((k) => ({ key: k, value: conf[k] }));
    $('#topology-data').replaceChildren(
      el('h2', null, 'Tuple counts'),
      ...(t.statsReported === false ? [el('p', { id: 'stats-no-data', class: 'no-data' }, 'No data: no worker of this topology has reported counts.')] : []),
      table('topology-stats', statsCols, t.topologyStats, 'no counts'),
      el('h2', null, 'Workers'),
      table('workers', mayRestart ? [...workerCols, { title: 'Restart', cell: restartButton }] : workerCols, t.workers, 'no workers'),
      el('h2', null, 'Spouts'),
      table('spouts', componentCols('spoutId'), t.spouts, 'no spouts'),
      el('h2', null, 'Bolts'),
      table('bolts', componentCols('boltId'), t.bolts, 'no bolts'),
      el('h2', null, 'Executors'),
      table('executors', executorCols, t.executors, 'no executors'),
      el('h2', null, 'Configuration'),
      table('configuration', [
        { title: 'Key', cell: (r) => r.key, cls: 'mono' },
        { title: 'Value', cell: (r) => r.value, cls: 'mono' },
      ], confRows, 'no configuration'));
  }

  // confirmTopologyAction opens the dialog for an action on the current
  // topology.
  function confirmTopologyAction(name) {
    const a = ACTIONS[name];
    const topo = state.topology;
    if (!a || !topo) return;
    let path = name;
    let wait = null;
    if (a.wait) {
      const raw = $('#' + a.wait).value.trim();
      if (!/^\d+$/.test(raw)) {
        showResult(false, a.label + ': the wait must be a whole number of seconds, not "' + raw + '"');
        return;
      }
      wait = Number(raw);
      path += '/' + wait;
    }
    const id = topo.id;
    askFirst({
      label: a.label,
      title: a.label + ' ' + topo.name + '?',
      explain: a.explain(topo.name, wait),
      danger: a.danger,
      send: () => post('topology/' + encodeURIComponent(id) + '/' + path),
      describe: (b) => text(b.status || 'done') + (b.topologyOperation ? ' (' + b.topologyOperation + ')' : ''),
    });
  }

  // restartButton is a worker's "Restart" button: its supervisor stops it
  // and starts it again on the same slot.
  function restartButton(w) {
    const topo = state.topology;
    if (!w.host || num(w.port) === null || !topo) return DASH;
    const worker = w.host + ':' + w.port;
    const button = el('button', { type: 'button', class: 'restart-worker', 'data-worker': worker }, 'Restart');
    button.addEventListener('click', () => askFirst({
      label: 'Restart',
      title: 'Restart worker ' + worker + '?',
      explain: `The supervisor on ${w.host} stops the worker of ${topo.name} on port ${w.port} and starts it again on the same slot. Tuples in flight in it are replayed or lost as the topology acks them; its other workers run on.`,
      send: () => post('topology/' + encodeURIComponent(topo.id) + '/profiling/restartworker/' + encodeURIComponent(worker)),
      describe: (b) => 'worker ' + text(b.id) + ' restarts on its slot (' + text(b.status) + ')',
    }));
    return button;
  }

  // askFirst opens the dialog for action a: {label, title, explain, danger,
  // send, describe}; OK runs it (runPending).
  function askFirst(a) {
    state.pending = { ...a, generation: state.generation };
    $('#confirm-title').textContent = a.title;
    $('#confirm-text').textContent = a.explain;
    $('#confirm-ok').textContent = a.label;
    $('#confirm-ok').classList.toggle('danger', !!a.danger);
    $('#confirm').showModal();
  }

  async function runPending() {
    const p = state.pending;
    state.pending = null;
    $('#confirm').close();
    if (!p || p.generation !== state.generation) return;
    showResult(null, p.label + ': sending…');
    try {
      const body = await p.send();
      if (p.generation !== state.generation) return;
      showResult(true, p.label + ': ' + p.describe(body));
    } catch (err) {
      if (p.generation !== state.generation) return;
      showResult(false, p.label + ' failed: ' + err.message + (err.status ? ' (HTTP ' + err.status + ')' : ''));
    }
    refresh();
  }

  function showResult(ok, msg) {
    state.result = { ok, msg };
    const r = $('#action-result');
    if (!r) return;
    r.textContent = msg;
    r.classList.toggle('ok', ok === true);
    r.classList.toggle('failed', ok === false);
  }

  // ---- the topology page's log levels ---------------------------------

  // The levels a worker knows (workerproto.Levels), most verbose first.
  const LEVELS = ['ALL', 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'OFF'];
  const MAX_LEVEL_TIMEOUT = 7 * 24 * 3600; // validate.MaxLogLevelTimeout

  // logLevelsPanel is the panel's frame, built once per visit so that a
  // logger being typed survives the refreshes: the table of set loggers
  // and the form that sets one (Storm's LOGGER=LEVEL with a timeout).
  function logLevelsPanel() {
    const level = el('select', { id: 'loglevel-level' }, ...LEVELS.map((l) => el('option', { value: l }, l)));
    level.value = 'DEBUG';
    // novalidate: the page checks the fields itself and says which is wrong.
    const form = el('form', { id: 'loglevel-form', class: 'actions loglevel-form', novalidate: true },
      el('label', { for: 'loglevel-logger' }, 'Logger',
        el('input', { id: 'loglevel-logger', type: 'text', placeholder: 'ROOT or a.dotted.name', autocomplete: 'off', spellcheck: 'false' })),
      el('label', { for: 'loglevel-level' }, 'Level', level),
      el('label', { for: 'loglevel-timeout' }, 'Timeout',
        el('input', { id: 'loglevel-timeout', type: 'number', min: 0, max: MAX_LEVEL_TIMEOUT, step: 1, value: 30, inputmode: 'numeric' }), 's (0: none)'),
      el('button', { type: 'submit', id: 'loglevel-set' }, 'Set'));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      setLogLevel();
    });
    return el('section', { id: 'loglevels' },
      el('h2', null, 'Log levels'),
      el('div', { id: 'loglevels-table' }),
      form,
      el('div', { id: 'loglevel-result', role: 'status', 'aria-live': 'polite' }));
  }

  // renderLogLevels shows the topology's logconfig (Storm's
  // namedLoggerLevels, or {error}); may: the user may set and remove.
  function renderLogLevels(logconfig, may) {
    const box = $('#loglevels-table');
    if (!box) return;
    $('#loglevel-form').hidden = !may;
    if (!logconfig || logconfig.error) {
      box.replaceChildren(el('p', { class: 'empty' }, 'Cannot read the log levels: ' + text(logconfig && logconfig.error)));
      return;
    }
    const named = logconfig.namedLoggerLevels && typeof logconfig.namedLoggerLevels === 'object' ? logconfig.namedLoggerLevels : {};
    const rows = Object.keys(named).sort().map((name) => ({ name, ...(named[name] || {}) }));
    const cols = [
      { title: 'Logger', cell: (r) => r.name, cls: 'mono' },
      { title: 'Level', cell: (r) => r.target_level },
      { title: 'Reset to', cell: (r) => r.reset_level },
      { title: 'Timeout (s)', cell: (r) => (num(r.timeout) > 0 ? r.timeout : 'none'), num: true },
      { title: 'Reverts at', cell: (r) => (num(r.timeout_epoch) > 0 ? unixTime(Math.floor(r.timeout_epoch / 1000)) : DASH) },
    ];
    if (may) cols.push({ title: 'Remove', cell: removeLoggerButton });
    box.replaceChildren(table('loglevels-list', cols, rows, 'no logger set: every worker logs at its own levels'));
  }

  function removeLoggerButton(r) {
    const button = el('button', { type: 'button', class: 'loglevel-remove', 'data-logger': r.name }, 'Remove');
    button.addEventListener('click', () => sendLogLevels('Remove ' + r.name, { [r.name]: { target_level: null } }));
    return button;
  }

  // setLogLevel sends the form's logger, level and timeout, after checking
  // them as the server does (it checks again).
  function setLogLevel() {
    const logger = $('#loglevel-logger').value.trim();
    const level = $('#loglevel-level').value;
    const rawTimeout = $('#loglevel-timeout').value.trim();
    if (!logger || /[\s\p{C}]/u.test(logger)) {
      showLogResult(false, 'Logger: give ROOT or a logger name without spaces, not "' + logger + '"');
      return;
    }
    if (!/^\d+$/.test(rawTimeout) || Number(rawTimeout) > MAX_LEVEL_TIMEOUT) {
      showLogResult(false, 'Timeout: a whole number of seconds from 0 (none) to ' + MAX_LEVEL_TIMEOUT + ', not "' + rawTimeout + '"');
      return;
    }
    sendLogLevels('Set ' + logger + '=' + level, { [logger]: { target_level: level, timeout: Number(rawTimeout) } });
  }

  // sendLogLevels posts Storm's {namedLoggerLevels: loggers} and shows the
  // topology's log levels the answer gives.
  async function sendLogLevels(what, loggers) {
    const topo = state.topology;
    const gen = state.generation;
    if (!topo) return;
    showLogResult(null, what + ': sending…');
    try {
      const body = await post('topology/' + encodeURIComponent(topo.id) + '/logconfig', { namedLoggerLevels: loggers });
      if (gen !== state.generation) return;
      renderLogLevels(body, true);
      showLogResult(true, what + ': done');
      refresh(); // drops a refresh in flight, which may predate the change
    } catch (err) {
      if (gen !== state.generation) return;
      showLogResult(false, what + ' failed: ' + err.message + (err.status ? ' (HTTP ' + err.status + ')' : ''));
    }
  }

  function showLogResult(ok, msg) {
    const r = $('#loglevel-result');
    if (!r) return;
    r.textContent = msg;
    r.classList.toggle('ok', ok === true);
    r.classList.toggle('failed', ok === false);
  }

  // ---- the supervisor page --------------------------------------------

  function renderSupervisor(app, { supervisor }) {
    const s = supervisor.supervisors[0] || {};
    const cols = [
      { title: 'Topology', cell: (w) => (w.topologyId ? link(topologyHref(null, w.topologyId), text(w.topologyName || w.topologyId), 'topology-link') : text(w.topologyName)) },
      { title: 'Port', cell: (w) => w.port, num: true },
      { title: 'State', cell: (w) => w.state, cls: (w) => 'state state-' + slug(w.state) },
      { title: 'Restarts', cell: (w) => w.restarts, num: true },
      { title: 'Executors', cell: (w) => w.executorsTotal, num: true },
      { title: 'Uptime', cell: (w) => uptime(w.uptime, w.uptimeSeconds) },
      { title: 'Last exit', cell: exitOf },
      { title: 'Last error', cell: (w) => w.lastError, cls: 'error-text' },
      { title: 'Last error at', cell: (w) => unixTime(w.lastErrorTime) },
      { title: 'Log', cell: (w) => logLink(w) },
    ];
    app.replaceChildren(
      el('h1', null, 'Supervisor ', el('span', { class: 'mono' }, s.id || state.route.id)),
      kv('supervisor-summary', [
        ['Id', s.id, { class: 'mono' }],
        ['Host', s.host],
        ['Uptime', uptime(s.uptime, s.uptimeSeconds)],
        ['Slots', s.slotsTotal],
        ['Used', s.slotsUsed],
        ['Free', s.slotsFree],
        ['Failing workers', s.workersFailing],
        ['Version', s.version],
      ]),
      el('h2', null, 'Workers'),
      table('supervisor-workers', cols, supervisor.workers, 'no workers'));
  }

  // ---- start ----------------------------------------------------------

  function start() {
    $('#confirm-ok').addEventListener('click', runPending);
    $('#confirm-cancel').addEventListener('click', () => {
      state.pending = null;
      $('#confirm').close();
    });
    $('#confirm').addEventListener('cancel', () => {
      state.pending = null;
    });
    window.addEventListener('hashchange', onRoute);
    setInterval(renderFreshness, 1000);
    onRoute();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
