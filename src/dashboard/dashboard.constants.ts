/** The resolved `WorkflowsDashboardModule.forRoot()` options. */
export const DASHBOARD_OPTIONS = Symbol('workflows:dashboard-options');
