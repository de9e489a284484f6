import { describe } from 'vitest';
import { InMemoryWorkflowStore } from '../../src/index.js';
import { terminateSlotsTests } from '../support/terminate-slots-scenario.js';

describe('a terminate does not wait for a concurrency slot or a rate window (in-memory)', () => {
  terminateSlotsTests({ open: async () => new InMemoryWorkflowStore(), close: async () => undefined });
});
