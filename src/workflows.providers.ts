import { Logger, type Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { WorkflowClient } from './client/workflow-client.js';
import { WorkflowEngine, type EngineLogger } from './engine/workflow-engine.js';
import { WorkflowEvents } from './events/workflow-events.js';
import { WorkflowExplorer } from './registry/workflow-explorer.js';
import { WorkflowRegistry } from './registry/workflow-registry.js';
import { WorkflowRuntime } from './runtime/workflow-runtime.js';
import { WorkflowWakeUps } from './runtime/workflow-wake-ups.js';
import { createWorkflowStorage } from './storage/create-workflow-storage.js';
import { WorkflowStorage } from './storage/workflow-storage.js';
import { WorkflowWorker } from './worker/workflow-worker.service.js';
import { WORKFLOWS_RESOLVED_OPTIONS } from './workflows.constants.js';
import type { ResolvedWorkflowsOptions } from './workflows-module-options.js';

/** The Nest logger the framework-free parts report through. */
function workflowsLogger(): EngineLogger {
  const logger = new Logger('Workflows');
  return {
    warn: (message) => logger.warn(message),
    error: (message, error) => logger.error(message, error instanceof Error ? error.stack : error),
  };
}

/**
 * The module's providers once its options are resolved. The framework-free parts (storage, engine,
 * runtime) are built here by factories, so Nest's container owns and orders them like any provider;
 * the injectable services (`WorkflowClient`, `WorkflowWorker`) are thin shells over them.
 */
export const WORKFLOWS_PROVIDERS: Provider[] = [
  {
    provide: WorkflowStorage,
    useFactory: async (options: ResolvedWorkflowsOptions, moduleRef: ModuleRef) => {
      const given = options.store;
      const store = typeof given === 'function' ? await moduleRef.create(given) : given;
      return createWorkflowStorage(store, { allowInMemoryStorage: options.allowInMemoryStorage });
    },
    inject: [WORKFLOWS_RESOLVED_OPTIONS, ModuleRef],
  },
  {
    provide: WorkflowRegistry,
    useFactory: (options: ResolvedWorkflowsOptions) => new WorkflowRegistry(options.retry),
    inject: [WORKFLOWS_RESOLVED_OPTIONS],
  },
  { provide: WorkflowEvents, useFactory: () => new WorkflowEvents() },
  { provide: WorkflowWakeUps, useFactory: () => new WorkflowWakeUps() },
  {
    provide: WorkflowEngine,
    useFactory: (storage: WorkflowStorage, registry: WorkflowRegistry, events: WorkflowEvents, wakeUps: WorkflowWakeUps, options: ResolvedWorkflowsOptions) =>
      new WorkflowEngine({
        storage,
        registry,
        clock: options.clock,
        journalLimits: options.journal,
        logger: workflowsLogger(),
        emit: (event) => events.emit(event),
        kick: () => wakeUps.kick(),
      }),
    inject: [WorkflowStorage, WorkflowRegistry, WorkflowEvents, WorkflowWakeUps, WORKFLOWS_RESOLVED_OPTIONS],
  },
  {
    provide: WorkflowRuntime,
    useFactory: (engine: WorkflowEngine, storage: WorkflowStorage, registry: WorkflowRegistry, wakeUps: WorkflowWakeUps, options: ResolvedWorkflowsOptions) =>
      new WorkflowRuntime({ engine, storage, registry, wakeUps, clock: options.clock, worker: options.worker, logger: workflowsLogger() }),
    inject: [WorkflowEngine, WorkflowStorage, WorkflowRegistry, WorkflowWakeUps, WORKFLOWS_RESOLVED_OPTIONS],
  },
  WorkflowExplorer,
  WorkflowWorker,
  WorkflowClient,
];
