import type { WorkflowInterrupt } from '../errors/workflow-interrupt.js';
import type { WorkflowJournalLimitError } from '../errors/workflow-journal-limit.error.js';
import type { WorkflowNonDeterminismError } from '../errors/workflow-non-determinism.error.js';

/** How `run()` itself ended. */
export type RunEnd =
  | { kind: 'completed'; value: unknown }
  | { kind: 'failed'; error: unknown }
  | { kind: 'suspended' }
  | { kind: 'interrupted'; reason: WorkflowInterrupt['reason'] };

/** What the engine concludes from: read once, when `run()` has ended. */
export interface ExecutionOutcome {
  run: RunEnd;
  /** Why the execution was stopped from outside or by a limit, if it was (terminate and a lost lease win over the others). */
  interrupt: WorkflowInterrupt['reason'] | null;
  /** A programming error that fails the instance without compensating (a determinism violation). */
  fatal: WorkflowNonDeterminismError | null;
  /** Set when the journal reached its limit. */
  journalLimitError: WorkflowJournalLimitError | null;
  /** What the store threw, when a write failed (the execution then stopped; the lease lapses). */
  storeError: unknown;
  cancelRequested: boolean;
  terminateRequested: boolean;
}
