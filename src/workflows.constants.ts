/** The token of the options given to `forRoot()` or returned by `forRootAsync()`'s factory. */
export const WORKFLOWS_MODULE_OPTIONS = Symbol('workflows:module-options');

/** The token of the options with every default applied (`ResolvedWorkflowsOptions`). */
export const WORKFLOWS_RESOLVED_OPTIONS = Symbol('workflows:resolved-options');

/** The engine's, worker's and client's telemetry hooks (`WorkflowObserver`). */
export const WORKFLOWS_OBSERVER = Symbol('workflows:observer');
