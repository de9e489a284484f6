import { Inject, Logger, Module, type DynamicModule, type OnApplicationBootstrap } from '@nestjs/common';
import { createDashboardController } from './dashboard.controller.js';
import { DASHBOARD_OPTIONS } from './dashboard.constants.js';
import { DashboardLive } from './dashboard-live.js';
import {
  resolveDashboardOptions,
  type ResolvedDashboardOptions,
  type WorkflowsDashboardOptions,
} from './dashboard-options.js';
import { DashboardService } from './dashboard.service.js';

/**
 * A dashboard served by the application itself (Express or Fastify): the instances with filters
 * and keyset paging, each instance with its journal as a live timeline, and actions (signal,
 * cancel, terminate, retry, delete) behind the guard you give. Server-rendered HTML with a small
 * script of its own; nothing is fetched from elsewhere. Needs `WorkflowsModule` (global by default).
 *
 * @example
 * imports: [WorkflowsModule.forRoot({ ... }), WorkflowsDashboardModule.forRoot({ path: '/ops/workflows', guard: AdminGuard })]
 */
@Module({})
export class WorkflowsDashboardModule implements OnApplicationBootstrap {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  /** Its docs say to give it a guard: one mounted without (and not declined with `guard: false`) says so once. */
  onApplicationBootstrap(): void {
    if (!this.options.warnUnguarded) return;
    new Logger('WorkflowsDashboard').warn(
      `WorkflowsDashboardModule is served at ${this.options.path} without a guard: unless a global guard covers it, ` +
        'anyone who can reach the app can read every instance (inputs, outputs, errors) and cancel, terminate, retry ' +
        'or delete it. Pass `guard: YourGuard`, or `guard: false` when a global guard or the network already protects it.',
    );
  }

  static forRoot(options: WorkflowsDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options);
    return {
      module: WorkflowsDashboardModule,
      imports: options.imports ?? [],
      controllers: [createDashboardController(resolved.path, resolved.guard)],
      providers: [{ provide: DASHBOARD_OPTIONS, useValue: resolved }, DashboardService, DashboardLive],
    };
  }
}
