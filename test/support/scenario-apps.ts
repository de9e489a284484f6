// The apps a store scenario's tests run in (test/support/*-scenario.ts): one Nest testing module
// per call on the test's store, with a manual clock and no polling worker (the tests drain it), and
// what each test changed undone after it: the store methods it wrapped (`restores`), the modules
// it opened.
import { afterEach } from 'vitest';
import { Test } from '@nestjs/testing';
import type { Provider } from '@nestjs/common';
import { WorkflowClient, WorkflowsModule, WorkflowWorker, type WorkflowStore } from '../../src/index.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';

export interface ScenarioApp {
  client: WorkflowClient;
  worker: WorkflowWorker;
  clock: ManualWorkflowClock;
}

/** Registers the clean-up (call inside the scenario's registration) and returns the app factory. */
export function scenarioApps(
  storeOf: () => WorkflowStore,
  providers: Provider[],
): { app(): Promise<ScenarioApp>; restores: Array<() => void> } {
  const restores: Array<() => void> = [];
  const closes: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const restore of restores.splice(0)) restore();
    for (const close of closes.splice(0)) await close();
  });
  return {
    restores,
    async app() {
      const clock = new ManualWorkflowClock(new Date('2026-01-01T00:00:00Z'));
      const module = await Test.createTestingModule({
        imports: [WorkflowsModule.forRoot({ store: storeOf(), clock, worker: false })],
        providers,
      }).compile();
      await module.init();
      closes.push(() => module.close());
      return { client: module.get(WorkflowClient), worker: module.get(WorkflowWorker), clock };
    },
  };
}
