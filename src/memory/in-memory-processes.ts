import { compareIds } from './in-memory-list.js';
import { plainCopy as copy } from '../storage/plain-copy.js';
import type { WorkflowProcessRecord } from '../storage/workflow-store-processes.js';

/** `InMemoryWorkflowStore`'s process records (`WorkflowProcessStore`), by id. */
export class InMemoryProcesses {
  private readonly rows = new Map<string, WorkflowProcessRecord>();

  record(record: WorkflowProcessRecord, staleBefore: number): void {
    this.rows.set(record.id, copy(record));
    for (const [id, row] of this.rows) if (row.seenAt < staleBefore) this.rows.delete(id);
  }

  remove(id: string): boolean {
    return this.rows.delete(id);
  }

  live(seenSince: number): WorkflowProcessRecord[] {
    return [...this.rows.values()]
      .filter((row) => row.seenAt >= seenSince)
      .sort((a, b) => a.startedAt - b.startedAt || compareIds(a.id, b.id))
      .map((row) => copy(row));
  }
}
