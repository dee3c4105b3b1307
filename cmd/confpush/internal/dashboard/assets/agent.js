// The agent page (agent.html); app.js has the shared helpers.
"use strict";
const root = params.get("root"), id = params.get("id");
$("#title").textContent = id;
crumbs([[root, "/root?" + q({root})], [id]]);
async function load() {
  try {
    const d = await api("/api/agent?" + q({root, id}));
    const r = d.row;
    $("#summary").innerHTML = [["state", `<span class="state-${r.state}">${r.state}</span>`], ["generation", r.generation],
      ["behind", r.behind], ["last error", `<span class="error">${esc(r.last_error)}</span>`], ["hostname", esc(r.hostname)],
      ["labels", Object.entries(r.labels || {}).map(([k, v]) => `<span class="badge">${esc(k)}=${esc(v)}</span>`).join(" ")],
      ["applied", when(r.applied_at)], ["last seen", when(r.last_seen)], ["untrusted", esc(r.untrusted)],
      ...(r.rollout_state ? [["rollout", `<span class="ro-${r.rollout_state}">${r.rollout_state}</span>${r.selected ? " (selected)" : " (not selected)"}`]] : [])]
      .map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("");
    $("#targets tbody").innerHTML = (d.targets || []).map((t) => `<tr><td>${esc(t.name)}</td><td>${esc(t.type)}</td><td class="mono">${esc(t.dest)}</td>
      <td class="num">${t.generation}</td><td class="${t.ok ? "state-ok" : "state-failing"}">${t.ok ? "ok" : "failing"}</td>
      <td class="error">${esc(t.last_error)}</td><td class="num">${t.reloads}</td><td>${when(t.updated_at)}</td></tr>`).join("");
    // "applied" is null from a server before this page's: an agent never seen applying.
    $("#applied").innerHTML = (d.applied || []).map((a) => `<li><a href="/generation?${q({root, g: a.generation})}">generation ${a.generation}</a> ${when(a.applied_at)}</li>`).join("");
    $("#status").textContent = d.status ? JSON.stringify(d.status, null, 2) : "(no trusted status node)";
    ok();
    loaded();
  } catch (e) { fail(e); }
}
load(); setInterval(load, 5000);
