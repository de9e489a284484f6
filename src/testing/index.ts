// The `@nestjs/workflows/testing` entry: the store contract suite and test helpers. It imports
// vitest (for the contract suite), so only test code should import it.
export { ManualWorkflowClock } from '../time/manual-workflow-clock.js';
export { workflowStoreContract } from './workflow-store-contract.js';
export type { WorkflowStoreHarness } from './workflow-store-contract.js';
