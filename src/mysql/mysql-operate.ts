import type { WorkflowPayloadCodec } from '../codec/workflow-payload-codec.js';
import type { SqlExecutor } from '../sql/sql-executor.js';
import { withOperatorStorage } from '../storage/operator-storage.js';
import type { WorkflowStorage } from '../storage/workflow-storage.js';
import { MySqlWorkflowStore } from './mysql-workflow.store.js';

/** An operator's tool on a MySQL/MariaDB store (`nest-workflows list --mysql`...): its `<schema>_*` tables, which must be migrated already. */
export function operateMysql<T>(
  executor: SqlExecutor,
  schema: string,
  codecs: readonly WorkflowPayloadCodec[] | null,
  fn: (storage: WorkflowStorage) => Promise<T>,
): Promise<T> {
  return withOperatorStorage(new MySqlWorkflowStore({ executor, schema, migrate: false }), codecs, fn);
}
