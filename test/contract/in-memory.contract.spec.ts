import * as vitest from 'vitest';
import { InMemoryWorkflowStore } from '../../src/memory/in-memory-workflow.store.js';
import { workflowStoreContract } from '../../src/testing/workflow-store-contract.js';
import { dumpInMemoryStore } from '../support/in-memory-dump.js';

// A fresh store per test; the suite also holds for one store shared by every test.
workflowStoreContract('in-memory', () => ({ store: new InMemoryWorkflowStore() }), {
  test: vitest,
  emptyStore: () => {
    const store = new InMemoryWorkflowStore();
    return { store, dump: async () => dumpInMemoryStore(store) };
  },
});
