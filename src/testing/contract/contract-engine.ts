import { WorkflowClient } from '../../client/workflow-client.js';
import { WorkflowSchedules } from '../../client/workflow-schedules.js';
import { PayloadCodecChain } from '../../codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../../codec/workflow-payload-codec.js';
import { NO_OBSERVER } from '../../engine/workflow-observer.js';
import { WorkflowEngine, type EngineLogger } from '../../engine/workflow-engine.js';
import type { WorkflowEvent } from '../../events/workflow-event.js';
import { WorkflowEvents } from '../../events/workflow-events.js';
import { WorkflowRegistry, type WorkflowClassLike } from '../../registry/workflow-registry.js';
import { WorkflowRuntime } from '../../runtime/workflow-runtime.js';
import { WorkflowWakeUps } from '../../runtime/workflow-wake-ups.js';
import { WorkflowScheduler } from '../../scheduler/workflow-scheduler.js';
import { WorkflowStorage } from '../../storage/workflow-storage.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import { ManualWorkflowClock } from '../../time/manual-workflow-clock.js';
import { resolveWorkflowsOptions } from '../../workflows-module-options.js';
import type { ContractSuite } from './contract-suite.js';

/**
 * One process's engine on the store under test, wired by hand as the module's providers wire it
 * (no Nest container): the scenarios of the contract suite drive it. The background loop is off;
 * `drain()` runs what is due at the manual clock's time.
 */
export interface ContractEngine {
  readonly client: WorkflowClient;
  /** `WorkflowSchedules` of this engine. */
  readonly schedules: WorkflowSchedules;
  /** This engine's scheduler, its loop off: `drainSchedules()` runs it. */
  readonly scheduler: WorkflowScheduler;
  readonly storage: WorkflowStorage;
  readonly clock: ManualWorkflowClock;
  /** Every event the engine emitted, in order. */
  readonly events: WorkflowEvent[];
  /** What the engine logged (kept out of the test's output). */
  readonly logs: string[];
  /** Runs every instance due now, again and again until none is left (`WorkflowWorker.drain()` without schedules). */
  drain(options?: { limit?: number }): Promise<number>;
  /** Starts every schedule occurrence due now (`WorkflowScheduler.drain()`); resolves to the instances started. */
  drainSchedules(): Promise<number>;
  /** Stops the engine as the module's shutdown does; the store stays open (the harness closes it). */
  close(): Promise<void>;
}

export interface ContractEngineOptions {
  /** `@Workflow` classes, each created with no constructor arguments. */
  workflows: Array<new () => object>;
  /** Default: a new `ManualWorkflowClock` at 2026-01-01T00:00:00Z. */
  clock?: ManualWorkflowClock;
  /** The module's `codec` option: instances only (there is no container to create a class). */
  codec?: WorkflowPayloadCodec | WorkflowPayloadCodec[];
  requireEncodedPayloads?: boolean;
}

/** The engine over `store`, as `WorkflowsModule.forRoot({ store, clock, worker: false, ... })` builds it. */
export function createContractEngine(store: WorkflowStore, options: ContractEngineOptions): ContractEngine {
  const clock = options.clock ?? new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
  const resolved = resolveWorkflowsOptions({
    store,
    clock,
    worker: false,
    codec: options.codec,
    requireEncodedPayloads: options.requireEncodedPayloads,
  });
  const logs: string[] = [];
  const logger: EngineLogger = {
    warn: (message) => logs.push(message),
    error: (message, error) => logs.push(error === undefined ? message : `${message} ${String(error)}`),
  };
  const codecs = resolved.codec as WorkflowPayloadCodec[];
  const storage = new WorkflowStorage(store, {
    codecs:
      codecs.length === 0 ? null : new PayloadCodecChain({ codecs, allowUnencoded: !resolved.requireEncodedPayloads }),
    onUnreadable: (subject, error) => logger.error(`${subject} holds a payload no configured codec can read.`, error),
  });
  const registry = new WorkflowRegistry(resolved.retry);
  for (const workflow of options.workflows) registry.register(workflow as WorkflowClassLike, new workflow());
  registry.markCollected();
  const events = new WorkflowEvents();
  const emitted: WorkflowEvent[] = [];
  const subscription = events.subscribe((event) => emitted.push(event));
  const wakeUps = new WorkflowWakeUps();
  const engine = new WorkflowEngine({
    storage,
    registry,
    clock,
    journalLimits: resolved.journal,
    logger,
    logFailures: resolved.logFailures,
    emit: (event) => events.emit(event),
    observed: () => events.observed,
    kick: () => wakeUps.kick(),
    observer: NO_OBSERVER,
  });
  const runtime = new WorkflowRuntime({
    engine,
    storage,
    registry,
    wakeUps,
    clock,
    worker: resolved.worker,
    logger,
  });
  const client = new WorkflowClient(storage, registry, runtime, events, resolved, NO_OBSERVER);
  const scheduler = new WorkflowScheduler({
    storage,
    workflows: {
      names: () => registry.latest().map((workflow) => workflow.name),
      newest: (name) => registry.latest().find((workflow) => workflow.name === name),
      declaredSchedules: () => [],
    },
    clock,
    owner: runtime.id,
    leaseDuration: resolved.worker.leaseDuration,
    pollInterval: resolved.worker.pollInterval,
    emit: (event) => events.emit(event),
    started: () => wakeUps.kick(),
    cancelled: (id) => runtime.cancelAccepted(id, false),
    logger,
  });
  const schedules = new WorkflowSchedules(storage, registry, events, runtime, wakeUps, scheduler, client, resolved);
  return {
    client,
    schedules,
    scheduler,
    storage,
    clock,
    events: emitted,
    logs,
    drain: (drainOptions) => runtime.drain(drainOptions),
    drainSchedules: () => scheduler.drain(),
    async close() {
      await scheduler.stop();
      client.onModuleDestroy();
      await runtime.shutdown();
      subscription.unsubscribe();
    },
  };
}

/**
 * Engines on the test's store for the tests of one area, and what each test changed undone after
 * it: the engines it opened are closed and the store methods it wrapped put back (`onEnd`).
 * Call it inside the area's `describe`.
 */
export function contractEngines(suite: ContractSuite): {
  /** An engine on the test's store, or on `store` (a wrapper of it). */
  open(options: ContractEngineOptions, store?: WorkflowStore): ContractEngine;
  onEnd(undo: () => unknown): void;
} {
  const ends: Array<() => unknown> = [];
  suite.test.afterEach(async () => {
    for (const end of ends.splice(0).reverse()) await end();
  });
  return {
    open(options, store = suite.store) {
      const engine = createContractEngine(store, options);
      ends.push(() => engine.close());
      return engine;
    },
    onEnd: (undo) => void ends.push(undo),
  };
}
