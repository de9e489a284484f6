// @nestjs/workflows/dashboard: pages served by the application itself. The root entry loads none of it.
export { WorkflowsDashboardModule } from './workflows-dashboard.module.js';
export type { WorkflowsDashboardOptions } from './dashboard-options.js';
