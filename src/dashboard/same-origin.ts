/** The request headers the cross-origin check reads (lower-case names, as Node gives them). */
export type RequestHeaders = Record<string, string | string[] | undefined>;

function header(headers: RequestHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Whether an action request may come from where it comes from (CSRF protection for the dashboard's
 * POST forms). A browser says where a request comes from: `Sec-Fetch-Site` in current browsers,
 * else `Origin` on every POST. So:
 * - `Sec-Fetch-Site: same-origin` (or `none`: typed by the user) passes; `same-site` and
 *   `cross-site` pass only when `Origin` is one of `trustedOrigins`;
 * - otherwise an `Origin` passes when its host is the request's `Host` (or it is trusted), and,
 *   when the request came over https (`secure`, or the first `X-Forwarded-Proto` / `Forwarded`
 *   proto says so), when its scheme is https too: a plain-http page on the same host is another
 *   origin, and one a network attacker can forge;
 * - a request with neither header did not come from a browser's form or script (no browser
 *   that can be lured into posting leaves both out), so it passes: CSRF needs a browser.
 * Returns `null` when it passes, else the reason.
 */
export function crossOriginRefusal(
  headers: RequestHeaders,
  trustedOrigins: readonly string[],
  secure = false,
): string | null {
  const site = header(headers, 'sec-fetch-site');
  const origin = header(headers, 'origin');
  if (origin !== undefined && trustedOrigins.includes(origin)) return null;
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return null;
    return `a ${site} request (Sec-Fetch-Site: ${site}${origin ? `, Origin: ${origin}` : ''}) may not act on workflows`;
  }
  if (origin === undefined) return null;
  const host = header(headers, 'host');
  let parsed: URL | null;
  try {
    parsed = origin === 'null' ? null : new URL(origin);
  } catch {
    parsed = null;
  }
  // Only a refusal depends on the forwarded headers, so a client that forges them harms only itself.
  const downgraded = parsed?.protocol === 'http:' && (secure || forwardedProto(headers) === 'https');
  if (parsed !== null && !downgraded && host !== undefined && parsed.host === host.toLowerCase()) return null;
  return `a request from origin ${origin} to host ${host ?? '(none)'} may not act on workflows`;
}

/** The scheme the client used as the first proxy saw it (`X-Forwarded-Proto`, else `Forwarded`'s `proto`), lower-case; `undefined` when neither says. */
function forwardedProto(headers: RequestHeaders): string | undefined {
  const xfp = header(headers, 'x-forwarded-proto');
  if (xfp !== undefined) return xfp.split(',')[0]!.trim().toLowerCase();
  const forwarded = header(headers, 'forwarded');
  const proto = forwarded?.split(',')[0]!.match(/(?:^|;)\s*proto=("?)([A-Za-z][A-Za-z0-9+.-]*)\1/i);
  return proto?.[2]!.toLowerCase();
}
