// The one place the unit specs build the engine's parts: storage, registry, engine, runtime, client,
// worker and scheduler, wired by hand as src/workflows.providers.ts wires them for Nest, with the
// lifecycle the module runs (store init and discovery, bootstrap, shutdown) called in its order.
// No Nest container, no testing module: a constructor that changes is adapted here, once.
import { WorkflowClient } from '../../../src/client/workflow-client.js';
import { WorkflowSchedules } from '../../../src/client/workflow-schedules.js';
import { PayloadCodecChain } from '../../../src/codec/payload-codec-chain.js';
import type { WorkflowPayloadCodec } from '../../../src/codec/workflow-payload-codec.js';
import { createWorkflowStorage } from '../../../src/create-workflow-storage.js';
import { looksLikeStoreError } from '../../../src/engine/execution-reports.js';
import { DEFAULT_JOURNAL_LIMITS } from '../../../src/engine/journal-limits.js';
import { DEFAULT_RETRY } from '../../../src/engine/retry-policy.js';
import type { WorkflowContext } from '../../../src/engine/workflow-context.js';
import {
  WorkflowEngine,
  type EngineLogger,
  type EngineRegistry,
  type RunnableWorkflow,
} from '../../../src/engine/workflow-engine.js';
import type { WorkflowEvent, WorkflowScheduleEvent } from '../../../src/events/workflow-event.js';
import { WorkflowEvents } from '../../../src/events/workflow-events.js';
import { InMemoryWorkflowStore } from '../../../src/memory/in-memory-workflow.store.js';
import { WorkflowRegistry, type WorkflowClassLike } from '../../../src/registry/workflow-registry.js';
import { StoreOutage } from '../../../src/runtime/store-outage.js';
import { WorkflowRuntime } from '../../../src/runtime/workflow-runtime.js';
import { WorkflowWakeUps } from '../../../src/runtime/workflow-wake-ups.js';
import { ScheduleAdmin } from '../../../src/scheduler/schedule-admin.js';
import type { ScheduledWorkflow } from '../../../src/scheduler/schedule-starts.js';
import { WorkflowScheduler } from '../../../src/scheduler/workflow-scheduler.js';
import { WorkflowSchedulerService } from '../../../src/scheduler/workflow-scheduler.service.js';
import { WorkflowStorage } from '../../../src/storage/workflow-storage.js';
import type { WorkflowStore } from '../../../src/storage/workflow-store.js';
import { createWorkflowObserver } from '../../../src/telemetry/create-workflow-observer.js';
import { ManualWorkflowClock } from '../../../src/time/manual-workflow-clock.js';
import type { WorkflowClock } from '../../../src/time/workflow-clock.js';
import { WorkflowWorker } from '../../../src/worker/workflow-worker.service.js';
import { resolveWorkflowsOptions, type WorkflowsModuleOptions } from '../../../src/workflows-module-options.js';

/** Where the manual clock of every app and part below starts, unless a test gives its own clock. */
const HARNESS_START = new Date('2026-01-01T00:00:00Z');

/** One message the parts logged, as the engine's logger received it. */
export interface LoggedMessage {
  level: 'warn' | 'error';
  message: string;
  /** The error logged with the message, when one was. */
  error?: unknown;
}

/** A `@Workflow` class built with no arguments, or an instance given what it depends on. */
export type WorkflowProvider = WorkflowClassLike | object;

export interface EngineAppOptions<S extends WorkflowStore, C extends WorkflowClock> extends Omit<
  WorkflowsModuleOptions,
  'store' | 'clock' | 'codec'
> {
  /**
   * The application's workflows, default none; or a function that makes them given the client, for
   * workflows that take it in their constructor (as they would have it injected).
   */
  workflows?: WorkflowProvider[] | ((injectables: { client: WorkflowClient }) => WorkflowProvider[]);
  /** Default: a new `InMemoryWorkflowStore`. */
  store?: S;
  /** Default: a `ManualWorkflowClock` at `HARNESS_START`. */
  clock?: C;
  codec?: WorkflowPayloadCodec | WorkflowPayloadCodec[];
}

/** An application of the engine, as a Nest app with `WorkflowsModule` would hold it, without Nest. */
export interface EngineApp<
  S extends WorkflowStore = InMemoryWorkflowStore,
  C extends WorkflowClock = ManualWorkflowClock,
> {
  client: WorkflowClient;
  worker: WorkflowWorker;
  schedules: WorkflowSchedules;
  store: S;
  clock: C;
  /** The app's workflows and its storage layer: what `replayHistory()` and `replayStored()` take as parts. */
  replayParts: { registry: WorkflowRegistry; storage: WorkflowStorage };
  /** Every event emitted since the app was built, in order. */
  events: WorkflowEvent[];
  /** Every message logged since the app was built, in order. */
  logs: LoggedMessage[];
  /** The messages logged at `level`. */
  logged(level: LoggedMessage['level']): string[];
  /** What closing the Nest application does: results stop waiting, the worker and scheduler stop, the store closes. */
  close(): Promise<void>;
}

function collectingLogger(logs: LoggedMessage[]): EngineLogger {
  return {
    warn: (message) => void logs.push({ level: 'warn', message }),
    error: (message, error) =>
      void logs.push(error === undefined ? { level: 'error', message } : { level: 'error', message, error }),
  };
}

/** `logger`, except that errors that look like the database being away go to the outage account. */
function outageAware(logger: EngineLogger, outage: StoreOutage, during: string): EngineLogger {
  return {
    warn: logger.warn,
    error: (message, error) =>
      looksLikeStoreError(error) ? outage.failed(error, during) : logger.error(message, error),
  };
}

/**
 * Builds, initializes and bootstraps an application: options are the module's (validated by the
 * same function, with the same defaults), except that the background worker is off unless
 * `worker` says otherwise, and the clock is a `ManualWorkflowClock` unless one is given.
 */
export async function createEngineApp<
  S extends WorkflowStore = InMemoryWorkflowStore,
  C extends WorkflowClock = ManualWorkflowClock,
>(options: EngineAppOptions<S, C> = {}): Promise<EngineApp<S, C>> {
  const { workflows = [], ...moduleOptions } = options;
  const store = options.store ?? (new InMemoryWorkflowStore() as WorkflowStore as S);
  const clock = options.clock ?? (new ManualWorkflowClock(HARNESS_START) as WorkflowClock as C);
  const resolved = resolveWorkflowsOptions({ worker: false, ...moduleOptions, store, clock });
  const logs: LoggedMessage[] = [];
  const logger = collectingLogger(logs);
  const codecs =
    resolved.codec.length === 0
      ? null
      : new PayloadCodecChain({
          codecs: resolved.codec as WorkflowPayloadCodec[],
          allowUnencoded: !resolved.requireEncodedPayloads,
        });
  const storage = createWorkflowStorage(store, {
    allowInMemoryStorage: resolved.allowInMemoryStorage,
    startup: {
      retryAttempts: resolved.retryAttempts,
      retryDelay: resolved.retryDelay,
      log: (message) => logger.warn(message),
    },
    codecs,
    onUnreadable: (subject, error) => logger.error(`${subject} holds a payload no configured codec can read`, error),
  });
  const registry = new WorkflowRegistry(resolved.retry);
  const events = new WorkflowEvents();
  const emitted: WorkflowEvent[] = [];
  events.subscribe((event) => emitted.push(event));
  const observer = await createWorkflowObserver(resolved.telemetry, storage, clock, resolved.codec.length > 0);
  const wakeUps = new WorkflowWakeUps();
  const outage = new StoreOutage(logger);
  const engine = new WorkflowEngine({
    storage,
    registry,
    clock,
    journalLimits: resolved.journal,
    logger,
    onStoreError: (error, during) => outage.failed(error, during),
    logFailures: resolved.logFailures,
    emit: (event) => events.emit(event),
    observed: () => events.observed,
    kick: () => wakeUps.kick(),
    observer,
  });
  const runtime = new WorkflowRuntime({
    engine,
    storage,
    registry,
    wakeUps,
    outage,
    clock,
    worker: resolved.worker,
    logger,
  });
  const scheduler = new WorkflowScheduler({
    storage,
    workflows: {
      names: () => registry.latest().map((workflow) => workflow.name),
      newest: (name) => registry.latest().find((workflow) => workflow.name === name),
      declaredSchedules: () => registry.latest().flatMap((workflow) => workflow.schedules),
    },
    clock,
    owner: runtime.id,
    leaseDuration: resolved.worker.leaseDuration,
    pollInterval: resolved.worker.pollInterval,
    emit: (event) => events.emit(event),
    started: () => wakeUps.kick(),
    cancelled: (id) => runtime.cancelAccepted(id, false),
    logger: outageAware(logger, outage, 'running schedules'),
  });
  const schedulerService = new WorkflowSchedulerService(scheduler, resolved);
  const worker = new WorkflowWorker(runtime, schedulerService, registry);
  const client = new WorkflowClient(storage, registry, runtime, events, resolved, observer);
  const schedules = new WorkflowSchedules(storage, registry, events, runtime, wakeUps, scheduler, client, resolved);

  const close = async () => {
    client.onModuleDestroy();
    await Promise.all([schedulerService.beforeApplicationShutdown(), worker.beforeApplicationShutdown()]);
    await Promise.all([
      storage.onApplicationShutdown(),
      schedulerService.onApplicationShutdown(),
      worker.onApplicationShutdown(),
    ]);
  };

  try {
    // Init: the explorer registers what discovery would find, and the store gets ready.
    for (const provided of typeof workflows === 'function' ? workflows({ client }) : workflows) {
      const instance = typeof provided === 'function' ? new (provided as new () => object)() : provided;
      registry.register(instance.constructor as WorkflowClassLike, instance);
    }
    registry.markCollected();
    await storage.onModuleInit();
    await schedulerService.onApplicationBootstrap();
    await worker.onApplicationBootstrap();
  } catch (error) {
    // As a test closes a module whose init() failed: nothing it started is left running.
    await close().catch(() => undefined);
    throw error;
  }

  return {
    client,
    worker,
    schedules,
    store,
    clock,
    replayParts: { registry, storage },
    events: emitted,
    logs,
    logged: (level) => logs.filter((entry) => entry.level === level).map((entry) => entry.message),
    close,
  };
}

/** A workflow of the plain engine: a `run` function, registered by name at version 1. */
export type WorkflowBody = (ctx: WorkflowContext, input: unknown) => Promise<unknown>;

/** A registry of plain workflow objects, by name (version 1): no decorators, no discovery. */
function plainRegistry(workflows: Record<string, WorkflowBody>): EngineRegistry {
  const runnable = new Map<string, RunnableWorkflow>(
    Object.entries(workflows).map(([name, run]) => [
      name,
      { name, version: 1, instance: { run }, retry: DEFAULT_RETRY },
    ]),
  );
  return {
    get: (name, version) => (version === 1 ? runnable.get(name) : undefined),
    versions: () => [...runnable.keys()].map((name) => ({ name, version: 1 })),
    limits: () => [],
    rateLimits: () => [],
    resolveChild: (workflow) => {
      if (typeof workflow !== 'string' || !runnable.has(workflow)) throw new Error(`No workflow ${String(workflow)}`);
      return { name: workflow, version: 1, timeout: null, priority: 0 };
    },
  };
}

/** What `createEngineParts()` takes: the store (shared by several processes' parts), a clock, workflows by name. */
export interface EnginePartsOptions {
  store: WorkflowStore;
  clock: ManualWorkflowClock;
  workflows: Record<string, WorkflowBody>;
  /** This process's worker id. Default `worker-1`. */
  workerId?: string;
  /** Default 30 s. */
  leaseDuration?: number;
  /** Whether the registry says every workflow has limits (so starts are never leased at once). Default false. */
  limited?: boolean;
  /** The runtime's loop: off by default (`enabled: false`), concurrency 4, a poll every second. */
  worker?: { enabled?: boolean; concurrency?: number; pollInterval?: number };
}

/**
 * One process's core on plain objects: storage over the store, an engine over a registry of plain
 * functions, and a runtime (the leased loop) with its background loop off; `start()` creates an
 * instance as another process would.
 */
export function createEngineParts(options: EnginePartsOptions) {
  const { store, clock } = options;
  const storage = new WorkflowStorage(store);
  const events: WorkflowEvent[] = [];
  const logs: string[] = [];
  const logger = { warn: (message: string) => logs.push(message), error: (message: string) => logs.push(message) };
  const wakeUps = new WorkflowWakeUps();
  const engine = new WorkflowEngine({
    storage,
    registry: plainRegistry(options.workflows),
    clock,
    journalLimits: DEFAULT_JOURNAL_LIMITS,
    logger,
    emit: (event) => events.push(event as WorkflowEvent),
    kick: () => wakeUps.kick(),
  });
  const runtime = new WorkflowRuntime({
    engine,
    storage,
    registry: { isLimited: () => options.limited ?? false },
    wakeUps,
    clock,
    worker: {
      enabled: options.worker?.enabled ?? false,
      id: options.workerId ?? 'worker-1',
      concurrency: options.worker?.concurrency ?? 4,
      pollInterval: options.worker?.pollInterval ?? 1_000,
      leaseDuration: options.leaseDuration ?? 30_000,
      heartbeatInterval: 10_000,
      shutdownTimeout: 1_000,
    },
    logger,
  });
  const start = (id: string, workflow: string, input: unknown = null) =>
    storage.create({ id, workflow, version: 1, input, deadline: null, now: clock.now() });
  return { storage, engine, runtime, wakeUps, events, logs, start };
}

/** What `createSchedulerParts()` takes; every option has a default. */
export interface SchedulerPartsOptions {
  /** Where the manual clock starts (an ISO time), when no clock is given. */
  start?: string;
  store?: InMemoryWorkflowStore;
  /** The store as this process's storage layer reaches it (a proxy over `store` that fails or waits). Default `store`. */
  storage?: InMemoryWorkflowStore;
  clock?: ManualWorkflowClock;
  /** Shown as the schedules' `leaseOwner`. Default `test-scheduler`. */
  owner?: string;
  /** The workflows this process declares, each at version 2. Default `reports` and `cleanup`. */
  workflows?: string[];
  /** Default 30 s. */
  leaseDuration?: number;
}

/** A scheduler and the schedules' operations on plain objects: the in-memory store, a manual clock, workflows by name. */
export function createSchedulerParts(options: SchedulerPartsOptions = {}) {
  const clock = options.clock ?? new ManualWorkflowClock(new Date(options.start ?? HARNESS_START.toISOString()));
  const store = options.store ?? new InMemoryWorkflowStore();
  // No codec: each call reaches the store as it is.
  const storage = new WorkflowStorage(options.storage ?? store);
  const events: WorkflowScheduleEvent[] = [];
  const errors: unknown[] = [];
  const names = options.workflows ?? ['reports', 'cleanup'];
  const workflows = new Map<string, ScheduledWorkflow>(
    names.map((name) => [name, { name, version: 2, timeout: null, priority: 0 }]),
  );
  const scheduler = new WorkflowScheduler({
    storage,
    workflows: {
      names: () => [...workflows.keys()],
      newest: (name) => workflows.get(name),
      declaredSchedules: () => [],
    },
    clock,
    owner: options.owner ?? 'test-scheduler',
    leaseDuration: options.leaseDuration ?? 30_000,
    pollInterval: 1_000,
    emit: (event) => events.push(event),
    started: () => undefined,
    cancelled: () => undefined,
    logger: { error: (message, error) => errors.push([message, error]) },
  });
  const admin = new ScheduleAdmin({
    storage,
    workflow: (name) => {
      const found = workflows.get(name);
      if (!found) throw new Error(`unknown workflow ${name}`);
      return found;
    },
    declares: (name) => workflows.has(name),
    clock,
    changed: () => scheduler.kick(),
    emit: (event) => events.push(event),
    started: () => undefined,
    cancelled: () => undefined,
  });
  return { clock, store, scheduler, admin, events, errors };
}

/** The storage over `store` alone, for a unit test of one runtime part that takes it (the process heartbeat). */
export function createStorage(store: WorkflowStore): WorkflowStorage {
  return new WorkflowStorage(store);
}
