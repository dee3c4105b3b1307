// The roots page (roots.html); app.js has the shared helpers.
"use strict";
async function load() {
  try {
    const d = await api("/api/roots");
    $("#meta").textContent = `metadata under ${d.meta}; item contents ${d.show_content ? "shown" : "hidden (--show-content to show)"}`;
    $("#roots tbody").innerHTML = d.roots.map((r) => `<tr>
      <td><a href="/root?${q({root: r.root})}">${esc(r.root)}</a></td><td class="num">${r.generation}${r.candidate_generation ? ` <a class="badge cand" href="/root?${q({root: r.root})}" title="a canary rollout is in progress">canary ${r.candidate_generation}</a>` : ""}</td>
      <td>${when(r.published_at)}</td><td>${esc(r.publisher)}</td><td>${esc(r.message)}</td>
      <td class="num">${r.agents}</td><td class="num">${r.behind}</td><td class="num ${r.failing ? "state-failing" : ""}">${r.failing}</td>
      <td><span class="badge ${r.connected ? "live" : "off"}">${r.connected ? "live" : "reconnecting"}</span></td></tr>`).join("") ||
      `<tr><td colspan="9" class="muted">no roots yet</td></tr>`;
    ok();
    loaded();
  } catch (e) { fail(e); }
}
load(); setInterval(load, 5000);
