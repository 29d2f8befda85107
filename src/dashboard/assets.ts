/**
 * The dashboard's only static files, served from /dashboard/assets/ (the CSP allows scripts, styles and images from
 * there and nowhere else; nothing is loaded from another host). Kept as strings so the bundle carries them.
 *
 * app.js is progressive: every page works without it. It adds copy buttons, confirmation of destructive forms,
 * live progress of bulk jobs (polling the job's JSON), reading a chosen CSV file into the inputs box, and the `a` / `b`
 * keys of the review queue's focused row.
 */

export const APP_CSS = `
:root { --fg:#1b1f24; --muted:#5b6570; --bg:#f6f7f9; --card:#fff; --line:#dde1e6; --accent:#2450d4; --accent-fg:#fff;
  --ok:#12703a; --err:#b42318; --warn:#8a5a00; font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; }
* { box-sizing: border-box; }
body { margin:0; color:var(--fg); background:var(--bg); line-height:1.45; display:grid;
  grid-template-columns: 220px 1fr; grid-template-rows: auto 1fr; grid-template-areas: "top top" "side main"; min-height:100vh; }
body:not(:has(nav.side)) { grid-template-areas: "top top" "main main"; }
.skip { position:absolute; left:-999px; top:0; background:var(--card); padding:8px; z-index:10; }
.skip:focus { left:8px; }
header.top { grid-area:top; display:flex; gap:6px 16px; align-items:center; justify-content:space-between; flex-wrap:wrap;
  padding:10px 20px; background:#111827; color:#fff; overflow-wrap:anywhere; }
header.top a, header.top button.link { color:#fff; }
.brand { font-weight:700; font-size:1.15rem; text-decoration:none; }
.who { display:flex; gap:6px 14px; align-items:center; flex-wrap:wrap; font-size:.92rem; }
.who form { margin:0; }
.teams a { margin-right:8px; } .teams a[aria-current] { font-weight:700; }
.role { background:#374151; border-radius:10px; padding:1px 8px; font-size:.8rem; }
nav.side { grid-area:side; padding:16px 10px; border-right:1px solid var(--line); background:var(--card); }
nav.side a { display:block; padding:8px 12px; border-radius:6px; color:var(--fg); text-decoration:none; }
nav.side a[aria-current] { background:#e8edfb; color:var(--accent); font-weight:600; }
nav.side a:hover { background:#f0f2f5; }
main { grid-area:main; padding:20px 28px 48px; max-width:1100px; width:100%; min-width:0; }
main:focus { outline:none; }
h1 { font-size:1.5rem; margin:.2em 0 .8em; } h2 { font-size:1.15rem; margin:1.6em 0 .6em; }
a { color:var(--accent); }
:focus-visible { outline:3px solid #f59e0b; outline-offset:2px; }
.card > h2:first-child, .card > p:first-child { margin-top:0; }
.card { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:16px 18px; margin:0 0 16px; }
.narrow { max-width:420px; margin:40px auto; }
form.stack label, form.stack fieldset { display:block; margin:0 0 12px; }
form.stack label > span:first-child { display:block; font-weight:600; margin-bottom:4px; font-size:.92rem; }
input[type=text], input[type=email], input[type=password], input[type=url], select, textarea { width:100%; max-width:520px;
  padding:8px 10px; border:1px solid #b9c0c8; border-radius:6px; font:inherit; background:#fff; }
textarea { min-height:120px; font-family: ui-monospace, "Liberation Mono", monospace; }
fieldset { border:1px solid var(--line); border-radius:6px; padding:8px 12px; min-width:0; }
input[type=file] { max-width:100%; }
fieldset label { display:inline-flex !important; gap:6px; margin-right:14px !important; align-items:center; }
button, .button { font:inherit; padding:8px 14px; border-radius:6px; border:1px solid var(--accent); background:var(--accent);
  color:var(--accent-fg); cursor:pointer; text-decoration:none; display:inline-block; }
button.secondary { background:#fff; color:var(--accent); }
button.danger { background:#fff; color:var(--err); border-color:var(--err); }
button.link { background:none; border:none; padding:0; text-decoration:underline; color:var(--accent); }
button:disabled { opacity:.5; cursor:not-allowed; }
.inline { display:inline; margin:0; }
.actions { display:flex; gap:8px; flex-wrap:wrap; align-items:center; }
td.actions { display:table-cell; }
.table-wrap { position:relative; container-type:inline-size; overflow-x:auto; background:var(--card); border:1px solid var(--line); border-radius:8px; margin:0 0 16px; }
table { border-collapse:collapse; width:100%; font-size:.92rem; }
th, td { text-align:left; padding:8px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
td { overflow-wrap:anywhere; }
td button, td .button { white-space:nowrap; overflow-wrap:normal; } td code { overflow-wrap:normal; }
th { background:#f3f4f6; font-weight:600; white-space:nowrap; }
tr:last-child td { border-bottom:none; }
code, .mono { font-family: ui-monospace, "Liberation Mono", monospace; font-size:.9em; }
.secret { display:flex; gap:8px; align-items:center; flex-wrap:wrap; background:#fffbea; border:1px solid #f1d37a; padding:12px; border-radius:8px; }
.secret code { word-break:break-all; }
.qr svg { width:200px; height:200px; display:block; }
.wrap { overflow-wrap:anywhere; }
.flash, .banner { padding:10px 14px; border-radius:6px; margin:0 0 16px; }
.flash.ok { background:#e7f6ec; color:var(--ok); } .flash.error { background:#fdecea; color:var(--err); }
.banner { background:#fff4e0; color:var(--warn); }
.status { padding:1px 8px; border-radius:10px; font-size:.82rem; background:#eef0f3; white-space:nowrap; }
.status.enabled, .status.completed, .status.ok { background:#e7f6ec; color:var(--ok); }
.status.disabled, .status.failed, .status.revoked, .status.error { background:#fdecea; color:var(--err); }
.status.running, .status.queued { background:#e8edfb; color:var(--accent); }
.muted { color:var(--muted); }
.stats { display:grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap:12px; margin:0 0 16px; }
.stat { background:var(--card); border:1px solid var(--line); border-radius:8px; padding:12px 14px; }
.stat b { display:block; font-size:1.4rem; }
progress { width:100%; max-width:320px; height:14px; }
pre.result { background:#0f172a; color:#e2e8f0; padding:14px; border-radius:8px; overflow:auto; max-height:520px; font-size:.85rem;
  white-space:pre-wrap; overflow-wrap:anywhere; }
.plot-row { display:flex; align-items:flex-start; margin:8px 0 0; }
.chart { container-type:inline-size; }
.chart svg { display:block; flex:none; }
.chart svg.plot { flex:1 1 auto; width:100%; min-width:0; }
.chart text { font-size:12px; fill:var(--muted); }
.chart line { stroke:var(--line); shape-rendering:crispEdges; }
.legend { display:flex; gap:14px; flex-wrap:wrap; font-size:.85rem; margin:6px 0 0; }
.legend i { display:inline-block; width:12px; height:12px; border-radius:2px; margin-right:4px; vertical-align:-1px; }
.c0 { fill:#2450d4; background:#2450d4; } .c1 { fill:#0e9f6e; background:#0e9f6e; } .c2 { fill:#d97706; background:#d97706; }
.c3 { fill:#9333ea; background:#9333ea; } .c4 { fill:#dc2626; background:#dc2626; } .c5 { fill:#0891b2; background:#0891b2; } .c6 { fill:#6b7280; background:#6b7280; }
@media (max-width: 800px) {
  body { grid-template-columns: 1fr; grid-template-areas: "top" "side" "main"; }
  body:not(:has(nav.side)) { grid-template-areas: "top" "main"; }
  nav.side { display:flex; flex-wrap:wrap; gap:4px; padding:8px; border-right:none; border-bottom:1px solid var(--line); }
  nav.side a { white-space:nowrap; padding:6px 10px; }
  main { padding:16px 14px 40px; }
  header.top { padding:10px 14px; }
  .hide-narrow { display:none; }
}
@container (max-width: 560px) {
  .wide-only { display:none; }
}
@container (max-width: 800px) {
  table.cards, table.cards tbody, table.cards tr, table.cards td { display:block; width:100%; }
  table.cards thead { position:absolute; width:1px; height:1px; overflow:hidden; clip-path:inset(50%); white-space:nowrap; }
  table.cards tr { padding:8px 12px; border-bottom:1px solid var(--line); }
  table.cards tr:last-child { border-bottom:none; }
  table.cards td { display:flow-root; border:none; padding:3px 0 3px 7rem; }
  table.cards td::before { content:attr(data-label); float:left; margin-left:-7rem; width:6.5rem; color:var(--muted); font-weight:600; font-size:.85rem; line-height:1.7; }
  table.cards td.actions { display:flex; padding:8px 0 2px; }
  table.cards td[colspan] { padding:8px 0 2px; }
  table.cards td.actions::before, table.cards td[colspan]::before { content:none; }
  table.cards td:empty { display:none; }
  table.cards td code { overflow-wrap:anywhere; }
}
`

export const APP_JS = `'use strict';
document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('[data-copy]').forEach(function (btn) {
    btn.hidden = false;
    btn.addEventListener('click', function () {
      var target = document.getElementById(btn.getAttribute('data-copy'));
      if (!target) return;
      var text = target.textContent || '';
      var done = function () { btn.textContent = 'Copied'; };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(text).then(done, function () {});
      else { var r = document.createRange(); r.selectNodeContents(target); var s = getSelection(); s.removeAllRanges(); s.addRange(r); document.execCommand('copy'); done(); }
    });
  });
  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (e) { if (!confirm(form.getAttribute('data-confirm'))) e.preventDefault(); });
  });
  document.querySelectorAll('input[type=file][data-into]').forEach(function (input) {
    input.addEventListener('change', function () {
      var f = input.files && input.files[0];
      var box = document.getElementById(input.getAttribute('data-into'));
      if (!f || !box) return;
      f.text().then(function (t) { box.value = t; });
    });
  });
  // the review queue: a or b on a focused row approves or blocks it (its form's button; the page works without this)
  document.querySelectorAll('tr[data-review][tabindex]').forEach(function (row) {
    row.addEventListener('keydown', function (e) {
      if (e.target !== row || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey) return;
      var value = e.key === 'a' ? 'approve' : e.key === 'b' ? 'block' : null;
      var button = value && row.querySelector('button[name=decision][value=' + value + ']');
      if (!button) return;
      e.preventDefault();
      if (button.form.requestSubmit) button.form.requestSubmit(button); else button.click();
    });
  });
  var poll = document.querySelector('[data-poll]');
  if (poll) {
    var url = poll.getAttribute('data-poll');
    var tick = function () {
      fetch(url, { headers: { accept: 'application/json' }, credentials: 'same-origin' }).then(function (r) { return r.ok ? r.json() : null; }).then(function (jobs) {
        if (!jobs) return;
        var busy = false;
        jobs.forEach(function (j) {
          var row = document.getElementById('job-' + j.id);
          if (!row) return;
          var st = row.querySelector('[data-field=status]'); if (st) { st.textContent = j.status; st.className = 'status ' + j.status; }
          var pr = row.querySelector('progress'); if (pr) { pr.max = Math.max(1, j.total); pr.value = j.processed; }
          var tx = row.querySelector('[data-field=progress]'); if (tx) tx.textContent = j.processed + ' / ' + j.total;
          if (j.status === 'queued' || j.status === 'running') busy = true;
          else if (row.getAttribute('data-status') !== j.status) row.setAttribute('data-status', j.status);
        });
        if (busy) setTimeout(tick, 1000); else if (poll.getAttribute('data-busy') === 'true') location.reload();
      }, function () { setTimeout(tick, 3000); });
    };
    if (poll.getAttribute('data-busy') === 'true') setTimeout(tick, 500);
  }
});
`

/** The dashboard's icon: a white tick on the accent colour (every page links it; no /favicon.ico is needed). */
export const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#2450d4"/><path d="M9 16.5l4.5 4.5L23 11.5" fill="none" stroke="#fff" stroke-width="3.5" stroke-linecap="round" stroke-linejoin="round"/></svg>
`
