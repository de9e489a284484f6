import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { withReadingSession } from '../storage/reading-session.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { MySqlWorkflowStore } from './mysql-workflow.store.js';

/** A reading session (`nest-workflows export-history`) on a MySQL/MariaDB store: the store's `<schema>_*` tables, which must be migrated already. */
export function withMySqlReading<T>(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[] | null,
  read: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  return withReadingSession(new MySqlWorkflowStore({ executor, schema, migrate: false }), codecs, read);
}
