/**
 * The dashboard's stylesheet and script, served by the dashboard itself from `<path>/assets/`
 * (nothing is fetched from elsewhere, and the Content-Security-Policy allows only these).
 */
export const DASHBOARD_CSS = `
:root { color-scheme: light; --fg: #1d2330; --muted: #5b6474; --line: #d9dde5; --bg: #f6f7f9; --panel: #fff; --accent: #1f5fbf; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, summary:focus-visible { outline: 3px solid #f0a400; outline-offset: 1px; }
.skip { position: absolute; left: -999px; top: 0; background: #fff; padding: 6px 10px; }
.skip:focus { left: 8px; z-index: 10; }
header.top { display: flex; gap: 24px; align-items: baseline; padding: 10px 24px; background: #1d2330; color: #fff; }
header.top a { color: #fff; text-decoration: none; font-weight: 600; }
header.top nav ul { display: flex; gap: 16px; list-style: none; margin: 0; padding: 0; }
header.top .mode { margin-left: auto; font-size: 12px; color: #c9cfdb; }
main { padding: 16px 24px 40px; max-width: 1400px; }
.panel > h2:first-child { margin-top: 0; }
h1 { font-size: 20px; margin: 4px 0 12px; word-break: break-all; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; }
form.filters { display: grid; grid-template-columns: repeat(auto-fill, minmax(170px, 1fr)); gap: 10px 14px; align-items: end; }
form.filters fieldset { grid-column: 1 / -1; border: 0; padding: 0; margin: 0; display: flex; flex-wrap: wrap; gap: 4px 14px; }
form.filters legend { font-weight: 600; margin-bottom: 4px; }
label { display: block; font-weight: 600; font-size: 12px; color: var(--muted); }
fieldset label { display: inline; font-weight: 400; font-size: 14px; color: var(--fg); }
input, select, textarea { font: inherit; padding: 5px 7px; border: 1px solid #b7bdc9; border-radius: 4px; width: 100%; background: #fff; }
input[type=checkbox] { width: auto; }
textarea { font-family: ui-monospace, Menlo, Consolas, monospace; min-height: 70px; }
button { font: inherit; padding: 6px 12px; border-radius: 4px; border: 1px solid #1f5fbf; background: #1f5fbf; color: #fff; cursor: pointer; }
button.danger { background: #b3261e; border-color: #b3261e; }
button.secondary { background: #fff; color: #1f5fbf; }
.actions-row { display: flex; gap: 8px; align-items: end; }
form.inline { display: inline; margin: 0; }
button.small { font-size: 0.85em; padding: 2px 8px; }
table { border-collapse: collapse; width: 100%; background: var(--panel); border: 1px solid var(--line); }
caption { text-align: left; padding: 6px 0; color: var(--muted); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #eef0f4; font-size: 12px; text-transform: uppercase; letter-spacing: .03em; color: #3b4352; }
td.id { font-family: ui-monospace, Menlo, Consolas, monospace; word-break: break-all; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; border: 1px solid transparent; white-space: nowrap; }
.status-pending, .status-waiting { background: #eef0f4; color: #3b4352; border-color: #cfd4dd; }
.status-running { background: #e3edfc; color: #174ea6; border-color: #a8c4f0; }
.status-suspended { background: #f3ecfb; color: #5b2a9a; border-color: #d4c0ef; }
.status-paused { background: #fdf0e6; color: #8a3b00; border-color: #f0c29c; }
.status-compensating { background: #fff4dc; color: #7a4d00; border-color: #f0d08a; }
.status-completed { background: #e4f4e8; color: #1e6b34; border-color: #a9d9b6; }
.status-failed, .status-compensation_failed { background: #fde7e5; color: #9a1c14; border-color: #f2b3ad; }
.status-cancelled { background: #f1f1f1; color: #555; border-color: #ccc; }
.pager { display: flex; gap: 16px; margin: 12px 0; }
.notice { padding: 8px 12px; border-radius: 4px; margin: 0 0 12px; border: 1px solid; }
.notice.ok { background: #e4f4e8; border-color: #a9d9b6; }
.notice.error { background: #fde7e5; border-color: #f2b3ad; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; word-break: break-all; }
pre { margin: 0; padding: 8px 10px; background: #f3f4f7; border: 1px solid var(--line); border-radius: 4px; overflow: auto; max-height: 320px; font: 12px/1.45 ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-word; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 14px; }
ol.timeline { list-style: none; margin: 0; padding: 0 0 0 18px; border-left: 2px solid var(--line); }
ol.timeline > li { position: relative; margin: 0 0 10px; padding: 8px 12px; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
ol.timeline > li::before { content: ""; position: absolute; left: -25px; top: 13px; width: 10px; height: 10px; border-radius: 50%; background: #8a93a3; border: 2px solid var(--bg); }
ol.timeline > li.state-completed::before { background: #2e8b47; }
ol.timeline > li.state-failed::before { background: #c0392b; }
ol.timeline > li.state-waiting::before { background: #7b4fc4; }
ol.timeline > li.engine { opacity: .8; }
.entry-head { display: flex; flex-wrap: wrap; gap: 8px; align-items: baseline; }
.kind { font-size: 11px; text-transform: uppercase; letter-spacing: .05em; color: var(--muted); min-width: 88px; }
.entry-name { font-weight: 600; font-family: ui-monospace, Menlo, Consolas, monospace; }
.meta { color: var(--muted); font-size: 12px; }
details > summary { cursor: pointer; color: var(--accent); font-size: 12px; margin-top: 4px; }
.muted { color: var(--muted); }
.live-status { font-size: 12px; color: var(--muted); margin: 0 0 8px; }
.forms { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 14px; }
.forms form { display: grid; gap: 8px; align-content: start; }
.forms h3 { margin: 0; font-size: 14px; }
`;

/**
 * Live updates: the page's `[data-live]` region listens to the dashboard's server-sent events and,
 * when something changed, fetches the page again and swaps that region in; the action forms
 * (`[data-live-forms]`) follow only while nobody is typing in them, so nothing typed is lost. The
 * server tells of other processes' work too (`DashboardChanges`); a ping every few seconds
 * refreshes an unfinished instance as a safety net.
 */
export const DASHBOARD_JS = `(function () {
  'use strict';
  var region = document.querySelector('[data-live]');
  if (!region || typeof EventSource === 'undefined') return;
  var status = document.getElementById('live-status');
  var pending = null;
  var dirty = false;
  document.addEventListener('input', function (event) {
    if (event.target && event.target.closest && event.target.closest('[data-live-forms]')) dirty = true;
  });
  var busy = false;
  function say(text) { if (status) status.textContent = text; }
  function refresh() {
    pending = null;
    if (busy) { schedule(300); return; }
    busy = true;
    fetch(window.location.href, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (text) {
        if (text === null) return;
        var next = new DOMParser().parseFromString(text, 'text/html').querySelector('[data-live]');
        if (!next) return;
        region.innerHTML = next.innerHTML;
        region.setAttribute('data-state', next.getAttribute('data-state') || '');
        // The action forms follow too, unless someone is filling one in.
        var forms = document.querySelector('[data-live-forms]');
        var nextForms = next.ownerDocument.querySelector('[data-live-forms]');
        if (forms && nextForms && !dirty && !forms.contains(document.activeElement)) forms.innerHTML = nextForms.innerHTML;
        say('Updated at ' + new Date().toISOString().slice(11, 19) + ' UTC');
      })
      .catch(function () { say('Live updates paused: the dashboard could not be reached.'); })
      .then(function () { busy = false; });
  }
  function schedule(ms) { if (pending === null) pending = setTimeout(refresh, ms); }
  var source = new EventSource(region.getAttribute('data-live'));
  // The list refreshes at most once a second however busy the workers are; an instance follows at once.
  var delay = region.getAttribute('data-state') === 'list' ? 1000 : 150;
  source.addEventListener('workflow', function () { schedule(delay); });
  source.addEventListener('ping', function () { if (region.getAttribute('data-state') === 'unfinished') schedule(0); });
  source.onopen = function () {
    say('Live: this page updates by itself.');
    // What happened between the page's rendering and this (re)connection was not heard: look once.
    schedule(0);
  };
  source.onerror = function () { say('Live updates reconnecting…'); };
})();
`;
