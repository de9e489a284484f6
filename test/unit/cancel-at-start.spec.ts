import { beforeEach, describe } from 'vitest';
import { InMemoryWorkflowStore } from '../../src/index.js';
import { cancelAtStartTests } from '../support/cancel-at-start-scenario.js';

describe('a cancel or terminate between the claim and the first step (in-memory store)', () => {
  let store = new InMemoryWorkflowStore();
  beforeEach(() => void (store = new InMemoryWorkflowStore()));
  cancelAtStartTests(() => store);
});
