// The root entry: the module, decorator, client, context types, signals, errors, the in-memory
// store and clocks. Nothing here loads a database driver.
export { WorkflowsModule } from './workflows.module.js';
export type {
  ResolvedWorkflowsOptions,
  WorkflowsModuleAsyncOptions,
  WorkflowsModuleOptions,
  WorkflowsOptionsFactory,
  WorkflowWorkerOptions,
} from './workflows-module-options.js';
export { WORKFLOWS_MODULE_OPTIONS } from './workflows.constants.js';

export { Workflow, WORKFLOW_METADATA } from './decorators/workflow.decorator.js';
export type { WorkflowOptions } from './decorators/workflow-options.js';
export type { WorkflowScheduleOptions } from './scheduler/declared-schedule.js';
export type {
  WorkflowScheduleCatchup,
  WorkflowScheduleOverlap,
  WorkflowScheduleRules,
} from './scheduler/schedule-spec.js';
export type { WorkflowScheduleInfo } from './scheduler/schedule-state.js';

export type {
  WorkflowChildHandle,
  WorkflowChildOptions,
  WorkflowContext,
  WorkflowDefinition,
  WorkflowStepOptions,
  WorkflowTransactionOptions,
  WorkflowStepRun,
  WorkflowStream,
  WorkflowCallbackOptions,
  WorkflowCompensationRun,
  WorkflowWaitOptions,
} from './engine/workflow-context.js';
export type { WorkflowRetry, WorkflowRetryOptions } from './engine/retry-policy.js';
export type { WorkflowJournalLimits } from './engine/journal-limits.js';

export { WorkflowClient } from './client/workflow-client.js';
export type {
  WorkflowReadStreamOptions,
  WorkflowStreamDiscard,
  WorkflowStreamItem,
  WorkflowStreamValue,
} from './client/stream-reader.js';
export { WorkflowCallbacksModule, type WorkflowCallbacksOptions } from './http/workflow-callbacks.module.js';
export { toServerSentEvents, afterLastEventId, type WorkflowServerSentEvent } from './client/server-sent-events.js';
export { DEFAULT_STREAM_LIMITS, type WorkflowStreamLimitOptions } from './storage/stream-limits.js';
export { WorkflowSchedules } from './client/workflow-schedules.js';
export type { WorkflowScheduleDefinition, WorkflowScheduleListOptions } from './client/workflow-schedules.js';
export type { WorkflowListOptions } from './client/list-request.js';
export type { WorkflowBulkFilter, WorkflowBulkOptions, WorkflowBulkResult } from './client/bulk-request.js';
export type { WorkflowSignalOptions } from './client/signal-request.js';
export type { WorkflowStartOptions } from './client/start-request.js';
export type { WorkflowDebounceOptions } from './client/debounce-option.js';
export type { WorkflowHandle } from './client/workflow-handle.js';
export { WorkflowWorker } from './worker/workflow-worker.service.js';
export { WorkflowEvents } from './events/workflow-events.js';
export type {
  WorkflowEvent,
  WorkflowEventType,
  WorkflowInstanceEvent,
  WorkflowScheduleEvent,
} from './events/workflow-event.js';
export { WorkflowRegistry } from './registry/workflow-registry.js';

export { WorkflowSignal } from './signals/workflow-signal.js';

export { WorkflowError } from './errors/workflow.error.js';
export { WorkflowNotFoundError } from './errors/workflow-not-found.error.js';
export { UnknownWorkflowError } from './errors/unknown-workflow.error.js';
export { WorkflowAlreadyStartedError } from './errors/workflow-already-started.error.js';
export { WorkflowNonDeterminismError } from './errors/workflow-non-determinism.error.js';
export { WorkflowCancelledError } from './errors/workflow-cancelled.error.js';
export { WorkflowTerminatedError } from './errors/workflow-terminated.error.js';
export { WorkflowTimeoutError } from './errors/workflow-timeout.error.js';
export { WorkflowSignalTimeoutError } from './errors/workflow-signal-timeout.error.js';
export { WorkflowJournalLimitError } from './errors/workflow-journal-limit.error.js';
export { WorkflowStreamLimitError } from './errors/workflow-stream-limit.error.js';
export { WorkflowStreamClosedError } from './errors/workflow-stream-closed.error.js';
export { WorkflowCallbackTokenError } from './errors/workflow-callback-token.error.js';
export { WorkflowCallbackTimeoutError } from './errors/workflow-callback-timeout.error.js';
export type { WorkflowCallbackCompletion } from './client/callback-completion.js';
export { WorkflowChildFailedError } from './errors/workflow-child-failed.error.js';
export { WorkflowInvalidStateError } from './errors/workflow-invalid-state.error.js';
export { WorkflowDebounceError } from './errors/workflow-debounce.error.js';
export { WorkflowSchemaError } from './errors/workflow-schema.error.js';
export { WorkflowStoreStartupError, type WorkflowStoreStartupProblem } from './errors/workflow-store-startup.error.js';
export { NonRetryableError } from './errors/non-retryable.error.js';
export { WorkflowClientClosedError } from './errors/workflow-client-closed.error.js';
export { isWorkflowInputError } from './errors/workflow-input-error.js';
export { WorkflowExceptionFilter, workflowErrorStatus } from './http/workflow-exception.filter.js';
export { WorkflowPayloadError } from './errors/workflow-payload.error.js';
export { WorkflowPatchError } from './errors/workflow-patch.error.js';
export { WorkflowHistoryError } from './errors/workflow-history.error.js';
export type { WorkflowHistory, WorkflowHistoryInstance, WorkflowHistorySignal } from './engine/workflow-history.js';

export { InMemoryWorkflowStore } from './memory/in-memory-workflow.store.js';
export { WorkflowStorage } from './storage/workflow-storage.js';
export type * from './storage/workflow-store.js';
export type * from './storage/workflow-instance.js';
export type { WorkflowPayloadCodec } from './codec/workflow-payload-codec.js';
export type {
  WorkflowReencryptCursor,
  WorkflowReencryptOptions,
  WorkflowReencryptProgress,
  WorkflowReencryptResult,
} from './storage/payload-reencryption.js';
export { AesGcmPayloadCodec } from './codec/aes-gcm-payload.codec.js';
export type { AesGcmPayloadCodecOptions } from './codec/aes-gcm-payload.codec.js';

export { systemClock } from './time/workflow-clock.js';
export { ManualWorkflowClock } from './time/manual-workflow-clock.js';
export type { WorkflowClock } from './time/workflow-clock.js';
export { parseDuration } from './time/duration.js';
export type { Duration } from './time/duration.js';
