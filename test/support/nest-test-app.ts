import { Test, type TestingModule } from '@nestjs/testing';
import type { Provider } from '@nestjs/common';
import {
  WorkflowClient,
  WorkflowEvents,
  WorkflowsModule,
  WorkflowWorker,
  InMemoryWorkflowStore,
  type WorkflowEvent,
  type WorkflowsModuleOptions,
} from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';

export interface TestApp {
  module: TestingModule;
  client: WorkflowClient;
  worker: WorkflowWorker;
  clock: ManualWorkflowClock;
  store: InMemoryWorkflowStore;
  events: WorkflowEvent[];
  close(): Promise<void>;
}

/** A testing module with the in-memory store, a manual clock and no background worker. */
export async function createTestApp(providers: Provider[], options: WorkflowsModuleOptions = {}): Promise<TestApp> {
  const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
  const store = (options.store as InMemoryWorkflowStore | undefined) ?? new InMemoryWorkflowStore();
  const module = await Test.createTestingModule({
    imports: [WorkflowsModule.forRoot({ clock, worker: false, ...options, store })],
    providers,
  }).compile();
  await module.init();
  const events: WorkflowEvent[] = [];
  module.get(WorkflowEvents).subscribe((event) => events.push(event));
  return {
    module,
    client: module.get(WorkflowClient),
    worker: module.get(WorkflowWorker),
    clock,
    store,
    events,
    close: () => module.close(),
  };
}
