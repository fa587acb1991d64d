// The web UI of `python -m host local TOPOLOGY --ui`: draws the topology once from
// /api/topology, then polls /api/snapshot every second and updates the numbers in place.
// No framework and no build step. Everything that comes from the run (ids, commands, log lines)
// is put in the page as text (textContent), never as HTML.
'use strict';

const POLL_MS = 1000;
const RATE_WINDOW_S = 2; // per-component rates: over the last two seconds or so
const HISTORY_POINTS = 120; // the throughput sparkline: two minutes at one poll a second
const NODE_W = 196;
const NODE_H = 84;
const GAP_X = 150; // room for the edge labels between columns
const GAP_Y = 30;
const WAYPOINT_H = 22; // the slot an edge takes in a column it crosses
const MARGIN = 24;
const SVG_NS = 'http://www.w3.org/2000/svg';

const state = {
  topology: null,
  snapshot: null,
  previous: null, // a snapshot at least RATE_WINDOW_S older, for the per-component rates
  recent: [], // the snapshots of the last few seconds, oldest first
  history: [],
  selected: null,
  nodes: new Map(), // component id -> the SVG elements that show its live numbers
  failuresShown: '',
  logsShown: '',
};

// ---- small helpers --------------------------------------------------------------------------
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const fmtInt = (n) => (n === undefined || n === null ? '-' : Number(n).toLocaleString('en-US'));
const fmtMs = (v) => (v === undefined || v === null ? '-' : Number(v).toFixed(1));
const fmtRate = (v) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1));

function fmtBytes(v) {
  if (v === undefined || v === null) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

function fmtUptime(s) {
  s = Math.floor(s);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h ? `${h}h ${m}m ${sec}s` : m ? `${m}m ${sec}s` : `${sec}s`;
}

function fmtTime(t) {
  if (typeof t !== 'number') return t ? String(t) : '';
  return new Date(t * 1000).toLocaleTimeString('en-GB', { hour12: false });
}

async function getJSON(path) {
  const response = await fetch(path, { cache: 'no-store' });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  return response.json();
}

// ---- layout ---------------------------------------------------------------------------------
// A layered drawing. Spouts in column 0; a bolt one column right of its deepest source (longest
// path), so data flows left to right. An edge that skips columns gets a waypoint in each column
// it crosses, ordered with the nodes, so it runs between them instead of through them. An edge
// that goes backwards (a cycle) loops underneath. Within a column, a few sweeps of the
// barycenter heuristic keep edges short and crossings few.

function depths(components) {
  const depth = new Map();
  for (const c of components) depth.set(c.id, c.kind === 'spout' ? 0 : 1);
  for (let round = 0; round < components.length; round += 1) {
    let changed = false;
    for (const c of components) {
      if (c.kind === 'spout') continue;
      for (const input of c.inputs) {
        if (input.source === c.id || !depth.has(input.source)) continue;
        const wanted = depth.get(input.source) + 1;
        if (wanted > depth.get(c.id) && wanted <= components.length) {
          depth.set(c.id, wanted);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  return depth;
}

// The edges of the drawing: one per subscription, each with the chain of layout slots it
// passes (source, waypoints..., target).
function edgesOf(topology, depth) {
  const edges = [];
  const pairCount = new Map();
  for (const c of topology.components) {
    for (const input of c.inputs) {
      if (!depth.has(input.source)) continue;
      const key = `${input.source}\u0000${c.id}`;
      const index = pairCount.get(key) || 0;
      pairCount.set(key, index + 1);
      const from = depth.get(input.source);
      const to = depth.get(c.id);
      const kind = input.source === c.id ? 'self' : to > from ? 'forward' : 'back';
      const waypoints = [];
      if (kind === 'forward') {
        for (let d = from + 1; d < to; d += 1) waypoints.push(`\u0000${edges.length}:${d}`);
      }
      edges.push({ input, target: c.id, index, kind, waypoints });
    }
  }
  return edges;
}

function layout(topology) {
  const depth = depths(topology.components);
  const edges = edgesOf(topology, depth);
  // the slots of each column: components and waypoints, each with the slots feeding it
  const slots = new Map();
  for (const c of topology.components) slots.set(c.id, { id: c.id, depth: depth.get(c.id), preds: [], real: true });
  for (const e of edges) {
    if (e.kind !== 'forward') continue;
    let prev = e.input.source;
    e.waypoints.forEach((id, i) => {
      slots.set(id, { id, depth: depth.get(e.input.source) + 1 + i, preds: [prev], real: false });
      prev = id;
    });
    slots.get(e.target).preds.push(prev);
  }
  const cols = [];
  for (const slot of slots.values()) (cols[slot.depth] = cols[slot.depth] || []).push(slot);
  const filled = cols.filter(Boolean);
  const order = new Map();
  filled.forEach((col) => col.forEach((s, i) => order.set(s.id, i)));
  for (let sweep = 0; sweep < 4; sweep += 1) {
    for (const col of filled.slice(1)) {
      const score = (s) => {
        const at = s.preds.map((p) => order.get(p)).filter((p) => p !== undefined);
        return at.length ? at.reduce((a, b) => a + b, 0) / at.length : order.get(s.id);
      };
      col.sort((a, b) => score(a) - score(b));
      col.forEach((s, i) => order.set(s.id, i));
    }
  }
  const slotHeight = (s) => (s.real ? NODE_H : WAYPOINT_H);
  const colHeight = (col) => col.reduce((h, s) => h + slotHeight(s), 0) + (col.length - 1) * GAP_Y;
  const height = Math.max(...filled.map(colHeight));
  // a component that reads its own output gets a loop drawn above it
  const lift = edges.some((e) => e.kind === 'self') ? 50 : 0;
  const place = new Map();
  filled.forEach((col, x) => {
    let y = MARGIN + lift + (height - colHeight(col)) / 2;
    for (const s of col) {
      place.set(s.id, { x: MARGIN + x * (NODE_W + GAP_X), y, h: slotHeight(s) });
      y += slotHeight(s) + GAP_Y;
    }
  });
  const back = edges.some((e) => e.kind === 'back');
  return {
    place,
    edges,
    width: MARGIN * 2 + filled.length * NODE_W + (filled.length - 1) * GAP_X,
    height: MARGIN * 2 + lift + height + (back ? 70 : 0),
  };
}

// ---- the graph ------------------------------------------------------------------------------
function drawGraph(topology) {
  const root = $('graph');
  root.replaceChildren();
  const { place, edges, width, height } = layout(topology);
  root.setAttribute('viewBox', `0 0 ${width} ${height}`);
  // as wide as it needs, scaled down to fit a narrow window
  root.style.maxWidth = `${width}px`;

  const defs = svg('defs');
  const marker = svg('marker', {
    id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerUnits: 'userSpaceOnUse',
    markerWidth: 9, markerHeight: 9, orient: 'auto-start-reverse',
  });
  marker.append(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z' }));
  defs.append(marker);
  root.append(defs);

  const edgeLayer = svg('g', { class: 'edges' });
  const nodeLayer = svg('g', { class: 'nodes' });
  const labelLayer = svg('g', { class: 'edge-labels' });
  root.append(edgeLayer, nodeLayer, labelLayer);

  for (const e of edges) {
    const { input, target } = e;
    const { d, lx, ly } = edgePath(e, place);
    const group = svg('g', {
      class: `edge ${input.grouping}`, 'data-source': input.source, 'data-target': target,
      'data-stream': input.stream,
    });
    group.append(svg('path', { d, 'marker-end': 'url(#arrow)' }));
    group.append(svg('title', {}, `${input.source} → ${target}: stream ${input.stream}, ${input.label}`));
    edgeLayer.append(group);
    labelLayer.append(edgeLabel(input.label, lx, ly));
  }

  state.nodes.clear();
  for (const c of topology.components) {
    const p = place.get(c.id);
    const group = svg('g', {
      class: `node ${c.kind}${c.in_host ? ' in-host' : ''}`, 'data-id': c.id,
      transform: `translate(${p.x},${p.y})`,
    });
    group.append(svg('rect', { width: NODE_W, height: NODE_H }));
    group.append(svg('text', { class: 'title', x: 10, y: 19 }, clip(c.id, 24)));
    // an in-host part has no process, so no entry in the snapshot's components: its node says
    // where it runs and what it stands for in place of a task's figures
    group.append(svg('text', { class: 'sub', x: 10, y: 35 }, `${c.kind} · ×${c.parallelism} · ` +
      (c.in_host ? 'runs inside the host' : clip(runsText(c), 18))));
    const live = svg('text', { class: c.in_host ? 'live where' : 'live', x: 10, y: 54 },
      c.in_host ? clip(runsText(c), 28) : '');
    const rate = svg('text', { class: 'live', x: 10, y: 71 }, '');
    group.append(live, rate);
    const badge = svg('g', { class: 'badge', transform: `translate(${NODE_W - 4},4)` });
    badge.style.display = 'none';
    badge.append(svg('circle', { r: 10 }));
    const badgeText = svg('text', { 'text-anchor': 'middle', y: 3.5 }, '');
    badge.append(badgeText);
    group.append(badge);
    group.append(svg('title', {}, `${c.id} (${c.kind}, ${c.parallelism} task` +
      `${c.parallelism === 1 ? '' : 's'}): ${c.in_host ? c.in_host : c.command.join(' ')}`));
    group.addEventListener('click', () => select(c.id));
    nodeLayer.append(group);
    state.nodes.set(c.id, { group, live, rate, badge, badgeText });
  }
}

// What a component runs, in a few words: the Storm class an in-host DRPC part stands for (its
// `in_host`, from /api/topology), a built-in's short name, or the command line.
function runsText(c) {
  if (c.in_host) return c.in_host.replace(/, in host$/, '');
  return c.builtin ? c.builtin : c.command.join(' ');
}

function clip(text, n) {
  return text.length <= n ? text : `${text.slice(0, n - 1)}…`;
}

// A curve between two points with horizontal tangents at both ends.
function curve(x1, y1, x2, y2) {
  const dx = (x2 - x1) / 2;
  return `C ${x1 + dx} ${y1}, ${x2 - dx} ${y2}, ${x2} ${y2}`;
}

// The path of an edge and where its label goes. Forward: from the right side of the source,
// through the middle of each waypoint, into the left side of the target; the label sits on the
// first waypoint (free space by construction) or halfway along a direct curve. Several edges
// between the same two components are fanned out by `index`.
function edgePath(e, place) {
  const from = place.get(e.input.source);
  const to = place.get(e.target);
  const fan = e.index * 14;
  if (e.kind === 'self') {
    const x = from.x + NODE_W / 2;
    const y = from.y;
    const d = `M ${x - 30} ${y} C ${x - 50} ${y - 50 - fan}, ${x + 50} ${y - 50 - fan}, ${x + 30} ${y}`;
    return { d, lx: x, ly: y - 38 - fan };
  }
  if (e.kind === 'back') {
    const sx = from.x + NODE_W / 2 + fan;
    const sy = from.y + NODE_H;
    const tx = to.x + NODE_W / 2 + fan;
    const ty = to.y + NODE_H;
    const low = Math.max(sy, ty) + 50 + fan;
    const d = `M ${sx} ${sy} C ${sx} ${low}, ${tx} ${low}, ${tx} ${ty}`;
    return { d, lx: (sx + tx) / 2, ly: low - 12 };
  }
  let x = from.x + NODE_W;
  let y = from.y + NODE_H / 2 + fan;
  let d = `M ${x} ${y}`;
  let label = null;
  for (const id of e.waypoints) {
    const w = place.get(id);
    const wy = w.y + w.h / 2;
    d += ` ${curve(x, y, w.x, wy)} L ${w.x + NODE_W} ${wy}`;
    if (!label) label = { lx: w.x + NODE_W / 2, ly: wy };
    x = w.x + NODE_W;
    y = wy;
  }
  const tx = to.x;
  const ty = to.y + NODE_H / 2 + fan;
  d += ` ${curve(x, y, tx, ty)}`;
  if (!label) {
    // the middle of the curve (t = 1/2) is the middle of its two ends
    label = { lx: (x + tx) / 2, ly: (y + ty) / 2 };
  }
  return { d, ...label };
}

function edgeLabel(text, x, y) {
  const group = svg('g', { class: 'edge-label' });
  const rect = svg('rect', { rx: 3, ry: 3 });
  const label = svg('text', { x, y, 'text-anchor': 'middle', 'dominant-baseline': 'middle' }, text);
  group.append(rect, label);
  // sized after layout, when the text can be measured
  requestAnimationFrame(() => {
    try {
      const box = label.getBBox();
      rect.setAttribute('x', box.x - 3);
      rect.setAttribute('y', box.y - 1);
      rect.setAttribute('width', box.width + 6);
      rect.setAttribute('height', box.height + 2);
    } catch (e) { /* not rendered: no background */ }
  });
  return group;
}

// ---- live numbers ---------------------------------------------------------------------------
function perSecond(cid, key) {
  const now = state.snapshot;
  const before = state.previous;
  if (!before || !before.components[cid]) return null;
  const dt = now.topology.uptime_s - before.topology.uptime_s;
  if (dt <= 0) return null;
  return Math.max(0, (now.components[cid][key] - before.components[cid][key]) / dt);
}

function updateGraph(snap) {
  for (const [cid, node] of state.nodes) {
    node.group.classList.toggle('selected', cid === state.selected);
    if (node.group.classList.contains('in-host')) {
      // a DRPC part: the requests it reads (a spout) or answers (a bolt), from the `drpc` section
      const d = snap.drpc;
      const spout = node.group.classList.contains('spout');
      node.rate.textContent = !d ? '' : spout ? `pending ${fmtInt(d.pending)}` : `answered ${fmtInt(d.answered)}`;
      continue;
    }
    const c = snap.components[cid];
    if (!c) continue;
    const spout = node.group.classList.contains('spout');
    const rate = perSecond(cid, spout ? 'emitted' : 'executed');
    node.live.textContent = spout ? `emitted ${fmtInt(c.emitted)}` : `executed ${fmtInt(c.executed)}`;
    let text = rate === null ? '' : `${fmtRate(rate)}/s`;
    if (!spout && typeof c.capacity === 'number') {
      text += `${text ? ' · ' : ''}capacity ${c.capacity.toFixed(2)}`;
    }
    node.rate.textContent = text;
    const cap = typeof c.capacity === 'number' ? c.capacity : 0;
    node.group.classList.toggle('busy', cap >= 0.5 && cap < 0.8);
    node.group.classList.toggle('hot', cap >= 0.8);
    const states = c.states || [];
    node.group.classList.toggle('broken', states.some((s) => s !== 'running'));
    const trouble = (c.errors || 0) + (c.restarts || 0);
    node.badge.style.display = trouble ? '' : 'none';
    node.badgeText.textContent = trouble > 99 ? '99+' : String(trouble);
  }
}

function updateSummary(snap) {
  const top = snap.topology;
  $('uptime').textContent = fmtUptime(top.uptime_s);
  $('acked').textContent = fmtInt(top.spout_tuples_acked);
  setBad($('failed'), top.spout_tuples_failed);
  setBad($('timed-out'), top.spout_tuples_timed_out);
  $('pending').textContent = fmtInt(top.spout_tuples_pending);
  const lat = top.complete_latency_ms || {};
  $('latency').textContent = `${fmtMs(lat.p50)} / ${fmtMs(lat.p99)} ms`;
}

// One point of the throughput history per new snapshot.
function updateRate(snap) {
  const top = snap.topology;
  let rate = top.acked_per_s;
  if (typeof rate !== 'number') {
    const before = state.previous;
    const dt = before ? top.uptime_s - before.topology.uptime_s : 0;
    rate = dt > 0 ? (top.spout_tuples_acked - before.topology.spout_tuples_acked) / dt : 0;
  }
  rate = Math.max(0, rate);
  $('rate').textContent = fmtRate(rate);
  state.history.push(rate);
  if (state.history.length > HISTORY_POINTS) state.history.shift();
  drawSparkline(state.history);
}

function setBad(node, value) {
  node.textContent = fmtInt(value);
  node.classList.toggle('bad', Boolean(value));
}

function drawSparkline(values) {
  const root = $('throughput');
  const max = Math.max(1, ...values);
  $('rate-max').textContent = values.length > 1 ? `(max ${fmtRate(Math.max(...values))}, last ${values.length}s)` : '';
  const step = 240 / (HISTORY_POINTS - 1);
  const x0 = 240 - (values.length - 1) * step;
  const points = values.map((v, i) => `${(x0 + i * step).toFixed(1)},${(34 - (v / max) * 32).toFixed(1)}`);
  root.replaceChildren();
  if (!points.length) return;
  root.append(svg('polygon', { points: `${x0.toFixed(1)},36 ${points.join(' ')} 240,36` }));
  root.append(svg('polyline', { points: points.join(' ') }));
}

const SPOUT_COLUMNS = [
  ['id', 'Id'], ['tasks', 'Tasks'], ['states', 'State'], ['emitted', 'Emitted'],
  ['transferred', 'Transferred'], ['emit_rate', 'Emitted/s'], ['acked', 'Acked'],
  ['failed', 'Failed'], ['cpu_percent', 'CPU %'], ['rss_bytes', 'Memory'],
  ['restarts', 'Restarts'], ['errors', 'Errors'], ['last_error', 'Last error'],
];
const BOLT_COLUMNS = [
  ['id', 'Id'], ['tasks', 'Tasks'], ['states', 'State'], ['executed', 'Executed'],
  ['exec_rate', 'Executed/s'], ['process_latency', 'Process latency p50 / p99 (ms)'],
  ['capacity', 'Capacity'], ['emitted', 'Emitted'], ['transferred', 'Transferred'],
  ['acked', 'Acked'], ['failed', 'Failed'], ['in_flight', 'In flight'], ['queued', 'Queued'],
  ['never_acked', 'Never acked'], ['cpu_percent', 'CPU %'], ['rss_bytes', 'Memory'], ['restarts', 'Restarts'],
  ['errors', 'Errors'], ['last_error', 'Last error'],
];

function cell(cid, c, key) {
  const td = el('td', { 'data-key': key });
  let text;
  switch (key) {
    case 'id': text = cid; td.className = 'text'; break;
    case 'states': text = (c.states || []).join(', '); td.className = 'text'; break;
    case 'emit_rate': { const r = perSecond(cid, 'emitted'); text = r === null ? '-' : fmtRate(r); break; }
    case 'exec_rate': { const r = perSecond(cid, 'executed'); text = r === null ? '-' : fmtRate(r); break; }
    case 'process_latency': {
      const lat = c.process_latency_ms;
      text = lat ? `${fmtMs(lat.p50)} / ${fmtMs(lat.p99)}` : '-';
      break;
    }
    case 'capacity':
      if (typeof c.capacity === 'number') {
        text = c.capacity.toFixed(3);
        if (c.capacity >= 0.8) td.className = 'cap-hot';
        else if (c.capacity >= 0.5) td.className = 'cap-busy';
      } else text = '-';
      break;
    case 'cpu_percent': text = typeof c.cpu_percent === 'number' ? c.cpu_percent.toFixed(1) : '-'; break;
    case 'rss_bytes': text = fmtBytes(c.rss_bytes); break;
    case 'last_error':
      text = c.last_error ? c.last_error.split('\n')[0] : '';
      td.className = 'error';
      if (c.last_error) td.title = `${c.last_error}${c.last_error_at ? ` (at ${fmtTime(c.last_error_at)})` : ''}`;
      break;
    case 'restarts': case 'errors': case 'failed':
      text = fmtInt(c[key]);
      if (c[key]) td.className = 'bad';
      break;
    case 'never_acked':
      text = fmtInt(c.never_acked);
      if (c.never_acked) {
        td.className = 'warn';
        td.title = 'tuples written to this bolt that it never acked or failed, forgotten to ' +
          'make room once their spout tuples had timed out (or, not tracked, once it had acked ' +
          'nothing for the message timeout): does it ack its tuples?';
      }
      break;
    default: text = fmtInt(c[key]);
  }
  td.textContent = text;
  return td;
}

// `inHost`: the topology's components of the table's kind that run inside the host; they have
// no figures, so each gets a row that says so (after the others, as the graph draws them).
function fillStats(table, columnsOf, entries, inHost) {
  if (!table.tHead) {
    const head = table.createTHead().insertRow();
    for (const [key, title] of columnsOf) {
      head.append(el('th', { class: key === 'id' || key === 'states' || key === 'last_error' ? 'text' : '' }, title));
    }
    table.createTBody();
  }
  const rows = entries.map(([cid, c]) => {
    const tr = el('tr', { 'data-id': cid });
    if (cid === state.selected) tr.className = 'selected';
    tr.addEventListener('click', () => select(cid));
    for (const [key] of columnsOf) tr.append(cell(cid, c, key));
    return tr;
  });
  for (const comp of inHost) {
    const tr = el('tr', { 'data-id': comp.id, class: 'in-host' });
    if (comp.id === state.selected) tr.classList.add('selected');
    tr.addEventListener('click', () => select(comp.id));
    tr.append(el('td', { 'data-key': 'id', class: 'text' }, comp.id),
      el('td', { class: 'text dim', colspan: String(columnsOf.length - 1) },
        `runs inside the host: ${runsText(comp)} (no process, so no figures here; see DRPC)`));
    rows.push(tr);
  }
  table.tBodies[0].replaceChildren(...rows);
}

function updateTables(snap) {
  const kinds = new Map(state.topology.components.map((c) => [c.id, c.kind]));
  const entries = Object.entries(snap.components);
  const inHost = state.topology.components.filter((c) => c.in_host);
  fillStats($('spouts'), SPOUT_COLUMNS, entries.filter(([cid]) => kinds.get(cid) === 'spout'),
    inHost.filter((c) => c.kind === 'spout'));
  fillStats($('bolts'), BOLT_COLUMNS, entries.filter(([cid]) => kinds.get(cid) !== 'spout'),
    inHost.filter((c) => c.kind !== 'spout'));
}

function updateFailures(snap) {
  const failures = snap.failures || [];
  const key = JSON.stringify(failures.map((f) => [f.time, f.component, f.task, f.pid]));
  if (key === state.failuresShown) return;
  state.failuresShown = key;
  const box = $('failures');
  if (!failures.length) {
    box.replaceChildren(el('p', { class: 'dim' }, 'None.'));
    return;
  }
  box.replaceChildren(...failures.slice().reverse().map((f) => {
    const div = el('div', { class: 'failure', 'data-component': f.component });
    div.append(el('h3', {}, `${f.component} task ${f.task} pid ${f.pid ?? '?'}: ${f.reason || 'failed'}` +
      `${f.exit ? ` (${f.exit})` : ''} at ${fmtTime(f.time)}`));
    if (f.stderr && f.stderr.length) {
      div.append(el('div', { class: 'label' }, 'last stderr lines'));
      div.append(el('pre', {}, f.stderr.join('\n')));
    }
    for (const [key, title] of [['last_sent', 'last message sent to it'], ['last_received', 'last it wrote']]) {
      const text = messages(f[key]);
      if (!text) continue;
      div.append(el('div', { class: 'label' }, title));
      div.append(el('pre', {}, text));
    }
    return div;
  }));
}

// The protocol messages of a failure report, without the `end` line after each; the first line
// of a tail cut mid-message (not starting a JSON value) is left out.
function messages(text) {
  if (!text) return '';
  const lines = String(text).split('\n').filter((l) => l.trim() && l.trim() !== 'end');
  if (lines.length > 1 && !/^\s*[[{]/.test(lines[0])) lines.shift();
  return lines.join('\n');
}

function updateLogs(snap) {
  const logs = snap.recent_logs || [];
  const last = logs[logs.length - 1];
  const key = `${logs.length}:${last ? `${last.time}${last.message}` : ''}`;
  if (key === state.logsShown) return;
  state.logsShown = key;
  const table = $('logs');
  if (!logs.length) {
    table.replaceChildren(el('tr', {}).appendChild(el('td', { class: 'dim' }, 'No log lines yet.')).parentNode);
    return;
  }
  const rows = logs.slice(-50).reverse().map((entry) => {
    const level = String(entry.level || 'INFO').toUpperCase();
    const tr = el('tr', { class: level });
    tr.append(el('td', {}, fmtTime(entry.time)), el('td', {}, `${entry.component}[${entry.task}]`),
      el('td', {}, level), el('td', { class: 'message' }, entry.message));
    return tr;
  });
  table.replaceChildren(...rows);
}

// ---- transactional batches (docs/transactional.md §6) ---------------------------------------
// Shown only when the snapshot has a `batches` section (a transactional topology).
const OPEN_COLUMNS = [
  ['txid', 'Txid'], ['attempt', 'Attempt'], ['phase', 'Phase'], ['age_s', 'Age (s)'],
  ['tuples', 'Tuples'], ['finished', 'Finished / tasks'],
];
const RECENT_COLUMNS = [
  ['txid', 'Txid'], ['attempt', 'Attempt'], ['tuples', 'Tuples'],
  ['processing_ms', 'Processing (ms)'], ['commit_ms', 'Commit (ms)'],
  ['committed_at', 'Committed at'],
];

function batchCell(row, key) {
  const td = el('td', { 'data-key': key });
  let text;
  switch (key) {
    case 'phase': text = String(row.phase); td.className = `text phase-${row.phase}`; break;
    case 'age_s': text = typeof row.age_s === 'number' ? row.age_s.toFixed(1) : '-'; break;
    case 'finished': text = `${fmtInt(row.finished)} / ${fmtInt(row.tasks)}`; break;
    case 'processing_ms': case 'commit_ms': text = fmtMs(row[key]); break;
    case 'committed_at': text = fmtTime(row.committed_at); td.className = 'text'; break;
    case 'attempt':
      text = fmtInt(row.attempt);
      if (row.attempt > 1) { td.className = 'warn'; td.title = 'a replay'; }
      break;
    default: text = fmtInt(row[key]);
  }
  td.textContent = text;
  return td;
}

function fillBatchRows(table, columns, rows, empty) {
  if (!table.tHead) {
    const head = table.createTHead().insertRow();
    for (const [key, title] of columns) {
      head.append(el('th', { class: key === 'phase' || key === 'committed_at' ? 'text' : '' }, title));
    }
    table.createTBody();
  }
  const trs = rows.map((row) => {
    const tr = el('tr', { 'data-txid': String(row.txid) });
    for (const [key] of columns) tr.append(batchCell(row, key));
    return tr;
  });
  if (!trs.length) {
    const tr = el('tr');
    tr.append(el('td', { class: 'dim', colspan: String(columns.length) }, empty));
    trs.push(tr);
  }
  table.tBodies[0].replaceChildren(...trs);
}

function updateBatches(snap) {
  const section = $('batches');
  const b = snap.batches;
  if (!b) { section.hidden = true; return; }
  section.hidden = false;
  $('batch-id').textContent = b.transactional_id;
  $('batch-committed-txid').textContent = fmtInt(b.committed_txid);
  $('batch-committed').textContent = fmtInt(b.committed);
  $('batch-committed-tuples').textContent = fmtInt(b.committed_tuples);
  const open = b.open || [];
  $('batch-open').textContent = fmtInt(open.length);
  const replays = $('batch-replays');
  replays.textContent = fmtInt(b.replays);
  replays.classList.toggle('warn', Boolean(b.replays));
  const lat = b.batch_latency_ms || {};
  $('batch-latency').textContent = `${fmtMs(lat.p50)} / ${fmtMs(lat.p99)} ms`;
  const commit = b.commit_latency_ms || {};
  $('commit-latency').textContent = `${fmtMs(commit.p50)} / ${fmtMs(commit.p99)} ms`;
  const abort = $('batch-last-abort');
  abort.hidden = !b.last_abort;
  abort.textContent = b.last_abort ? `last abort: ${b.last_abort}` : '';
  fillBatchRows($('open-attempts'), OPEN_COLUMNS, open, 'No open attempt.');
  fillBatchRows($('recent-batches'), RECENT_COLUMNS, (b.recent || []).slice().reverse(),
    'None committed in this run yet.');
}

// ---- DRPC (docs/drpc.md §6) -------------------------------------------------------------------
// Shown only when the snapshot has a `drpc` section (a topology with DRPC functions). Failed and
// timed-out requests are errors their callers got, so they are red; rejected ones (an unknown
// function, the table full) are a warning, as the batches' replays are.
function setCount(id, value, highlight) {
  const node = $(id);
  node.textContent = fmtInt(value);
  for (const name of ['bad', 'warn']) node.classList.toggle(name, name === highlight && Boolean(value));
}

function updateDrpc(snap) {
  const section = $('drpc');
  const d = snap.drpc;
  if (!d) { section.hidden = true; return; }
  section.hidden = false;
  $('drpc-url').textContent = d.url;
  const functions = d.functions || [];
  $('drpc-functions').textContent = functions.length ? functions.join(', ') : 'none';
  $('drpc-call').textContent = `${d.url}/drpc/${functions.length === 1 ? functions[0] : 'FUNCTION'}/ARGS`;
  setCount('drpc-answered', d.answered);
  setCount('drpc-failed', d.failed, 'bad');
  setCount('drpc-timed-out', d.timed_out, 'bad');
  setCount('drpc-rejected', d.rejected, 'warn');
  setCount('drpc-pending', d.pending);
  setCount('drpc-waiting', d.waiting);
  setCount('drpc-connections', d.connections);
  setCount('drpc-late', d.late);
  setCount('drpc-duplicate', d.duplicate);
  const lat = d.latency_ms || {};
  $('drpc-latency').textContent = `${fmtMs(lat.p50)} / ${fmtMs(lat.p99)} / ${fmtMs(lat.max)} ms`;
}

// ---- the component panel --------------------------------------------------------------------
function select(cid) {
  state.selected = state.selected === cid ? null : cid;
  if (state.snapshot) render(state.snapshot);
  if (state.selected) $('detail').scrollIntoView({ behavior: 'smooth', block: 'nearest' });
}

function updateDetail(snap) {
  const section = $('detail');
  const cid = state.selected;
  const comp = cid && state.topology.components.find((c) => c.id === cid);
  if (!comp) { section.hidden = true; return; }
  section.hidden = false;
  $('detail-name').textContent = cid;
  const c = snap.components[cid] || {};
  const body = $('detail-body');
  const dl = el('dl');
  const facts = [['kind', comp.kind], ['tasks', String(comp.parallelism)]];
  if (comp.in_host) {
    facts.push(['runs', `inside the host, no process: ${runsText(comp)}`]);
  } else {
    facts.push(['command', comp.command.join(' ')], ['serializer', comp.serializer]);
  }
  if (comp.builtin) facts.push(['stands for', comp.builtin]);
  for (const [stream, fields] of Object.entries(comp.outputs)) facts.push([`emits on ${stream}`, `[${fields.join(', ')}]`]);
  for (const input of comp.inputs) facts.push([`reads ${input.source}`, `stream ${input.stream}, ${input.label}`]);
  if (c.last_error) facts.push(['last error', `${c.last_error}${c.last_error_at ? ` (at ${fmtTime(c.last_error_at)})` : ''}`]);
  for (const [k, v] of facts) dl.append(el('dt', {}, k), el('dd', {}, v));
  const parts = [dl];

  const tasks = c.tasks_detail || [];
  if (tasks.length) {
    parts.push(el('h3', {}, 'Tasks'));
    const table = el('table', { id: 'tasks' });
    const head = table.createTHead().insertRow();
    const cols = [['task', 'Task'], ['pid', 'Pid'], ['state', 'State'], ['in_flight', 'In flight'],
      ['queued', 'Queued'], ['capacity', 'Capacity'], ['cpu_percent', 'CPU %'],
      ['rss_bytes', 'Memory'], ['restarts', 'Restarts']];
    if (comp.kind !== 'spout') cols.splice(5, 0, ['never_acked', 'Never acked']);
    for (const [, title] of cols) head.append(el('th', {}, title));
    const tbody = table.createTBody();
    for (const t of tasks) {
      const tr = tbody.insertRow();
      for (const [key] of cols) {
        let v = t[key];
        if (key === 'rss_bytes') v = fmtBytes(v);
        else if (key === 'cpu_percent') v = typeof v === 'number' ? v.toFixed(1) : '-';
        else if (key === 'capacity') v = typeof v === 'number' ? v.toFixed(3) : '-';
        else if (key === 'state') v = v || '-';
        else v = v === null || v === undefined ? '-' : String(v);
        tr.append(el('td', key === 'state' ? { class: 'text' } : {}, v));
      }
    }
    parts.push(table);
  }
  const metrics = c.metrics || {};
  if (Object.keys(metrics).length) {
    parts.push(el('h3', {}, 'Custom metrics'));
    parts.push(keyValues(metrics));
  }
  if (Object.keys(comp.config || {}).length) {
    parts.push(el('h3', {}, 'Component configuration'));
    parts.push(keyValues(comp.config));
  }
  body.replaceChildren(...parts);
}

function keyValues(object) {
  const table = el('table', { class: 'config' });
  for (const key of Object.keys(object).sort()) {
    const tr = el('tr');
    tr.append(el('td', {}, key), el('td', {}, JSON.stringify(object[key])));
    table.append(tr);
  }
  return table;
}

// ---- the loop -------------------------------------------------------------------------------
// Keeps the snapshots of the last few seconds; `previous` is the newest one at least
// RATE_WINDOW_S older than `snap` (or the oldest kept), so a rate never divides by ~0.
function remember(snap) {
  const now = snap.topology.uptime_s;
  state.recent.push(snap);
  while (state.recent.length > 2 && now - state.recent[1].topology.uptime_s >= RATE_WINDOW_S) {
    state.recent.shift();
  }
  const before = state.recent[0];
  state.previous = before !== snap ? before : null;
}

function render(snap, fresh = false) {
  if (fresh) updateRate(snap);
  updateSummary(snap);
  updateGraph(snap);
  updateTables(snap);
  updateDetail(snap);
  updateFailures(snap);
  updateLogs(snap);
  updateBatches(snap);
  updateDrpc(snap);
}

function setStatus(kind, text) {
  const status = $('status');
  status.className = `status ${kind}`;
  status.textContent = text;
}

async function poll() {
  try {
    const snap = await getJSON('/api/snapshot');
    const fresh = !state.snapshot || snap.topology.uptime_s !== state.snapshot.topology.uptime_s;
    state.snapshot = snap;
    if (fresh) remember(snap);
    render(snap, fresh);
    setStatus('running', `running · updated ${new Date().toLocaleTimeString('en-GB', { hour12: false })}`);
  } catch (e) {
    setStatus(state.snapshot ? 'stopped' : 'connecting',
      state.snapshot ? 'stopped (the host is no longer answering)' : 'connecting…');
  }
  setTimeout(poll, POLL_MS);
}

async function main() {
  let topology;
  for (;;) {
    try { topology = await getJSON('/api/topology'); break; } catch (e) {
      setStatus('connecting', 'connecting…');
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  state.topology = topology;
  document.title = `${topology.name} · multilang host`;
  $('topology-name').textContent = topology.name;
  $('source').textContent = topology.source ? `from ${topology.source}` : '';
  const config = $('config');
  const entries = Object.keys(topology.config || {}).sort();
  if (entries.length) config.replaceChildren(...keyValues(topology.config).children);
  else config.replaceChildren(el('tr', {}).appendChild(el('td', { class: 'dim' }, 'No settings: Storm\'s defaults.')).parentNode);
  drawGraph(topology);
  $('in-host-hint').hidden = !topology.components.some((c) => c.in_host);
  poll();
}

main();
