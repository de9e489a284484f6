import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { withOperatorStorage } from '../storage/operator-storage.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { PostgresWorkflowStore } from './postgres-workflow.store.js';

/** An operator's tool on a PostgreSQL store (`nest-workflows list --postgres`...): the store on `schema`, which must be migrated already. */
export function operatePostgres<T>(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[] | null,
  fn: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  return withOperatorStorage(new PostgresWorkflowStore({ executor, schema, migrate: false }), codecs, fn);
}
