// Shared helpers of the dashboard pages: no dependencies, no build step.
"use strict";
const $ = (s) => document.querySelector(s);
const params = new URLSearchParams(location.search);
function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
async function api(path) {
  const r = await fetch(path, {headers: {Accept: "application/json"}});
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function q(obj) { return new URLSearchParams(obj).toString(); }
function when(t) {
  if (!t || t.startsWith("0001")) return "";
  const d = new Date(t), s = Math.round((Date.now() - d) / 1000);
  const ago = s < 60 ? s + "s" : s < 3600 ? Math.round(s / 60) + "m" : s < 86400 ? Math.round(s / 3600) + "h" : Math.round(s / 86400) + "d";
  return `<span title="${esc(d.toISOString())}">${ago} ago</span>`;
}
function crumbs(parts) {
  $("header .crumbs").innerHTML = parts.map(([t, h]) => h ? ` / <a href="${h}">${esc(t)}</a>` : ` / ${esc(t)}`).join("");
}
// fail shows e above the page: one message, the newest (a page that
// re-reads every 5 s must not stack the same error).
function fail(e) {
  let p = $("#page-error");
  if (!p) {
    $("main").insertAdjacentHTML("afterbegin", '<p class="error" id="page-error"></p>');
    p = $("#page-error");
  }
  p.textContent = e.message;
}
// ok removes the message fail showed, after a read that worked.
function ok() {
  const p = $("#page-error");
  if (p) p.remove();
}
// loaded counts the page's completed reads in <body data-loads>: the
// browser test waits for it instead of for time.
function loaded() {
  document.body.dataset.loads = String(Number(document.body.dataset.loads || 0) + 1);
}
// widths sets the width of every element below el that has data-w (a
// percentage): the Content-Security-Policy allows no inline style
// attribute, but styles set through the DOM are the page's own.
function widths(el) {
  el.querySelectorAll("[data-w]").forEach((d) => { d.style.width = d.dataset.w + "%"; });
}
// progress draws one bar per root: a segment per generation the agents report.
function progress(el, view) {
  const total = view.agents || 1;
  el.innerHTML = `<div class="bar">` + view.spread.map((s, i) =>
    `<div class="p${Math.min(i, 5)}" data-w="${100 * s.agents / total}" title="generation ${s.generation}: ${s.agents}">g${s.generation}: ${s.agents}</div>`).join("") +
    `</div><div class="legend">` + view.spread.map((s) =>
    `<span>generation ${s.generation}: ${s.agents}/${view.agents} (${Math.round(100 * s.agents / total)}%)</span>`).join("") + `</div>`;
  widths(el);
}
// highlight colours JSON/YAML/TOML lines: keys, strings, numbers, comments.
function highlight(name, text) {
  const t = esc(text);
  if (!/\.(json|ya?ml|toml)$/i.test(name)) return t;
  if (/^\s*#/.test(text)) return `<span class="c">${t}</span>`;
  return t
    .replace(/^(\s*(?:-\s+)?)(&quot;[^&]*?&quot;|[\w.\-\[\]]+)(\s*[:=])/, '$1<span class="k">$2</span>$3')
    .replace(/([:=,\[]\s*)(&quot;.*?&quot;)/g, '$1<span class="s">$2</span>')
    .replace(/([:=,\[]\s*)(-?\d+(?:\.\d+)?|true|false|null)(?=\s*[,\]}]?\s*$)/g, '$1<span class="n">$2</span>');
}
