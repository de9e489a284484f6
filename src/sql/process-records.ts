import type { SqlExecutor } from './sql-executor.js';
import { fromJson, toNumber, type SqlRow } from './workflow-rows.js';
import type { WorkflowDeclaredVersion, WorkflowProcessRecord } from '../storage/workflow-store-processes.js';

/**
 * A dialect's statements of the process records (`WorkflowProcessStore`), their parameters in the
 * order given. `record`: id, owner, host, pid, declared (JSON text), started at, seen at, upserted
 * whole. `removeStale`: seen before. `remove`: id. `live`: seen since, ordered by `started_at`, then `id`.
 */
export interface ProcessStatements {
  record: string;
  removeStale: string;
  remove: string;
  live: string;
}

/** The process records of a SQL store, each part one statement on the store's pool. */
export class SqlProcesses {
  constructor(private readonly sql: ProcessStatements) {}

  async record(executor: SqlExecutor, record: WorkflowProcessRecord, staleBefore: number): Promise<void> {
    const { id, owner, host, pid, declared, startedAt, seenAt } = record;
    await executor.query(this.sql.record, [id, owner, host, pid, JSON.stringify(declared), startedAt, seenAt]);
    await executor.query(this.sql.removeStale, [staleBefore]);
  }

  async remove(executor: SqlExecutor, id: string): Promise<boolean> {
    return (await executor.query(this.sql.remove, [id])).rowCount > 0;
  }

  async live(executor: SqlExecutor, seenSince: number): Promise<WorkflowProcessRecord[]> {
    return (await executor.query(this.sql.live, [seenSince])).rows.map(toProcessRecord);
  }
}

function toProcessRecord(row: SqlRow): WorkflowProcessRecord {
  return {
    id: String(row.id),
    owner: String(row.owner),
    host: String(row.host),
    pid: toNumber(row.pid),
    declared: fromJson(row.declared) as WorkflowDeclaredVersion[],
    startedAt: toNumber(row.started_at),
    seenAt: toNumber(row.seen_at),
  };
}
