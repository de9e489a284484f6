// The `@nestjs/workflows/testing` entry: the store contract suite and test helpers. It loads no test
// runner itself: the contract suite takes vitest's or Jest's functions when it registers its tests.
export { ManualWorkflowClock } from '../time/manual-workflow-clock.js';
export { workflowStoreContract } from './workflow-store-contract.js';
export type {
  WorkflowContractTestApi,
  WorkflowStoreContractOptions,
  WorkflowStoreHarness,
} from './workflow-store-contract.js';
export { replayHistory, replayStored } from './replay-history.js';
export type { WorkflowReplayApp, WorkflowReplayParts, WorkflowReplayTarget } from './replay-history.js';
export type { WorkflowReplayDivergence, WorkflowReplayReport } from '../engine/history-replay.js';
export type { WorkflowReplayFilter } from '../engine/stored-replays.js';
export type { WorkflowHistory, WorkflowHistorySignal } from '../engine/workflow-history.js';
