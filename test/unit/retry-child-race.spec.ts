import { describe } from 'vitest';
import { InMemoryWorkflowStore } from '../../src/index.js';
import { retryChildRaceTests } from '../support/retry-child-race-scenario.js';

describe('retry() of a parent racing a purge() or delete() of its child (in-memory)', () => {
  retryChildRaceTests({ open: async () => new InMemoryWorkflowStore(), close: async () => undefined });
});
