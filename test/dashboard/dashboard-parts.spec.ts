import { describe, expect, it } from 'vitest';
import { resolveDashboardOptions } from '../../src/dashboard/dashboard-options.js';
import { formatDuration } from '../../src/dashboard/format.js';
import { escapeHtml, html, trustedHtml } from '../../src/dashboard/html.js';
import { listUrl, noFilters, parseListQuery, parseUtcTime } from '../../src/dashboard/list-query.js';
import { crossOriginRefusal } from '../../src/dashboard/same-origin.js';

describe('html', () => {
  it('escapes every interpolated value, in content and in attributes, unless it is SafeHtml', () => {
    const value = `"><script>x('1')</script>&`;
    expect(html`<a title="${value}">${value}</a>`.value).toBe(
      '<a title="&quot;&gt;&lt;script&gt;x(&#39;1&#39;)&lt;/script&gt;&amp;">&quot;&gt;&lt;script&gt;x(&#39;1&#39;)&lt;/script&gt;&amp;</a>',
    );
    expect(html`<p>${[html`<b>${'<i>'}</b>`, 2, null, undefined, false]}</p>`.value).toBe('<p><b>&lt;i&gt;</b>2</p>');
    expect(html`${trustedHtml('<hr>')}`.value).toBe('<hr>');
    expect(escapeHtml('a & b')).toBe('a &amp; b');
  });
});

describe('crossOriginRefusal', () => {
  const trusted = ['https://ops.example.com'];
  it('lets same-origin and user-typed requests through, and requests no browser made', () => {
    expect(
      crossOriginRefusal({ 'sec-fetch-site': 'same-origin', origin: 'http://app:3000', host: 'app:3000' }, []),
    ).toBeNull();
    expect(crossOriginRefusal({ 'sec-fetch-site': 'none' }, [])).toBeNull();
    expect(crossOriginRefusal({ origin: 'http://app:3000', host: 'app:3000' }, [])).toBeNull();
    expect(crossOriginRefusal({ host: 'app:3000' }, [])).toBeNull();
    expect(
      crossOriginRefusal(
        { 'sec-fetch-site': 'cross-site', origin: 'https://ops.example.com', host: 'app:3000' },
        trusted,
      ),
    ).toBeNull();
  });
  it('refuses cross-site and same-site requests, other origins, and the opaque origin', () => {
    expect(
      crossOriginRefusal({ 'sec-fetch-site': 'cross-site', origin: 'https://evil.example', host: 'app:3000' }, trusted),
    ).toContain('cross-site');
    expect(crossOriginRefusal({ 'sec-fetch-site': 'same-site', origin: 'https://sub.app', host: 'app' }, [])).toContain(
      'same-site',
    );
    expect(crossOriginRefusal({ origin: 'https://evil.example', host: 'app:3000' }, trusted)).toContain(
      'origin https://evil.example',
    );
    expect(crossOriginRefusal({ origin: 'null', host: 'app:3000' }, [])).toContain('origin null');
    expect(crossOriginRefusal({ origin: 'http://app:3001', host: 'app:3000' }, [])).not.toBeNull();
  });
  it('refuses the plain-http origin of a request that came over https, however it knows', () => {
    expect(crossOriginRefusal({ origin: 'http://app', host: 'app' }, [], true)).toContain('origin http://app');
    expect(
      crossOriginRefusal({ origin: 'http://app', host: 'app', 'x-forwarded-proto': 'HTTPS, http' }, []),
    ).not.toBeNull();
    expect(
      crossOriginRefusal(
        { origin: 'http://app', host: 'app', forwarded: 'for=10.0.0.1;proto="https";host=app, for=10.0.0.2' },
        [],
      ),
    ).not.toBeNull();
    expect(crossOriginRefusal({ origin: 'https://app', host: 'app' }, [], true)).toBeNull();
    expect(crossOriginRefusal({ origin: 'https://app', host: 'app', 'x-forwarded-proto': 'https' }, [])).toBeNull();
    // Otherwise the host alone decides, as before (a proxy in front may label the scheme its own way).
    expect(crossOriginRefusal({ origin: 'https://app', host: 'app', 'x-forwarded-proto': 'http' }, [])).toBeNull();
    expect(crossOriginRefusal({ origin: 'http://app', host: 'app', 'x-forwarded-proto': 'http' }, [])).toBeNull();
  });
});

describe('dashboard options', () => {
  it('fills in the defaults and normalizes the path', () => {
    expect(resolveDashboardOptions({})).toEqual({
      path: '/workflows',
      guard: null,
      warnUnguarded: true,
      readOnly: false,
      trustedOrigins: [],
      pageSize: 50,
    });
    expect(resolveDashboardOptions({ guard: false })).toMatchObject({ guard: null, warnUnguarded: false });
    expect(
      resolveDashboardOptions({ path: 'admin/workflows/', trustedOrigins: ['https://ops.example.com'] }),
    ).toMatchObject({
      path: '/admin/workflows',
      trustedOrigins: ['https://ops.example.com'],
    });
  });
  it('refuses bad options, naming the option and what to pass', () => {
    expect(() => resolveDashboardOptions({ path: '/a b' })).toThrow(
      `invalid path "/a b". Use a URL path such as '/workflows'`,
    );
    expect(() => resolveDashboardOptions({ pageSize: 0 })).toThrow(
      'invalid pageSize 0. Use a whole number from 1 to 500.',
    );
    expect(() => resolveDashboardOptions({ trustedOrigins: ['ops.example.com'] })).toThrow(
      'invalid trustedOrigins entry "ops.example.com"',
    );
    expect(() => resolveDashboardOptions({ trustedOrigins: ['https://ops.example.com/path'] })).toThrow(
      'Use just scheme, host and port',
    );
    expect(() => resolveDashboardOptions({ guard: {} as never })).toThrow('invalid guard');
  });
});

describe('list query', () => {
  it('reads filters, positions and UTC times from the query string', () => {
    const request = parseListQuery({
      status: ['failed', 'failed', 'cancelled'],
      workflow: 'orders',
      version: '2',
      id: 'ord',
      from: '2026-01-02T03:04',
      after: '1700000000000.a.b',
    });
    expect(request.errors).toEqual([]);
    expect(request.options).toEqual({
      status: ['failed', 'cancelled'],
      workflow: 'orders',
      version: 2,
      idPrefix: 'ord',
      createdFrom: Date.UTC(2026, 0, 2, 3, 4),
    });
    expect(request.after).toEqual({ createdAt: 1700000000000, id: 'a.b' });
    expect(listUrl('/w', request.filters, { after: { createdAt: 5, id: 'x&y' } })).toBe(
      '/w?status=failed&status=cancelled&workflow=orders&version=2&id=ord&from=2026-01-02T03%3A04&after=5.x%26y',
    );
    expect(listUrl('/w', noFilters())).toBe('/w');
    expect(parseUtcTime('2026-01-02')).toBe(Date.UTC(2026, 0, 2));
    expect(parseUtcTime('2026-01-02T03:04:05+01:00')).toBe(Date.UTC(2026, 0, 2, 2, 4, 5));
    expect(parseUtcTime('tomorrow')).toBeNull();
  });
  it('formats durations for the timeline', () => {
    expect(
      [350, 4200, 185_000, 7_800_000, 3_600_000, 3 * 86_400_000 + 4 * 3_600_000, 86_400_000].map(formatDuration),
    ).toEqual(['350 ms', '4.2 s', '3 min 5 s', '2 h 10 min', '1 h', '3 d 4 h', '1 d']);
  });
});

describe('the Versions page rows', () => {
  it('names at most five declaring processes a row, escapes what processes recorded, and flags a version only some declare', async () => {
    const { renderVersionsPage } = await import('../../src/dashboard/versions-page.js');
    const { versionRows } = await import('../../src/dashboard/version-counts.js');
    const processes = Array.from({ length: 8 }, (_, i) => ({
      id: `p${i}`,
      owner: i === 0 ? '<b>odd</b>' : `w${i}`,
      host: 'h',
      pid: i,
      declared: [{ workflow: 'orders', version: i < 7 ? 1 : 2 }],
      startedAt: i,
      seenAt: i,
    }));
    const counts = new Map([['orders@1', { workflow: 'orders', version: 1, unfinished: 3 }]]);
    const rows = versionRows(counts, { processes });
    expect(rows.map((row) => [row.version, row.declaredBy.length])).toEqual([
      [2, 1],
      [1, 7],
    ]);
    const text = String(renderVersionsPage({ base: '/w', readOnly: false, rows, processes, cap: 10, capped: false }));
    expect(text).toContain('7 of 8 <span class="muted">(&lt;b&gt;odd&lt;/b&gt;, w1, w2, w3, w4 and 2 more)</span>');
    expect(text).toContain('Only 7 of 8 processes can run these');
    expect(text).not.toContain('<b>odd</b>');
  });
});
