import { Logger, type Provider } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { WorkflowClient } from './client/workflow-client.js';
import { WorkflowEngine, type EngineLogger } from './engine/workflow-engine.js';
import { looksLikeStoreError } from './engine/execution-reports.js';
import { WorkflowEvents } from './events/workflow-events.js';
import { WorkflowExplorer } from './registry/workflow-explorer.js';
import { WorkflowRegistry } from './registry/workflow-registry.js';
import { WorkflowRuntime } from './runtime/workflow-runtime.js';
import { WorkflowScheduler } from './scheduler/workflow-scheduler.js';
import { WorkflowSchedulerService } from './scheduler/workflow-scheduler.service.js';
import { WorkflowSchedules } from './client/workflow-schedules.js';
import { StoreOutage } from './runtime/store-outage.js';
import { WorkflowWakeUps } from './runtime/workflow-wake-ups.js';
import { createWorkflowStorage } from './create-workflow-storage.js';
import { PayloadCodecChain } from './codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from './codec/workflow-payload-codec.js';
import { UNREADABLE_RETRY_DELAY, WorkflowStorage } from './storage/workflow-storage.js';
import { WorkflowWorker } from './worker/workflow-worker.service.js';
import { WORKFLOWS_OBSERVER, WORKFLOWS_RESOLVED_OPTIONS } from './workflows.constants.js';
import type { WorkflowObserver } from './engine/workflow-observer.js';
import { createWorkflowObserver } from './telemetry/create-workflow-observer.js';
import type { ResolvedWorkflowsOptions } from './workflows-module-options.js';

/** The Nest logger the framework-free parts report through. */
function workflowsLogger(): EngineLogger {
  const logger = new Logger('Workflows');
  return {
    warn: (message) => logger.warn(message),
    error: (message, error) =>
      error === undefined ? logger.error(message) : logger.error(message, error instanceof Error ? error.stack : error),
  };
}

/** `logger`, except that errors that look like the database being away go to the outage account (logged once per outage). */
function outageAware(logger: EngineLogger, outage: StoreOutage, during: string): EngineLogger {
  return {
    warn: logger.warn,
    error: (message, error) =>
      looksLikeStoreError(error) ? outage.failed(error, during) : logger.error(message, error),
  };
}

/** The configured codecs as one chain (a class is created by Nest, so it can inject a key service); `null` for none. */
async function createCodecs(
  options: ResolvedWorkflowsOptions,
  moduleRef: ModuleRef,
): Promise<PayloadCodecChain | null> {
  if (options.codec.length === 0) return null;
  const codecs: WorkflowPayloadCodec[] = [];
  for (const given of options.codec) codecs.push(typeof given === 'function' ? await moduleRef.create(given) : given);
  return new PayloadCodecChain({ codecs, allowUnencoded: !options.requireEncodedPayloads });
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
      const logger = workflowsLogger();
      return createWorkflowStorage(store, {
        allowInMemoryStorage: options.allowInMemoryStorage,
        startup: {
          retryAttempts: options.retryAttempts,
          retryDelay: options.retryDelay,
          log: (message) => logger.warn(message),
        },
        codecs: await createCodecs(options, moduleRef),
        onUnreadable: (subject, error) =>
          logger.error(
            `${subject} holds a payload no configured codec can read; ` +
              `handed back, it is tried again in ${UNREADABLE_RETRY_DELAY / 1000}s. ${error.message}`,
          ),
      });
    },
    inject: [WORKFLOWS_RESOLVED_OPTIONS, ModuleRef],
  },
  {
    provide: WorkflowRegistry,
    useFactory: (options: ResolvedWorkflowsOptions) => new WorkflowRegistry(options.retry),
    inject: [WORKFLOWS_RESOLVED_OPTIONS],
  },
  { provide: WorkflowEvents, useFactory: () => new WorkflowEvents() },
  {
    provide: WORKFLOWS_OBSERVER,
    useFactory: (options: ResolvedWorkflowsOptions, storage: WorkflowStorage) =>
      createWorkflowObserver(options.telemetry, storage, options.clock, options.codec.length > 0),
    inject: [WORKFLOWS_RESOLVED_OPTIONS, WorkflowStorage],
  },
  { provide: WorkflowWakeUps, useFactory: () => new WorkflowWakeUps() },
  { provide: StoreOutage, useFactory: () => new StoreOutage(workflowsLogger()) },
  {
    provide: WorkflowEngine,
    useFactory: (
      storage: WorkflowStorage,
      registry: WorkflowRegistry,
      events: WorkflowEvents,
      wakeUps: WorkflowWakeUps,
      outage: StoreOutage,
      options: ResolvedWorkflowsOptions,
      observer: WorkflowObserver,
    ) =>
      new WorkflowEngine({
        storage,
        registry,
        clock: options.clock,
        journalLimits: options.journal,
        logger: workflowsLogger(),
        onStoreError: (error, during) => outage.failed(error, during),
        logFailures: options.logFailures,
        emit: (event) => events.emit(event),
        observed: () => events.observed,
        kick: () => wakeUps.kick(),
        observer,
      }),
    inject: [
      WorkflowStorage,
      WorkflowRegistry,
      WorkflowEvents,
      WorkflowWakeUps,
      StoreOutage,
      WORKFLOWS_RESOLVED_OPTIONS,
      WORKFLOWS_OBSERVER,
    ],
  },
  {
    provide: WorkflowRuntime,
    useFactory: (
      engine: WorkflowEngine,
      storage: WorkflowStorage,
      registry: WorkflowRegistry,
      wakeUps: WorkflowWakeUps,
      outage: StoreOutage,
      options: ResolvedWorkflowsOptions,
    ) =>
      new WorkflowRuntime({
        engine,
        storage,
        registry,
        wakeUps,
        outage,
        clock: options.clock,
        worker: options.worker,
        logger: workflowsLogger(),
      }),
    inject: [
      WorkflowEngine,
      WorkflowStorage,
      WorkflowRegistry,
      WorkflowWakeUps,
      StoreOutage,
      WORKFLOWS_RESOLVED_OPTIONS,
    ],
  },
  {
    provide: WorkflowScheduler,
    useFactory: (
      storage: WorkflowStorage,
      registry: WorkflowRegistry,
      events: WorkflowEvents,
      runtime: WorkflowRuntime,
      wakeUps: WorkflowWakeUps,
      outage: StoreOutage,
      options: ResolvedWorkflowsOptions,
    ) =>
      new WorkflowScheduler({
        storage,
        workflows: {
          names: () => registry.latest().map((workflow) => workflow.name),
          newest: (name) => registry.latest().find((workflow) => workflow.name === name),
          declaredSchedules: () => registry.latest().flatMap((workflow) => workflow.schedules),
        },
        clock: options.clock,
        // The schedules' leases show the same owner as the instances' leases of this process.
        owner: runtime.id,
        leaseDuration: options.worker.leaseDuration,
        pollInterval: options.worker.pollInterval,
        emit: (event) => events.emit(event),
        started: () => wakeUps.kick(),
        cancelled: (id) => runtime.cancelAccepted(id, false),
        logger: outageAware(workflowsLogger(), outage, 'running schedules'),
      }),
    inject: [
      WorkflowStorage,
      WorkflowRegistry,
      WorkflowEvents,
      WorkflowRuntime,
      WorkflowWakeUps,
      StoreOutage,
      WORKFLOWS_RESOLVED_OPTIONS,
    ],
  },
  WorkflowExplorer,
  WorkflowSchedulerService,
  WorkflowWorker,
  WorkflowClient,
  WorkflowSchedules,
];
