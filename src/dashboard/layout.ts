import { html, type HtmlValue, type SafeHtml } from './html.js';
import { listPath } from './list-query.js';

export interface PageShell {
  /** The dashboard's base URL path (the app's prefix and the module's `path`). */
  base: string;
  title: string;
  readOnly: boolean;
  /** Which nav entry is the current page. */
  current: 'instances' | 'instance' | 'schedules' | 'signals' | 'versions';
}

/** A whole page: the landmarks, the nav, and the dashboard's own stylesheet and script. */
export function page(shell: PageShell, body: HtmlValue): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${shell.title} · Workflows</title>
<link rel="stylesheet" href="${shell.base}/assets/dashboard.css">
<script src="${shell.base}/assets/dashboard.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a href="${listPath(shell.base)}">Workflows</a>
<nav aria-label="Dashboard"><ul>
<li><a href="${listPath(shell.base)}"${shell.current === 'instances' ? html` aria-current="page"` : ''}>Instances</a></li>
<li><a href="${shell.base}/schedules"${shell.current === 'schedules' ? html` aria-current="page"` : ''}>Schedules</a></li>
<li><a href="${shell.base}/signals"${shell.current === 'signals' ? html` aria-current="page"` : ''}>Signals</a></li>
<li><a href="${shell.base}/versions"${shell.current === 'versions' ? html` aria-current="page"` : ''}>Versions</a></li>
</ul></nav>
<span class="mode">${shell.readOnly ? 'Read-only' : ''}</span>
</header>
<main id="main" tabindex="-1">
${body}
</main>
</body>
</html>
`;
}

/** A status as a badge: the word itself is shown, so color is never the only cue. */
export function statusBadge(status: string): SafeHtml {
  return html`<span class="status status-${status.replace(/[^a-z_]/g, '')}">${status.replace('_', ' ')}</span>`;
}

/** A one-line notice: `ok` after an action, `error` when something was refused or wrong. */
export function notice(kind: 'ok' | 'error', text: HtmlValue): SafeHtml {
  return html`<p class="notice ${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>`;
}
