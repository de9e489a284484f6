import { shownValue } from '../errors/shown-value.js';
import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';

/** `WorkflowsDashboardModule.forRoot()`'s options. */
export interface WorkflowsDashboardOptions {
  /** Where the pages are served, under the app's global prefix if it has one. Default `'/workflows'`. */
  path?: string;
  /**
   * A guard every dashboard route runs behind (pages, live updates and actions), as
   * `@UseGuards()` applies it: a class (resolved in this module, so its dependencies must be
   * global or come from `imports`) or an instance. The app's global guards apply as well.
   * Default: none, and startup logs a warning saying so: without a global guard anyone who can
   * reach the app sees the dashboard and can act on every instance. `false`: no guard of its own,
   * on purpose (a global guard or the network protects it), and no warning.
   */
  guard?: Type<CanActivate> | CanActivate | false;
  /** Modules the guard's dependencies come from. Default `[]`. */
  imports?: ModuleMetadata['imports'];
  /** Shows everything and changes nothing: no action forms, and every action request gets 403. Default `false`. */
  readOnly?: boolean;
  /**
   * Origins besides the page's own host that may post actions, such as a proxy's public origin
   * (`'https://ops.example.com'`). Default `[]`: only same-origin requests may act.
   */
  trustedOrigins?: string[];
  /** Instances per list page. Default 50, at most 500. */
  pageSize?: number;
}

/** The options with their defaults, checked. */
export interface ResolvedDashboardOptions {
  path: string;
  guard: Type<CanActivate> | CanActivate | null;
  /** No guard was given and none was declined (`guard: false`): startup warns. */
  warnUnguarded: boolean;
  readOnly: boolean;
  trustedOrigins: string[];
  pageSize: number;
}

/** Checks `forRoot()`'s options and fills in the defaults; a bad one throws a `TypeError` naming it. */
export function resolveDashboardOptions(options: WorkflowsDashboardOptions): ResolvedDashboardOptions {
  const path = options.path ?? '/workflows';
  if (typeof path !== 'string' || !/^\/?[A-Za-z0-9._~!$&'()*+,;=:@/-]*$/.test(path) || path.includes('//')) {
    throw new TypeError(
      `WorkflowsDashboardModule: invalid path ${JSON.stringify(path)}. Use a URL path such as '/workflows' or '/admin/workflows'.`,
    );
  }
  const normalized = `/${path.replace(/^\/+|\/+$/g, '')}`;
  const guard = options.guard === false ? null : (options.guard ?? null);
  if (guard !== null && typeof guard !== 'function' && typeof (guard as CanActivate).canActivate !== 'function') {
    throw new TypeError(
      'WorkflowsDashboardModule: invalid guard. Pass a guard class or an object with canActivate(context).',
    );
  }
  const trustedOrigins = (options.trustedOrigins ?? []).map((origin) => {
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      throw new TypeError(
        `WorkflowsDashboardModule: invalid trustedOrigins entry ${JSON.stringify(origin)}. Use an origin such as 'https://ops.example.com'.`,
      );
    }
    if (url.origin === 'null' || url.origin !== origin.replace(/\/$/, '')) {
      throw new TypeError(
        `WorkflowsDashboardModule: invalid trustedOrigins entry ${JSON.stringify(origin)}. Use just scheme, host and port, such as 'https://ops.example.com'.`,
      );
    }
    return url.origin;
  });
  const pageSize = options.pageSize ?? 50;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 500) {
    throw new TypeError(
      `WorkflowsDashboardModule: invalid pageSize ${shownValue(pageSize)}. Use a whole number from 1 to 500.`,
    );
  }
  return {
    path: normalized,
    guard,
    warnUnguarded: options.guard === undefined,
    readOnly: options.readOnly === true,
    trustedOrigins,
    pageSize,
  };
}
