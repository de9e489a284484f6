import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { withReadingSession } from '../storage/reading-session.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { PostgresWorkflowStore } from './postgres-workflow.store.js';

/** A reading session (`nest-workflows export-history`) on a PostgreSQL store: the store on `schema`, which must be migrated already. */
export function withPostgresReading<T>(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[] | null,
  read: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  return withReadingSession(new PostgresWorkflowStore({ executor, schema, migrate: false }), codecs, read);
}
