import type { InMemoryWorkflowStore } from '../../../src/memory/in-memory-workflow.store.js';

/** The ids of the instances a schedule started, oldest first. */
export async function runsOf(store: InMemoryWorkflowStore, scheduleId: string): Promise<string[]> {
  return (await store.list({ scheduleId, limit: 1000, offset: 0 })).map((i) => i.id);
}
