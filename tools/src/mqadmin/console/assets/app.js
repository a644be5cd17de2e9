// sluice console: renders each view from the console's JSON (/api/...) and draws the live
// rate charts as SVG. No framework, no build step.
"use strict";

const view = document.getElementById("view");
const statusEl = document.getElementById("status");
let timer = null;          // the current view's refresh
let generation = 0;        // bumps on every navigation; stale refreshes stop drawing

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function fmt(n) {
  if (typeof n !== "number" || !isFinite(n)) return esc(n);
  return Math.abs(n) >= 100 || Number.isInteger(n) ? Math.round(n).toLocaleString("en-US") : n.toFixed(2);
}
function time(ms) { return ms > 0 ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : "-"; }
async function api(path, body) {
  const init = body === undefined ? {} : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, init);
  const j = await r.json().catch(() => ({ error: "HTTP " + r.status }));
  if (!r.ok && j.output === undefined) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}
function table(id, cols, rows) {
  const head = cols.map(c => `<th class="${c.num ? "num" : ""}">${esc(c.label)}</th>`).join("");
  const body = rows.map(r => "<tr>" + cols.map(c => {
    const v = c.html ? c.html(r) : (c.num ? fmt(c.get(r)) : esc(c.get(r)));
    return `<td class="${c.num ? "num" : ""}" data-col="${esc(c.key || c.label)}">${v}</td>`;
  }).join("") + "</tr>").join("");
  return `<table id="${id}"><thead><tr>${head}</tr></thead><tbody>${body || `<tr><td colspan="${cols.length}" class="muted">none</td></tr>`}</tbody></table>`;
}
function card(label, value, key) {
  return `<div class="card"><div class="label">${esc(label)}</div><div class="value" data-figure="${esc(key)}">${fmt(value)}</div></div>`;
}
function fail(e) { return `<p class="error">${esc(e.message || e)}</p>`; }
function setStatus(text) { statusEl.textContent = text; }

// ------------------------------------------------------------------ charts

// A rate series: figures sampled over time, the rate between successive samples.
class Rate {
  constructor() { this.last = null; this.points = []; }
  sample(value) {
    const now = Date.now();
    if (this.last && now > this.last.t) {
      const r = Math.max(0, (value - this.last.v) * 1000 / (now - this.last.t));
      this.points.push([now, r]);
      if (this.points.length > 120) this.points.shift();
    }
    this.last = { t: now, v: value };
  }
}
// A level series (a lag): the figure itself over time.
class Level {
  constructor() { this.points = []; }
  sample(value) { this.points.push([Date.now(), value]); if (this.points.length > 120) this.points.shift(); }
}
const COLORS = ["#1f6fbf", "#d97706", "#059669", "#9333ea", "#dc2626"];
function chart(id, title, series) {
  const W = 800, H = 170, L = 56, B = 18, T = 8;
  const all = series.flatMap(s => s.points);
  let body = "";
  if (all.length < 1) {
    body = `<text x="${W / 2}" y="${H / 2}" text-anchor="middle" fill="#718096">collecting…</text>`;
  } else {
    const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0]), t0 + 1);
    const vmax = Math.max(1, ...all.map(p => p[1]));
    const x = t => L + (W - L - 8) * (t - t0) / (t1 - t0);
    const y = v => T + (H - T - B) * (1 - v / vmax);
    body += `<line x1="${L}" y1="${y(0)}" x2="${W - 8}" y2="${y(0)}" stroke="#cbd2dc"/>`;
    body += `<line x1="${L}" y1="${y(vmax)}" x2="${W - 8}" y2="${y(vmax)}" stroke="#eef1f5"/>`;
    body += `<text x="${L - 6}" y="${y(vmax) + 4}" text-anchor="end" font-size="11" fill="#718096">${fmt(vmax)}</text>`;
    body += `<text x="${L - 6}" y="${y(0) + 4}" text-anchor="end" font-size="11" fill="#718096">0</text>`;
    body += `<text x="${W - 8}" y="${H - 4}" text-anchor="end" font-size="11" fill="#718096">${Math.round((t1 - t0) / 1000)} s</text>`;
    // Legends side by side, wrapped to a new line when the next would not fit.
    let lx = L + 6, ly = T + 12;
    series.forEach((s, i) => {
      if (!s.points.length) return;
      const d = s.points.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
      body += `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2" points="${d}"/>`;
      const last = s.points[s.points.length - 1];
      const label = `${s.name}: ${fmt(last[1])}`;
      const width = label.length * 7 + 24;
      if (lx > L + 6 && lx + width > W) { lx = L + 6; ly += 15; }
      body += `<text x="${lx}" y="${ly}" font-size="12" fill="${COLORS[i % COLORS.length]}">${esc(label)}</text>`;
      lx += width;
    });
  }
  return `<div class="chart" id="${id}"><div class="title">${esc(title)}</div><svg viewBox="0 0 ${W} ${H}">${body}</svg></div>`;
}

// ------------------------------------------------------------------ views

function every(ms, f) {
  const gen = generation;
  const run = async () => { if (gen === generation) { await f(); } };
  run();
  timer = setInterval(run, ms);
}

async function clusterView() {
  const inRate = new Rate(), outRate = new Rate();
  every(3000, async () => {
    let d;
    try { d = await api("/api/cluster"); } catch (e) { view.innerHTML = "<h1>Cluster</h1>" + fail(e); return; }
    const brokers = d.brokers;
    const masters = brokers.filter(b => b.brokerId === 0);
    inRate.sample(brokers.reduce((a, b) => a + b.putToday, 0));
    outRate.sample(brokers.reduce((a, b) => a + b.getToday, 0));
    view.innerHTML = "<h1>Cluster</h1>" +
      `<div class="cards">${card("Brokers", brokers.length, "brokers")}${card("Masters", masters.length, "masters")}` +
      `${card("In TPS (brokers)", masters.reduce((a, b) => a + b.inTps, 0), "inTps")}${card("Out TPS (brokers)", masters.reduce((a, b) => a + b.outTps, 0), "outTps")}</div>` +
      chart("chart-cluster", "Messages per second, whole cluster (from today's counts)", [{ name: "in", points: inRate.points }, { name: "out", points: outRate.points }]) +
      table("brokers", [
        { label: "Cluster", get: b => b.cluster },
        { label: "Broker", key: "brokerName", get: b => b.brokerName },
        { label: "ID", num: true, get: b => b.brokerId },
        { label: "Role", key: "role", get: b => b.role },
        { label: "Address", key: "addr", get: b => b.addr },
        { label: "Version", get: b => b.version },
        { label: "In TPS", num: true, get: b => b.inTps },
        { label: "Out TPS", num: true, get: b => b.outTps },
        { label: "Put today", key: "putToday", num: true, get: b => b.putToday },
        { label: "Got today", num: true, get: b => b.getToday },
        { label: "CommitLog min", num: true, get: b => b.minOffset },
        { label: "CommitLog max", key: "maxOffset", num: true, get: b => b.maxOffset },
        { label: "HA", key: "ha", html: b => b.brokerId === 0 ? "" : (b.behindMaster === undefined ? "-" : (b.behindMaster === 0 ? "caught up" : `${fmt(b.behindMaster)} bytes behind`)) },
        { label: "", html: b => b.error ? `<span class="error">${esc(b.error)}</span>` : "" },
      ], brokers);
    setStatus("updated " + new Date().toLocaleTimeString());
  });
}

async function clustersOptions() {
  try {
    const d = await api("/api/cluster");
    return [...new Set(d.brokers.map(b => b.cluster))].map(c => `<option>${esc(c)}</option>`).join("");
  } catch (e) { return ""; }
}
const credFields = `<label>Access key (if the cluster checks)<input name="accessKey" autocomplete="off"></label><label>Secret key<input name="secretKey" type="password" autocomplete="off"></label>`;
function formData(form) {
  const o = {};
  new FormData(form).forEach((v, k) => { if (v !== "") o[k] = /^(readQueueNums|writeQueueNums|perm)$/.test(k) ? Number(v) : v; });
  return o;
}
async function act(path, body, out) {
  out.innerHTML = "<p class=muted>working…</p>";
  try {
    const r = await api(path, body);
    out.innerHTML = `<pre class="${r.ok ? "ok" : "error"}" id="action-output">${esc(r.output || r.error || "")}</pre>`;
    return r.ok;
  } catch (e) { out.innerHTML = fail(e); return false; }
}

async function topicsView() {
  let d;
  try { d = await api("/api/topics"); } catch (e) { view.innerHTML = "<h1>Topics</h1>" + fail(e); return; }
  const clusters = await clustersOptions();
  // Each normal topic's sum of max offsets, polled; its in-rate from successive polls.
  const offsets = {}, rates = {};
  const inRate = t => { const p = rates[t.topic]?.points; return p?.length ? p[p.length - 1][1] : undefined; };
  const render = (filter, system) => table("topics", [
    { label: "Topic", key: "topic", html: t => `<a href="#/topic/${encodeURIComponent(t.topic)}">${esc(t.topic)}</a>` },
    { label: "Kind", html: t => `<span class="tag">${esc(t.kind)}</span>` },
    { label: "Messages (sum of max offsets)", key: "messages", num: true, get: t => offsets[t.topic] ?? "" },
    { label: "In msg/s", key: "inRate", num: true, get: t => inRate(t) ?? "" },
  ], d.topics.filter(t => t.topic.toLowerCase().includes(filter.toLowerCase()) && (system || t.kind === "normal")));
  view.innerHTML = "<h1>Topics</h1>" +
    `<form id="create-topic"><label>Topic<input name="topic" required></label><label>Cluster<select name="cluster">${clusters}</select></label>` +
    `<label>Read queues<input name="readQueueNums" type="number" value="8" min="1"></label><label>Write queues<input name="writeQueueNums" type="number" value="8" min="1"></label>` +
    `<label>Perm<select name="perm"><option value="6">RW (6)</option><option value="4">R (4)</option><option value="2">W (2)</option></select></label>${credFields}<button>Create / update</button></form><div id="create-result"></div>` +
    `<div class="filter"><input id="topic-filter" placeholder="filter"> <label><input type="checkbox" id="show-system"> system, retry and DLQ topics</label></div><div id="topic-table">${render("", false)}</div>`;
  const refilter = () => { document.getElementById("topic-table").innerHTML = render(document.getElementById("topic-filter").value, document.getElementById("show-system").checked); };
  document.getElementById("topic-filter").oninput = refilter;
  document.getElementById("show-system").onchange = refilter;
  every(5000, async () => {
    let o;
    try { o = await api("/api/topics/offsets"); } catch (e) { setStatus("offsets: " + (e.message || e)); return; }
    for (const [topic, total] of Object.entries(o.offsets)) {
      offsets[topic] = total;
      (rates[topic] ??= new Rate()).sample(total);
    }
    refilter();
    setStatus("updated " + new Date().toLocaleTimeString());
  });
  document.getElementById("create-topic").onsubmit = async ev => {
    ev.preventDefault();
    if (await act("/api/topic/update", formData(ev.target), document.getElementById("create-result"))) {
      d = await api("/api/topics"); refilter();
    }
  };
}

async function topicView(name) {
  const rate = new Rate(), outRates = {};
  const clusters = await clustersOptions();
  let drawn = false;
  every(3000, async () => {
    let d;
    try { d = await api("/api/topic?topic=" + encodeURIComponent(name)); } catch (e) { view.innerHTML = `<h1>Topic ${esc(name)}</h1>` + fail(e); return; }
    rate.sample(d.totalMaxOffset);
    for (const [group, consumed] of Object.entries(d.consumed)) (outRates[group] ??= new Rate()).sample(consumed);
    const last = r => r.points.length ? r.points[r.points.length - 1][1] : 0;
    const outTotal = Object.values(outRates).reduce((a, r) => a + last(r), 0);
    const queues = table("queues", [
      { label: "Broker", get: q => q.brokerName },
      { label: "Queue", key: "queueId", num: true, get: q => q.queueId },
      { label: "Min offset", key: "minOffset", num: true, get: q => q.minOffset },
      { label: "Max offset", key: "maxOffset", num: true, get: q => q.maxOffset },
      { label: "Last updated", get: q => time(q.lastUpdated) },
    ], d.queues);
    const top = `<div class="cards">${card("Queues", d.queues.length, "queues")}${card("Messages (sum of max offsets)", d.totalMaxOffset, "totalMaxOffset")}${card("In msg/s", last(rate), "inRate")}${card("Out msg/s (all groups)", outTotal, "outRate")}</div>` +
      chart("chart-topic", "Messages per second: in, and out to each group", [{ name: "in", points: rate.points },
        ...Object.entries(outRates).map(([g, r]) => ({ name: "out " + g, points: r.points }))]);
    const groups = d.groups.length ? d.groups.map(g => `<a href="#/group/${encodeURIComponent(g)}">${esc(g)}</a>`).join(", ") : "<span class=muted>none</span>";
    if (!drawn) {
      view.innerHTML = `<h1>Topic ${esc(name)}</h1><div id="topic-live"></div><h2>Consumed by</h2><p id="topic-groups"></p><h2>Queues</h2><div id="topic-queues"></div>` +
        `<h2>Routes</h2>` + table("routes", [{ label: "Broker", get: b => b.brokerName }, { label: "Read queues", num: true, get: b => b.readQueueNums }, { label: "Write queues", num: true, get: b => b.writeQueueNums }, { label: "Perm", num: true, get: b => b.perm }], d.brokers) +
        `<h2>Delete</h2><form id="delete-topic"><input type="hidden" name="topic" value="${esc(name)}"><label>Cluster<select name="cluster">${clusters}</select></label>${credFields}<button class="danger">Delete topic</button></form><div id="delete-result"></div>`;
      document.getElementById("delete-topic").onsubmit = async ev => {
        ev.preventDefault();
        if (confirm(`Delete topic ${name}?`)) await act("/api/topic/delete", formData(ev.target), document.getElementById("delete-result"));
      };
      drawn = true;
    }
    document.getElementById("topic-live").innerHTML = top;
    document.getElementById("topic-groups").innerHTML = groups;
    document.getElementById("topic-queues").innerHTML = queues;
    setStatus("updated " + new Date().toLocaleTimeString());
  });
}

async function groupsView() {
  let d;
  try { d = await api("/api/groups"); } catch (e) { view.innerHTML = "<h1>Consumer groups</h1>" + fail(e); return; }
  const render = (filter, system) => table("groups", [
    { label: "Group", key: "group", html: g => `<a href="#/group/${encodeURIComponent(g.group)}">${esc(g.group)}</a>` },
  ], d.groups.filter(g => g.group.toLowerCase().includes(filter.toLowerCase()) && (system || !g.system)));
  view.innerHTML = "<h1>Consumer groups</h1>" +
    `<div class="filter"><input id="group-filter" placeholder="filter"> <label><input type="checkbox" id="show-system"> system groups</label></div><div id="group-table">${render("", false)}</div>`;
  const refilter = () => { document.getElementById("group-table").innerHTML = render(document.getElementById("group-filter").value, document.getElementById("show-system").checked); };
  document.getElementById("group-filter").oninput = refilter;
  document.getElementById("show-system").onchange = refilter;
}

async function groupView(name) {
  const lag = new Level(), rate = new Rate();
  let drawn = false;
  every(3000, async () => {
    let d;
    try { d = await api("/api/group?group=" + encodeURIComponent(name)); } catch (e) { view.innerHTML = `<h1>Consumer group ${esc(name)}</h1>` + fail(e); return; }
    lag.sample(d.diffTotal);
    rate.sample(d.queues.reduce((a, q) => a + q.consumerOffset, 0));
    const topics = [...new Set(d.queues.map(q => q.topic))].sort((a, b) => a.startsWith("%") - b.startsWith("%") || a.localeCompare(b));
    if (!drawn) {
      view.innerHTML = `<h1>Consumer group ${esc(name)}</h1><div id="group-live"></div><h2>Clients</h2><div id="group-clients"></div><h2>Queues</h2><div id="group-queues"></div>` +
        `<h2>Reset offsets</h2><form id="reset-offset"><input type="hidden" name="group" value="${esc(name)}"><label>Topic<select name="topic">${topics.map(t => `<option>${esc(t)}</option>`).join("")}</select></label>` +
        `<label>To time (now, epoch ms or yyyy-MM-dd#HH:mm:ss:SSS)<input name="timestamp" value="now" required></label>${credFields}<button>Reset</button></form><div id="reset-result"></div>`;
      document.getElementById("reset-offset").onsubmit = async ev => { ev.preventDefault(); await act("/api/group/reset", formData(ev.target), document.getElementById("reset-result")); };
      drawn = true;
    }
    document.getElementById("group-live").innerHTML =
      `<div class="cards">${card("Lag (diff total)", d.diffTotal, "diffTotal")}${card("Consume TPS", d.consumeTps, "consumeTps")}${card("Clients", d.clients.length, "clients")}</div>` +
      chart("chart-group", "Lag and consumption", [{ name: "lag (messages)", points: lag.points }, { name: "consumed msg/s", points: rate.points }]);
    document.getElementById("group-clients").innerHTML = (d.connectionError ? `<p class="muted">${esc(d.connectionError)}</p>` : "") + table("clients", [
      { label: "Client id", get: c => c.clientId }, { label: "Address", get: c => c.clientAddr }, { label: "Language", get: c => c.language }, { label: "Version", get: c => c.version },
    ], d.clients);
    document.getElementById("group-queues").innerHTML = table("progress", [
      { label: "Topic", get: q => q.topic }, { label: "Broker", get: q => q.brokerName }, { label: "Queue", num: true, get: q => q.queueId },
      { label: "Broker offset", num: true, get: q => q.brokerOffset }, { label: "Consumer offset", num: true, get: q => q.consumerOffset },
      { label: "Diff", key: "diff", num: true, get: q => q.diff }, { label: "Last consumed", get: q => time(q.lastTimestamp) },
    ], d.queues);
    setStatus("updated " + new Date().toLocaleTimeString());
  });
}

function messageDetail(m) {
  const props = Object.entries(m.properties).map(([k, v]) => ({ k, v }));
  return `<h2>Message ${esc(m.msgId)}</h2>` + table("message-fields", [{ label: "Field", get: r => r[0] }, { label: "Value", get: r => r[1] }], [
    ["Topic", m.topic], ["Message id", m.msgId], ["Offset message id", m.offsetMsgId], ["Tags", m.tags ?? ""], ["Keys", m.keys ?? ""],
    ["Queue", m.queueId], ["Queue offset", m.queueOffset], ["CommitLog offset", m.commitLogOffset], ["Born", time(m.bornTimestamp) + " from " + m.bornHost],
    ["Stored", time(m.storeTimestamp) + " on " + m.storeHost], ["Reconsume times", m.reconsumeTimes], ["Body bytes", m.bodyLength],
  ]) + "<h2>Body</h2>" + `<pre id="msg-body">${esc(m.body)}</pre>` + "<h2>Properties</h2>" + table("msg-properties", [{ label: "Key", get: p => p.k }, { label: "Value", get: p => p.v }], props) +
    `<h2>Resend to a consumer</h2><form id="resend"><input type="hidden" name="id" value="${esc(m.msgId)}"><input type="hidden" name="topic" value="${esc(m.topic)}">` +
    `<label>Consumer group<input name="group" required></label><button type="button" id="load-clients">Load its clients</button>` +
    `<label>Client<select name="clientId" required></select></label>${credFields}<button>Resend</button></form><div id="resend-result"></div>`;
}

// The resend form of a message shown: the group's online clients to pick from.
function wireResend() {
  const form = document.getElementById("resend");
  if (!form) return;
  document.getElementById("load-clients").onclick = async () => {
    const select = form.querySelector("select[name=clientId]");
    try {
      const d = await api("/api/group?group=" + encodeURIComponent(form.querySelector("input[name=group]").value));
      select.innerHTML = d.clients.map(c => `<option>${esc(c.clientId)}</option>`).join("");
      if (!d.clients.length) document.getElementById("resend-result").innerHTML = fail(new Error(d.connectionError || "no client online"));
    } catch (e) { document.getElementById("resend-result").innerHTML = fail(e); }
  };
  form.onsubmit = async ev => { ev.preventDefault(); await act("/api/message/resend", formData(ev.target), document.getElementById("resend-result")); };
}

async function messagesView() {
  view.innerHTML = "<h1>Messages</h1>" +
    `<form id="by-id"><label>Message id<input name="id" size="36" required></label><label>Topic (for a producer's id)<input name="topic"></label><button>Find by id</button></form>` +
    `<form id="by-key"><label>Topic<input name="topic" required></label><label>Key<input name="key" required></label><button>Find by key</button></form>` +
    `<form id="by-offset"><label>Topic<input name="topic" required></label><label>Broker<input name="broker" required></label><label>Queue<input name="queue" type="number" value="0"></label><label>Offset<input name="offset" type="number" value="0"></label><button>Find by offset</button></form>` +
    `<form id="by-time"><label>Topic<input name="topic" required></label><label>From<input name="from" type="datetime-local" step="1" required></label><label>To<input name="to" type="datetime-local" step="1"></label><button>Find by time</button></form>` +
    `<div id="message-result"></div>`;
  const out = document.getElementById("message-result");
  const find = async params => {
    out.innerHTML = "<p class=muted>searching…</p>";
    try {
      const d = await api("/api/message?" + new URLSearchParams(params));
      if (d.messages.length === 1 && !params.begin) { out.innerHTML = messageDetail(d.messages[0]); wireResend(); return; }
      out.innerHTML = `<h2>${d.messages.length} messages</h2>` + table("messages", [
        { label: "Message id", html: m => `<a href="#" data-id="${esc(m.msgId)}" data-topic="${esc(m.topic)}">${esc(m.msgId)}</a>` },
        { label: "Queue", num: true, get: m => m.queueId }, { label: "Offset", num: true, get: m => m.queueOffset }, { label: "Stored", get: m => time(m.storeTimestamp) },
      ], d.messages);
      out.querySelectorAll("a[data-id]").forEach(a => a.onclick = ev => { ev.preventDefault(); find({ id: a.dataset.id, topic: a.dataset.topic }); });
    } catch (e) { out.innerHTML = fail(e); }
  };
  for (const id of ["by-id", "by-key", "by-offset"]) {
    document.getElementById(id).onsubmit = ev => { ev.preventDefault(); find(formData(ev.target)); };
  }
  document.getElementById("by-time").onsubmit = ev => {
    ev.preventDefault();
    const f = formData(ev.target);
    const params = { topic: f.topic, begin: new Date(f.from).getTime() };
    if (f.to) params.end = new Date(f.to).getTime();
    find(params);
  };
}

// ------------------------------------------------------------------ routing

function route() {
  generation += 1;
  if (timer) { clearInterval(timer); timer = null; }
  const parts = (location.hash || "#/cluster").slice(2).split("/");
  const name = decodeURIComponent(parts.slice(1).join("/"));
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("active", a.dataset.view === parts[0] || a.dataset.view === parts[0] + "s"));
  view.innerHTML = "<p class=muted>Loading…</p>";
  switch (parts[0]) {
    case "topics": return topicsView();
    case "topic": return topicView(name);
    case "groups": return groupsView();
    case "group": return groupView(name);
    case "messages": return messagesView();
    default: return clusterView();
  }
}
window.addEventListener("hashchange", route);
route();
