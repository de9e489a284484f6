import { beforeEach, describe } from 'vitest';
import { InMemoryWorkflowStore } from '../../src/index.js';
import { parallelWaitsTests } from '../support/parallel-waits-scenario.js';

describe('parallel waits of one signal name and key (in-memory store)', () => {
  let store = new InMemoryWorkflowStore();
  beforeEach(() => void (store = new InMemoryWorkflowStore()));
  parallelWaitsTests(() => store);
});
