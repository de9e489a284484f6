// A Nest app with the encryption scenario's workflows (src/testing/contract/encryption.contract.ts),
// for the tests of payload codecs that run beside the contract suite.
import { Test, type TestingModule } from '@nestjs/testing';
import {
  WorkflowClient,
  WorkflowEvents,
  WorkflowStorage,
  WorkflowsModule,
  WorkflowWorker,
  type WorkflowEvent,
  type WorkflowsModuleOptions,
  type WorkflowStore,
} from '../../src/index.js';
import { ENCRYPTION_WORKFLOWS } from '../../src/testing/contract/encryption.contract.js';
import { ManualWorkflowClock } from '../../src/time/manual-workflow-clock.js';

export interface EncryptionApp {
  module: TestingModule;
  client: WorkflowClient;
  worker: WorkflowWorker;
  storage: WorkflowStorage;
  events: WorkflowEvent[];
  close(): Promise<void>;
}

/** A Nest app on `store` with the given codec options, no background worker, and `clock`. */
export async function encryptionApp(
  store: WorkflowStore,
  clock: ManualWorkflowClock,
  options: WorkflowsModuleOptions = {},
  extra: Array<new (...args: never[]) => unknown> = [],
): Promise<EncryptionApp> {
  const module = await Test.createTestingModule({
    imports: [WorkflowsModule.forRoot({ store, clock, worker: false, ...options })],
    providers: [...ENCRYPTION_WORKFLOWS, ...extra],
  }).compile();
  await module.init();
  const events: WorkflowEvent[] = [];
  module.get(WorkflowEvents).subscribe((event) => events.push(event));
  return {
    module,
    client: module.get(WorkflowClient),
    worker: module.get(WorkflowWorker),
    storage: module.get(WorkflowStorage),
    events,
    close: () => module.close(),
  };
}
