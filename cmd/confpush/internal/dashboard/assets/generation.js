// The generation page (generation.html); app.js has the shared helpers.
"use strict";
const root = params.get("root"), g = Number(params.get("g"));
let diffData = null;
$("#title").textContent = `${root} generation ${g}`;
crumbs([[root, "/root?" + q({root})], ["generation " + g]]);
async function load() {
  try {
    const d = await api("/api/generation?" + q({root, g}));
    const m = d.manifest;
    $("#manifest").innerHTML = [["generation", m.generation + (d.live ? ' <span class="badge live">live</span>' : "")],
      ["published at", esc(m.published_at)], ["publisher", esc(m.publisher)], ["message", esc(m.message)],
      ["publish id", `<span class="mono">${esc(m.publish_id)}</span>`], ["mode", esc(m.mode)],
      ["rollback of", m.rollback_of || ""], ["incarnation", `<span class="mono">${esc(m.incarnation)}</span>`]]
      .map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join("");
    $("#items tbody").innerHTML = itemRows(d.items);
    $("#appliedcount").textContent = `(${d.applied_count} agent${d.applied_count === 1 ? "" : "s"} report${d.applied_count === 1 ? "s" : ""} it now)`;
    $("#applied").innerHTML = d.applied_by.map((id) => `<a href="/agent?${q({root, id})}">${esc(id)}</a>`).join(", ") || '<span class="muted">no agent reports this generation now</span>';
    const others = d.generations.filter((x) => x !== g);
    const def = params.get("against") ? Number(params.get("against")) : (others.find((x) => x < g) ?? others[0]);
    $("#against").innerHTML = others.map((x) => `<option ${x === def ? "selected" : ""}>${x}</option>`).join("");
    if (others.length) diff(); else $("#diff").innerHTML = '<p class="muted">no other retained generation</p>';
  } catch (e) { fail(e); }
}
// itemRows lists the items (sorted by path: a directory's items are
// together) indented by directory: a row for each directory when its first
// item comes, then each item by its name in it, its path as the title
// (styles are the stylesheet's: the page's policy allows no inline style).
function itemRows(items) {
  let prev = [];
  return items.map((i) => {
    const parts = i.name.split("/"), dirs = parts.slice(0, -1);
    let same = 0;
    while (same < dirs.length && same < prev.length && dirs[same] === prev[same]) same++;
    const heads = dirs.slice(same).map((d, k) =>
      `<tr class="dir"><td class="muted lvl${same + k}">${esc(d)}/</td><td></td><td></td></tr>`);
    prev = dirs;
    return heads.join("") + `<tr><td class="lvl${dirs.length}" title="${esc(i.name)}">${esc(parts[parts.length - 1])}</td>` +
      `<td class="num">${i.size}</td><td class="mono">${esc(i.sha256)}</td></tr>`;
  }).join("");
}
async function diff() {
  const from = Number($("#against").value);
  try { diffData = await api("/api/diff?" + q({root, from, to: g})); } catch (e) { fail(e); return; }
  render();
}
function render() {
  const split = document.querySelector("input[name=mode]:checked").value === "split";
  const d = diffData;
  $("#diff").innerHTML = `<p class="muted">from generation ${d.from} to ${d.to}${d.show_content ? "" : "; contents hidden (start the server with --show-content to see lines)"}</p>` +
    d.items.filter((i) => i.change !== "same").map((i) => `<div class="diff" data-item="${esc(i.name)}">
    <div class="d-hunk"><b>${esc(i.name)}</b> ${i.change}: ${i.old_size} → ${i.new_size} bytes,
    <span class="count">+${i.lines_added} −${i.lines_removed} lines</span>${i.binary ? " (binary)" : ""}
    <span class="mono muted">${esc((i.old_sha256 || "").slice(0, 12))} → ${esc((i.new_sha256 || "").slice(0, 12))}</span></div>
    ${(i.hunks || []).map((h) => hunk(i.name, h, split)).join("")}</div>`).join("") ||
    '<p class="muted">no item differs</p>';
}
function hunk(name, lines, split) {
  const cls = {"+": "d-add", "-": "d-del", " ": ""};
  if (!split) {
    return `<table>${lines.map((l) => `<tr class="${cls[l.op]}"><td class="ln">${l.old || ""}</td><td class="ln">${l.new || ""}</td><td>${esc(l.op)} ${highlight(name, l.text)}</td></tr>`).join("")}</table>`;
  }
  // Side by side: kept lines on both sides; a run of removals beside the run of additions that follows it.
  const rows = [];
  for (let i = 0; i < lines.length;) {
    if (lines[i].op === " ") { rows.push([lines[i], lines[i]]); i++; continue; }
    const del = [], add = [];
    while (i < lines.length && lines[i].op === "-") del.push(lines[i++]);
    while (i < lines.length && lines[i].op === "+") add.push(lines[i++]);
    for (let k = 0; k < Math.max(del.length, add.length); k++) rows.push([del[k], add[k]]);
  }
  const cell = (l, side) => l ? `<td class="ln">${side === "a" ? l.old : l.new}</td><td class="${l.op === " " ? "" : cls[l.op]}">${highlight(name, l.text)}</td>` : `<td class="ln"></td><td></td>`;
  return `<table class="split">${rows.map(([a, b]) => `<tr>${cell(a, "a")}${cell(b, "b")}</tr>`).join("")}</table>`;
}
$("#against").onchange = diff;
document.querySelectorAll("input[name=mode]").forEach((r) => r.onchange = render);
load();
