import { InMemoryWorkflowStore } from '../../../src/memory/in-memory-workflow.store.js';
import type { WorkflowScheduleEvent } from '../../../src/events/workflow-event.js';
import { ManualWorkflowClock } from '../../../src/time/manual-workflow-clock.js';
import { WorkflowScheduler } from '../../../src/scheduler/workflow-scheduler.js';
import { ScheduleAdmin } from '../../../src/scheduler/schedule-admin.js';
import { WorkflowStorage } from '../../../src/storage/workflow-storage.js';
import type { ScheduledWorkflow } from '../../../src/scheduler/schedule-starts.js';

/** A scheduler on plain objects: the in-memory store, a manual clock, workflows by name. */
export function schedulerHarness(
  options: {
    start?: string;
    store?: InMemoryWorkflowStore;
    storage?: InMemoryWorkflowStore;
    clock?: ManualWorkflowClock;
    owner?: string;
    workflows?: string[];
    leaseDuration?: number;
  } = {},
) {
  const clock = options.clock ?? new ManualWorkflowClock(new Date(options.start ?? '2026-01-01T00:00:00Z'));
  const store = options.store ?? new InMemoryWorkflowStore();
  // The storage layer over the store as this process sees it (no codec: each call reaches the store as it is).
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

/** The ids of the instances a schedule started, oldest first. */
export async function runsOf(store: InMemoryWorkflowStore, scheduleId: string): Promise<string[]> {
  return (await store.list({ scheduleId, limit: 1000, offset: 0 })).map((i) => i.id);
}
