// The root page (root.html); app.js has the shared helpers.
"use strict";
const root = params.get("root"), limit = 50;
let offset = 0, timer = null, inRollout = false;
$("#title").textContent = root; crumbs([[root]]);
async function table() {
  try {
    const d = await api("/api/root/agents?" + q({root, offset, limit, state: $("#state").value, q: $("#q").value,
      ...(inRollout && $("#rstate").value ? {rollout: $("#rstate").value} : {})}));
    $("#page").textContent = d.total ? ` ${d.offset + 1}–${d.offset + d.agents.length} of ${d.total} ` : " none ";
    $("#fleet tbody").innerHTML = d.agents.map((a) => `<tr data-agent="${esc(a.id)}">
      <td><a href="/agent?${q({root, id: a.id})}">${esc(a.id)}</a>${a.hostname ? ` <span class="muted">${esc(a.hostname)}</span>` : ""}</td>
      <td>${Object.entries(a.labels || {}).map(([k, v]) => `<span class="badge">${esc(k)}=${esc(v)}</span>`).join(" ")}</td>
      <td class="num gen">${a.generation}</td><td class="state state-${a.state}">${a.state}${a.untrusted ? ` <span class="muted">${esc(a.untrusted)}</span>` : ""}</td>
      <td class="num">${a.behind || ""}</td><td class="ro rollout-state"${inRollout ? "" : " hidden"}>${a.rollout_state ? `<span class="ro-${a.rollout_state}">${a.rollout_state}</span>${a.selected ? ' <span class="badge sel" title="the selection selects it">selected</span>' : ""}` : ""}</td>
      <td class="error lasterror">${esc(a.last_error)}</td>
      <td>${when(a.applied_at)}</td><td>${when(a.last_seen)}</td></tr>`).join("");
  } catch (e) { fail(e); }
}
async function hist() {
  let d;
  try { d = await api("/api/root/history?" + q({root})); } catch (e) { fail(e); return; }
  $("#history tbody").innerHTML = d.history.map((h) => `<tr>
    <td class="num"><a href="/generation?${q({root, g: h.generation})}">${h.generation}</a>${h.live ? ' <span class="badge live">live</span>' : ""}</td>
    <td>${when(h.published_at)}</td><td>${esc(h.publisher)}</td><td>${esc(h.message)}${h.rollback_of ? ` <span class="muted">(rollback of ${h.rollback_of})</span>` : ""}${rolloutMark(h)}</td>
    <td class="num">${h.items}</td><td class="num">${h.bytes}</td><td class="num">${h.agents}</td></tr>`).join("");
}
function onRoot(v) {
  $("#head").innerHTML = `generation <b id="generation">${v.generation}</b> published ${when(v.published_at)} by ${esc(v.publisher)} ${v.message ? "— " + esc(v.message) : ""}<br>
    ${v.agents} agents: ${v.at_latest} at generation ${v.generation}, ${v.behind} behind, <span class="${v.failing ? "state-failing" : ""}">${v.failing} failing</span>, ${v.untrusted} untrusted, ${v.gone} gone`;
  progress($("#progress"), v);
  $("#live").textContent = v.connected ? "live" : "reconnecting: " + (v.error || "");
  $("#live").className = "badge " + (v.connected ? "live" : "off");
  // All three are served from the watched view: refreshing them costs no ZooKeeper read.
  rollout().then(table);
  hist();
}
function rolloutMark(h) {
  if (h.candidate) return ` <span class="badge cand" title="a canary rollout's candidate">candidate for ${esc(selection(h.candidate))}</span>`;
  if (h.promote_of) return ` <span class="badge promote">promote of ${h.promote_of}</span>`;
  if (h.abort_of) return ` <span class="badge abort">abort of ${h.abort_of}</span>`;
  return "";
}
function selection(s) {
  return [s.selector ? `"${s.selector}"` : "", s.percent ? s.percent + "%" : ""].filter(Boolean).join(" and ");
}
// steps draws one bar per step of the rollout: its selected agents applied, pending, failing, gone.
function stepBar(st) {
  const n = st.agents || 1, seg = (k, c) => st[k] ? `<div class="ro-bar-${k}" data-w="${100 * st[k] / n}" title="${k}: ${st[k]}">${k} ${st[k]}</div>` : "";
  return `<div class="step${st.current ? " current" : ""}${st.planned ? " planned" : ""}"><span class="steplabel">${esc(st.selection)}${st.current ? " (current)" : st.planned ? " (planned)" : ""}</span>
    <div class="bar">${st.planned ? "" : seg("applied") + seg("pending") + seg("failing") + seg("gone")}</div>
    <span class="legend">${st.planned ? `${st.agents} agents, not selected yet` : `${st.applied}/${st.agents} applied, ${st.pending} pending, ${st.failing} failing${st.gone ? `, ${st.gone} gone` : ""}`}</span></div>`;
}
function timeline(events) {
  return `<ol class="timeline">` + (events || []).map((e) => `<li class="ev-${esc(e.kind)}"><b>${esc(e.kind)}</b> ${when(e.at)}${e.selection ? " " + esc(selection(e.selection)) : ""}${e.generation ? ` → generation ${e.generation}` : ""}${e.by ? ` by ${esc(e.by)}` : ""}${e.message ? ` — ${esc(e.message)}` : ""}</li>`).join("") + `</ol>`;
}
async function rollout() {
  const el = $("#rollout");
  let d;
  try { d = await api("/api/root/rollout?" + q({root})); } catch (e) { fail(e); return; }
  const was = inRollout;
  inRollout = d.in_progress;
  $("#rstate").hidden = !inRollout;
  document.querySelectorAll("#fleet th.ro").forEach((th) => { th.hidden = !inRollout; });
  if (was && !inRollout) { $("#rstate").value = ""; }
  if (!d.rollout) {
    const l = d.last, end = l && l.events && l.events.length ? l.events[l.events.length - 1] : null;
    el.hidden = !end;
    el.className = "rollout ended";
    if (end) el.innerHTML = `<h2>Last rollout <span class="mono">${esc(l.rollout_id)}</span> <span class="badge ev-${esc(end.kind)}" id="rollout-end">${esc(end.kind === "promote" ? "promoted" : end.kind === "abort" ? "aborted" : end.kind)}</span></h2>
      <p>candidate generation ${l.candidate} over ${l.stable}${end.generation ? `, ended as generation ${end.generation}` : ""} ${when(end.at)}${end.by ? " by " + esc(end.by) : ""}</p>${timeline(l.events)}`;
    return;
  }
  const r = d.rollout;
  el.hidden = false;
  el.className = "rollout";
  el.innerHTML = `<h2>Canary rollout <span class="mono">${esc(r.rollout_id)}</span> <span class="badge cand">in progress</span></h2>
    <p>candidate generation <a id="rollout-candidate" href="/generation?${q({root, g: r.candidate_generation, against: r.stable_generation})}">${r.candidate_generation}</a>
    over stable <a href="/generation?${q({root, g: r.stable_generation})}">${r.stable_generation}</a> for <b id="rollout-selection">${esc(r.selection)}</b>,
    started by ${esc(r.publisher)} ${when(r.started_at)}${r.message ? " — " + esc(r.message) : ""}<br>
    driver <span class="badge ${r.driver === "alive" ? "live" : r.driver === "gone" ? "off" : ""}" id="rollout-driver">${r.driver === "none" ? "none (by hand)" : r.driver}</span>
    ${r.auto ? "auto promote/abort" : ""}${r.bake ? ", bake " + esc(r.bake) : ""}${r.planned_steps ? ", steps " + r.planned_steps.map((p) => p + "%").join(", ") : ""}</p>
    <div id="rollout-steps">${r.steps.map(stepBar).join("")}</div>
    <p class="legend" id="rollout-outside">outside the selection: ${r.outside.stable}/${r.outside.agents} on stable${r.outside.on_candidate ? `, ${r.outside.on_candidate} still on the candidate (selected before)` : ""}</p>
    ${timeline(r.events)}`;
  widths(el);
}
// connect follows the root's event stream. The browser reconnects by
// itself when the server ends a stream (they have a lifetime); a refused
// one (503: too many streams) it gives up on, so the page retries.
function connect() {
  const es = new EventSource("/api/root/events?" + q({root}));
  es.addEventListener("root", (e) => onRoot(JSON.parse(e.data)));
  es.onerror = () => {
    $("#live").textContent = "reconnecting"; $("#live").className = "badge off";
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 10000);
  };
}
$("#prev").onclick = () => { offset = Math.max(0, offset - limit); table(); };
$("#next").onclick = () => { offset += limit; table(); };
$("#state").onchange = () => { offset = 0; table(); };
$("#rstate").onchange = () => { offset = 0; table(); };
$("#q").oninput = () => { clearTimeout(timer); timer = setTimeout(() => { offset = 0; table(); }, 250); };
connect();
